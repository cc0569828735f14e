// The discrete-event replay of a trace on a pod, in virtual time: jobs
// arrive at their submit times, are placed by the server's own placement
// (fabric::ResolveValidatedDefaults then fabric::Place on the pod's masks,
// as PartitionController::Create does) and hold their IPUs for their run
// time. Never sleeps; the same trace, pod, options and seed give the same
// result. One Replay runs once; not thread-safe, but separate Replays may
// run on separate threads.
#ifndef VIPU_PLAN_REPLAY_H_
#define VIPU_PLAN_REPLAY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "fabric/topology.h"
#include "plan/trace.h"

namespace vipu::plan {

enum class Policy {
  kFifo,  // strict arrival order: the head blocks the rest
  // EASY: a later job starts early only if, by the estimates, it does not
  // delay the reservation of the queue's head; jobs behind the head have no
  // reservation and may be delayed.
  kBackfill,
  kNone,  // no scheduler: a create that does not fit is refused
};
absl::StatusOr<Policy> ParsePolicy(absl::string_view name);
const char* PolicyName(Policy policy);

struct FaultOptions {
  double machine_mtbf_hours = 0;  // 0: no faults
  double repair_hours = 0;
};

// Run time of a job that names a model, at the partition it was placed on
// (size and ILDs). An error refuses the job (its message is counted).
using ModelRunTimeFn =
    std::function<absl::StatusOr<double>(const TraceJob& job, uint32_t size, uint32_t num_ilds)>;

struct ReplayProgress {
  uint64_t arrived = 0;
  uint64_t total = 0;
  double simulated_s = 0;
};

struct ReplayOptions {
  Policy policy = Policy::kFifo;
  uint64_t seed = 1;
  FaultOptions faults;
  // Jobs of the queue backfill examines after its head at each event (the
  // depth a batch scheduler bounds its backfill pass by).
  uint32_t backfill_depth = 1000;
  ModelRunTimeFn model_run_time;  // needed when a job names a model
  // A job that asked for a time (TraceJob::requested) is ended when that
  // time is up, as a batch scheduler ends it (Slurm kills at the walltime);
  // false: it runs to its end whatever it asked for.
  bool end_at_limit = true;
  // Called about once a wall-clock second during long runs.
  std::function<void(const ReplayProgress&)> progress;
};

// kKilledAtLimit: it ran, and was ended at its requested time before its
// run was over (ReplayOptions::end_at_limit).
enum class JobStatus { kDone, kRefused, kTooBig, kModelRefused, kKilledAtLimit };

// True for a job that ran: done, or ended at its limit.
inline bool Ran(JobStatus status) {
  return status == JobStatus::kDone || status == JobStatus::kKilledAtLimit;
}
const char* JobStatusName(JobStatus status);

// Where a job ran last: `segment` IPUs from topology id `start` in each of
// `num_ilds` consecutive ILDs from `first_ild` (what fabric::Place gives).
struct Block {
  uint32_t first_ild = 0;
  uint32_t num_ilds = 0;
  uint32_t start = 0;
  uint32_t segment = 0;
};

struct JobOutcome {
  JobStatus status = JobStatus::kDone;
  uint32_t size = 0;  // the partition size: the trace's IPUs rounded up
  double start = -1;  // the run that completed (after any requeues)
  double end = -1;
  double run = 0;       // end - start
  double estimate = 0;  // what backfill assumed the run takes
  Block block;
  uint32_t requeues = 0;
  double lost_ipu_s = 0;  // IPU-seconds of runs a machine failure killed
  // The order of the replay's creates: 1 for the first job started or
  // refused, and so on (the last run's, after requeues); 0: never created.
  uint64_t create_seq = 0;
  std::string refusal;  // why, for a refused job
};

// The pod's state after each event, for the report's charts.
struct TimelinePoint {
  double t = 0;
  uint32_t busy_ipus = 0;
  uint32_t down_ipus = 0;
  uint32_t queued = 0;
};

// A change in the IPUs held on one row of the occupancy chart (an ILD, or a
// machine on pods of fewer than 4 ILDs).
struct OccupancyDelta {
  double t = 0;
  uint32_t row = 0;
  int32_t delta = 0;
};

struct ReplayResult {
  std::vector<JobOutcome> jobs;  // as trace.jobs
  uint64_t rounded = 0;          // jobs whose IPUs were not a partition size
  uint64_t requeues = 0;
  uint64_t machine_failures = 0;
  double lost_ipu_s = 0;
  // Jobs ended at their requested time, and the IPU-seconds of those runs,
  // spent without the job finishing.
  uint64_t killed_at_limit = 0;
  double killed_at_limit_ipu_s = 0;
  // Time-weighted share of free IPUs while the queue's head did not fit,
  // and for how long it did not.
  double fragmentation = 0;
  double blocked_s = 0;
  uint64_t estimated_by_requested = 0;  // backfill estimates from requested time
  uint64_t estimated_by_run = 0;        // ... and from the run time
  uint64_t events = 0;
  uint32_t occupancy_rows = 0;
  bool occupancy_by_ild = true;
  std::vector<TimelinePoint> timeline;
  std::vector<OccupancyDelta> occupancy;
};

// Replays `trace` on `layout`. INVALID_ARGUMENT when a job names a model but
// no ModelRunTimeFn is given, or the options are out of range.
absl::StatusOr<ReplayResult> Replay(const fabric::ClusterLayout& layout, const Trace& trace,
                                    const ReplayOptions& options);

// The smallest partition size (a power of two) holding `ipus`.
uint32_t PartitionSizeFor(uint32_t ipus);

}  // namespace vipu::plan

#endif  // VIPU_PLAN_REPLAY_H_
