// Generate: synthetic job traces from seeded, documented distributions.
#include "plan/generator.h"

#include <cmath>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fabric/validation.h"
#include "plan/summary.h"

namespace vipu::plan {
namespace {

// Uniform in [0, 1) from 53 bits: the same on every platform.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// Index drawn from cumulative weights.
size_t Draw(const std::vector<double>& cumulative, std::mt19937_64& rng) {
  const double u = Uniform(rng) * cumulative.back();
  size_t i = 0;
  while (i + 1 < cumulative.size() && cumulative[i] <= u) ++i;
  return i;
}

}  // namespace

absl::StatusOr<Trace> Generate(const GeneratorOptions& o) {
  auto bad = [](std::string m) {
    return absl::InvalidArgumentError(absl::StrCat("generate: ", m));
  };
  if (o.jobs == 0) return bad("jobs: must be at least 1");
  if (o.pod_ipus == 0 || !fabric::IsPowerOfTwo(o.pod_ipus)) {
    return bad(absl::StrCat("pod-ipus: must be a power of two, got ", o.pod_ipus));
  }
  const uint32_t max_ipus = o.max_ipus ? o.max_ipus : std::max<uint32_t>(1, o.pod_ipus / 4);
  if (!fabric::IsPowerOfTwo(max_ipus) || max_ipus > o.pod_ipus) {
    return bad(absl::StrCat("max-ipus: must be a power of two up to the pod's ", o.pod_ipus,
                            ", got ", max_ipus));
  }
  if (!(o.load > 0) || !std::isfinite(o.load)) return bad("load: must be > 0");
  if (!(o.min_run_s >= 1) || !(o.max_run_s >= o.min_run_s) || !std::isfinite(o.max_run_s)) {
    return bad("runs: need 1 <= min-run <= max-run seconds");
  }
  if (o.users == 0) return bad("users: must be at least 1");
  if (!(o.span_s >= 0) || !std::isfinite(o.span_s)) return bad("span: must be >= 0 seconds");

  std::mt19937_64 rng(o.seed);
  std::vector<double> size_cumulative, user_cumulative;
  double mean_size = 0, total = 0;
  for (uint32_t k = 0; (1u << k) <= max_ipus; ++k) {
    const double weight = std::pow(2.0, -0.5 * k);
    total += weight;
    size_cumulative.push_back(total);
    mean_size += weight * (1u << k);
  }
  mean_size /= total;
  for (uint32_t i = 1; i <= o.users; ++i) {
    user_cumulative.push_back((user_cumulative.empty() ? 0 : user_cumulative.back()) + 1.0 / i);
  }
  const double mean_run = o.max_run_s > o.min_run_s
                              ? (o.max_run_s - o.min_run_s) / std::log(o.max_run_s / o.min_run_s)
                              : o.min_run_s;
  const double rate =
      o.span_s > 0 ? o.jobs / o.span_s : o.load * o.pod_ipus / (mean_size * mean_run);

  Trace trace;
  trace.source = absl::StrCat("generated(seed=", o.seed, ")");
  trace.jobs.reserve(o.jobs);
  double t = 0;
  for (uint64_t n = 1; n <= o.jobs; ++n) {
    t += -std::log1p(-Uniform(rng)) / rate;
    TraceJob job;
    job.id = absl::StrCat("j", n);
    job.user = absl::StrCat("u", Draw(user_cumulative, rng) + 1);
    job.submit = std::floor(t);
    const uint32_t k = static_cast<uint32_t>(Draw(size_cumulative, rng));
    job.ipus = 1u << k;
    if (k >= 2 && Uniform(rng) < 0.1) {
      const uint32_t lo = (1u << (k - 1)) + 1;
      job.ipus = lo + static_cast<uint32_t>(Uniform(rng) * ((1u << k) - lo));
    }
    job.run = std::round(o.min_run_s * std::pow(o.max_run_s / o.min_run_s, Uniform(rng)));
    job.requested = std::ceil(job.run * (1 + 2 * Uniform(rng)) / 60) * 60;
    trace.jobs.push_back(std::move(job));
  }
  return trace;
}

std::string TraceCsv(const Trace& trace) {
  std::string out = "id,user,submit,ipus,duration,requested\n";
  for (const TraceJob& j : trace.jobs) {
    absl::StrAppend(&out, j.id, ",", j.user, ",", FormatNumber(j.submit), ",", j.ipus, ",",
                    FormatNumber(j.run), ",", j.requested > 0 ? FormatNumber(j.requested) : "",
                    "\n");
  }
  return out;
}

std::string TraceSwf(const Trace& trace, uint32_t pod_ipus) {
  std::string out =
      absl::StrCat("; Version: 2.2\n; Computer: ", trace.source, "\n; MaxProcs: ", pod_ipus, "\n");
  for (size_t i = 0; i < trace.jobs.size(); ++i) {
    const TraceJob& j = trace.jobs[i];
    std::string user;
    for (char c : j.user) {
      if (c >= '0' && c <= '9') user.push_back(c);
    }
    // 1 job, 2 submit, 3 wait, 4 run, 5 procs, 6 cpu, 7 memory, 8 requested
    // procs, 9 requested time, 10 requested memory, 11 status, 12 user,
    // 13 group, 14 executable, 15 queue, 16 partition, 17 preceding job,
    // 18 think time.
    absl::StrAppend(&out, i + 1, " ", FormatNumber(j.submit), " -1 ", FormatNumber(j.run), " ",
                    j.ipus, " -1 -1 ", j.ipus, " ",
                    j.requested > 0 ? FormatNumber(j.requested) : "-1", " -1 1 ",
                    user.empty() ? "-1" : user, " -1 -1 1 -1 -1 -1\n");
  }
  return out;
}

}  // namespace vipu::plan
