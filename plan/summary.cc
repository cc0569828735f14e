// Summarise: a replay's figures from its jobs, and summary.json.
#include "plan/summary.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/json_writer.h"

namespace vipu::plan {

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p * static_cast<double>(values.size()));
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(index, values.size() - 1)];
}

Summary Summarise(const Trace& trace, const ReplayResult& result, const std::string& pod,
                  uint32_t pod_ipus, const ReplayOptions& options) {
  Summary s;
  s.trace = trace.source;
  s.pod = pod;
  s.pod_ipus = pod_ipus;
  s.policy = std::string(PolicyName(options.policy));
  s.seed = options.seed;
  s.jobs = trace.jobs.size();
  s.rounded = result.rounded;
  s.skipped = trace.skipped;
  s.requeues = result.requeues;
  s.machine_failures = result.machine_failures;
  s.lost_ipu_hours = result.lost_ipu_s / 3600;
  s.killed_at_limit = result.killed_at_limit;
  s.killed_at_limit_ipu_hours = result.killed_at_limit_ipu_s / 3600;
  s.machine_mtbf_hours = options.faults.machine_mtbf_hours;
  s.repair_hours = options.faults.repair_hours;
  s.fragmentation = result.fragmentation;
  s.blocked_s = result.blocked_s;
  s.events = result.events;
  if (result.estimated_by_run == 0 && result.estimated_by_requested == 0) {
    s.backfill_estimate = "no jobs";
  } else if (result.estimated_by_run == 0) {
    s.backfill_estimate = "requested";
  } else if (result.estimated_by_requested == 0) {
    s.backfill_estimate = "run time";
  } else {
    s.backfill_estimate = absl::StrCat("requested for ", result.estimated_by_requested,
                                       " jobs, run time for ", result.estimated_by_run);
  }
  std::vector<double> waits;
  double ipu_s = 0, slowdown = 0;
  bool any_submit = false;
  for (size_t j = 0; j < trace.jobs.size(); ++j) {
    const JobOutcome& o = result.jobs[j];
    if (!any_submit || trace.jobs[j].submit < s.first_submit) s.first_submit = trace.jobs[j].submit;
    any_submit = true;
    switch (o.status) {
      case JobStatus::kDone:
      case JobStatus::kKilledAtLimit:
        break;
      case JobStatus::kRefused:
        ++s.refused;
        continue;
      case JobStatus::kTooBig:
        ++s.too_big;
        continue;
      case JobStatus::kModelRefused:
        ++s.model_refused;
        continue;
    }
    if (o.status == JobStatus::kDone) ++s.done;
    const double wait = o.start - trace.jobs[j].submit;
    const double run = o.end - o.start;
    waits.push_back(wait);
    ipu_s += run * o.size;
    slowdown += std::max(1.0, (wait + run) / std::max(run, kSlowdownTau));
    s.last_end = std::max(s.last_end, o.end);
  }
  s.makespan_s = s.done ? s.last_end - s.first_submit : 0;
  s.utilisation = s.makespan_s > 0 ? ipu_s / (pod_ipus * s.makespan_s) : 0;
  if (!waits.empty()) {
    double sum = 0;
    for (double w : waits) sum += w;
    s.wait_mean_s = sum / waits.size();
    s.bounded_slowdown_mean = slowdown / waits.size();
  }
  s.wait_p50_s = Percentile(waits, 0.50);
  s.wait_p95_s = Percentile(waits, 0.95);
  s.wait_p99_s = Percentile(waits, 0.99);
  s.wait_max_s = waits.empty() ? 0 : *std::max_element(waits.begin(), waits.end());
  return s;
}

std::string FormatNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, v);
  if (ec != std::errc()) return "null";
  return std::string(buffer, end);
}

std::string SummaryJson(const Summary& s) {
  // Numbers are written exactly (JsonWriter keeps 6 digits): a reader
  // recomputing them from jobs.csv compares like with like.
  std::string out = "{";
  auto key = [&](const char* k) {
    absl::StrAppend(&out, out.size() > 1 ? "," : "", JsonQuote(k), ":");
  };
  auto text = [&](const char* k, const std::string& v) {
    key(k);
    out += JsonQuote(v);
  };
  auto num = [&](const char* k, double v) {
    key(k);
    out += FormatNumber(v);
  };
  auto count = [&](const char* k, uint64_t v) {
    key(k);
    absl::StrAppend(&out, v);
  };
  text("trace", s.trace);
  text("pod", s.pod);
  count("pod_ipus", s.pod_ipus);
  text("policy", s.policy);
  count("seed", s.seed);
  count("jobs", s.jobs);
  count("done", s.done);
  count("refused", s.refused);
  count("too_big", s.too_big);
  count("model_refused", s.model_refused);
  count("rounded", s.rounded);
  key("skipped");
  out += "{";
  bool first = true;
  for (const auto& [reason, n] : s.skipped) {
    absl::StrAppend(&out, first ? "" : ",", JsonQuote(reason), ":", n);
    first = false;
  }
  out += "}";
  num("first_submit_s", s.first_submit);
  num("last_end_s", s.last_end);
  num("makespan_s", s.makespan_s);
  num("utilisation", s.utilisation);
  num("wait_mean_s", s.wait_mean_s);
  num("wait_p50_s", s.wait_p50_s);
  num("wait_p95_s", s.wait_p95_s);
  num("wait_p99_s", s.wait_p99_s);
  num("wait_max_s", s.wait_max_s);
  num("bounded_slowdown_mean", s.bounded_slowdown_mean);
  num("bounded_slowdown_tau_s", kSlowdownTau);
  num("fragmentation", s.fragmentation);
  num("head_blocked_s", s.blocked_s);
  text("backfill_estimate", s.backfill_estimate);
  num("machine_mtbf_hours", s.machine_mtbf_hours);
  num("repair_hours", s.repair_hours);
  count("machine_failures", s.machine_failures);
  count("requeues", s.requeues);
  num("lost_ipu_hours", s.lost_ipu_hours);
  count("killed_at_limit", s.killed_at_limit);
  num("killed_at_limit_ipu_hours", s.killed_at_limit_ipu_hours);
  count("events", s.events);
  return out + "}\n";
}

}  // namespace vipu::plan
