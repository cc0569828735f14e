// Run times from the model: a job that names an `ipu-model predict` preset
// and a step count runs for steps x the predicted step time of that
// workload on the partition it was placed on (its IPUs as data-parallel
// replicas of `ipus_per_replica` pipeline stages, on the pod's chips and
// links). Caches one prediction per (model, stages, size, ILDs). Not
// thread-safe: one per replay.
#ifndef VIPU_PLAN_MODEL_RUN_TIME_H_
#define VIPU_PLAN_MODEL_RUN_TIME_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "absl/status/statusor.h"
#include "fabric/pods.h"
#include "model/system_spec.h"
#include "plan/trace.h"

namespace vipu::plan {

class ModelRunTime {
 public:
  explicit ModelRunTime(const fabric::PodSpec& pod);

  // Seconds `job` runs on a partition of `size` IPUs over `num_ilds` ILDs.
  // INVALID_ARGUMENT, in the model's words, when the model is unknown, the
  // size is not a whole number of replicas, or a replica does not fit an
  // IPU's memory.
  absl::StatusOr<double> RunSeconds(const TraceJob& job, uint32_t size, uint32_t num_ilds);

 private:
  model::SystemSpec system_;
  std::map<std::tuple<std::string, uint32_t, uint32_t, uint32_t>, absl::StatusOr<double>> step_s_;
};

}  // namespace vipu::plan

#endif  // VIPU_PLAN_MODEL_RUN_TIME_H_
