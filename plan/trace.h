// A job trace as the planner replays it: one TraceJob per job a site ran, in
// the order the file lists them, and what was skipped and why. Plain data,
// built by the readers (swf_reader.h, csv_reader.h) and the generator.
#ifndef VIPU_PLAN_TRACE_H_
#define VIPU_PLAN_TRACE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vipu::plan {

// One job of a trace. Times are seconds from the trace's start.
struct TraceJob {
  std::string id;
  std::string user;
  double submit = 0;
  // The run time the trace records; negative when the job names a model
  // and a step count instead (the replay asks the model).
  double run = -1;
  // The run time the user asked for (a batch system's limit); negative:
  // not given.
  double requested = -1;
  uint32_t ipus = 0;  // as asked; the replay rounds it up to a partition size
  // Model-derived run time: an `ipu-model predict` preset, the steps to
  // run, and the IPUs of one replica (pipeline stages).
  std::string model;
  uint64_t steps = 0;
  uint32_t ipus_per_replica = 1;
};

// Why a row of a trace is not a job. Counted, never fatal.
inline constexpr char kSkipNoIpus[] = "no_ipus";
inline constexpr char kSkipNoEnd[] = "no_end";
inline constexpr char kSkipNegativeRun[] = "negative_run_time";

struct Trace {
  std::string source;  // the file it came from
  std::vector<TraceJob> jobs;
  // Rows skipped, by reason (kSkip* above).
  std::map<std::string, uint64_t> skipped;
  // MaxProcs from an SWF header, 0 when absent.
  uint64_t max_procs = 0;
};

}  // namespace vipu::plan

#endif  // VIPU_PLAN_TRACE_H_
