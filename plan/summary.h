// What a replay comes to, in the figures a planner asks for: utilisation,
// makespan, waits, bounded slowdown, fragmentation, refusals, and the
// faults' cost. Computed from the replay's outcome alone, so a reader of
// jobs.csv can recompute every figure (docs/planning.md gives the rules).
#ifndef VIPU_PLAN_SUMMARY_H_
#define VIPU_PLAN_SUMMARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plan/replay.h"
#include "plan/trace.h"

namespace vipu::plan {

inline constexpr double kSlowdownTau = 10;  // seconds: bounded slowdown's floor on run time

struct Summary {
  std::string trace;
  std::string pod;
  uint32_t pod_ipus = 0;
  std::string policy;
  uint64_t seed = 0;
  uint64_t jobs = 0;  // jobs of the trace that were not skipped
  uint64_t done = 0;
  uint64_t refused = 0;  // policy none: did not fit when created
  uint64_t too_big = 0;  // larger than the pod
  uint64_t model_refused = 0;
  uint64_t rounded = 0;
  std::map<std::string, uint64_t> skipped;
  double first_submit = 0;
  double last_end = 0;
  double makespan_s = 0;   // last end - first submit
  double utilisation = 0;  // IPU-seconds of jobs that ran / (pod IPUs x makespan)
  double wait_mean_s = 0;
  double wait_p50_s = 0;
  double wait_p95_s = 0;
  double wait_p99_s = 0;
  double wait_max_s = 0;
  double bounded_slowdown_mean = 0;
  double fragmentation = 0;
  double blocked_s = 0;
  std::string backfill_estimate;  // "requested", "run time" or a mix
  uint64_t requeues = 0;
  uint64_t machine_failures = 0;
  double lost_ipu_hours = 0;
  uint64_t killed_at_limit = 0;          // ended at their requested time
  double killed_at_limit_ipu_hours = 0;  // their runs, which did not finish
  double machine_mtbf_hours = 0;
  double repair_hours = 0;
  uint64_t events = 0;
};

// Nearest rank: the smallest value with at least p of the values at or
// below it; 0 for none.
double Percentile(std::vector<double> values, double p);

Summary Summarise(const Trace& trace, const ReplayResult& result, const std::string& pod,
                  uint32_t pod_ipus, const ReplayOptions& options);

// A number as the shortest text that reads back to the same double; "null"
// when not finite.
std::string FormatNumber(double v);

// summary.json: every field above, keys as named, numbers exact.
std::string SummaryJson(const Summary& s);

}  // namespace vipu::plan

#endif  // VIPU_PLAN_SUMMARY_H_
