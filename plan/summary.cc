// Summarise: a replay's figures from its jobs, and summary.json.
#include "plan/summary.h"

#include <algorithm>
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
  s.machine_mtbf_hours = options.faults.machine_mtbf_hours;
  s.repair_hours = options.faults.repair_hours;
  s.fragmentation = result.fragmentation;
  s.blocked_s = result.blocked_s;
  s.events = result.events;
  if (result.estimated_by_run == 0) {
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
    ++s.done;
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

std::string SummaryJson(const Summary& s) {
  JsonWriter w;
  w.BeginObject()
      .Field("trace", s.trace)
      .Field("pod", s.pod)
      .Field("pod_ipus", s.pod_ipus)
      .Field("policy", s.policy)
      .Field("seed", s.seed)
      .Field("jobs", s.jobs)
      .Field("done", s.done)
      .Field("refused", s.refused)
      .Field("too_big", s.too_big)
      .Field("model_refused", s.model_refused)
      .Field("rounded", s.rounded);
  w.Key("skipped").BeginObject();
  for (const auto& [reason, count] : s.skipped) w.Field(reason, count);
  w.EndObject();
  w.Field("first_submit_s", s.first_submit)
      .Field("last_end_s", s.last_end)
      .Field("makespan_s", s.makespan_s)
      .Field("utilisation", s.utilisation)
      .Field("wait_mean_s", s.wait_mean_s)
      .Field("wait_p50_s", s.wait_p50_s)
      .Field("wait_p95_s", s.wait_p95_s)
      .Field("wait_p99_s", s.wait_p99_s)
      .Field("wait_max_s", s.wait_max_s)
      .Field("bounded_slowdown_mean", s.bounded_slowdown_mean)
      .Field("bounded_slowdown_tau_s", kSlowdownTau)
      .Field("fragmentation", s.fragmentation)
      .Field("head_blocked_s", s.blocked_s)
      .Field("backfill_estimate", s.backfill_estimate)
      .Field("machine_mtbf_hours", s.machine_mtbf_hours)
      .Field("repair_hours", s.repair_hours)
      .Field("machine_failures", s.machine_failures)
      .Field("requeues", s.requeues)
      .Field("lost_ipu_hours", s.lost_ipu_hours)
      .Field("events", s.events)
      .EndObject();
  return w.Take() + "\n";
}

}  // namespace vipu::plan
