// ModelRunTime: a job's run time from ipu-model's step prediction at its placed size.
#include "plan/model_run_time.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/ipu_memory.h"
#include "model/prediction_format.h"
#include "model/step_predictor.h"
#include "model/workload.h"

namespace vipu::plan {

ModelRunTime::ModelRunTime(const fabric::PodSpec& pod) : system_(model::SystemSpecFromPod(pod)) {}

absl::StatusOr<double> ModelRunTime::RunSeconds(const TraceJob& job, uint32_t size,
                                                uint32_t num_ilds) {
  const std::string model = absl::AsciiStrToLower(job.model);
  const auto key = std::make_tuple(model, job.ipus_per_replica, size, num_ilds);
  auto it = step_s_.find(key);
  if (it == step_s_.end()) {
    absl::StatusOr<double> step = [&]() -> absl::StatusOr<double> {
      ASSIGN_OR_RETURN(model::Workload workload, model::WorkloadPreset(model));
      const uint32_t stages = job.ipus_per_replica;
      if (stages == 0 || size % stages != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "ipus_per_replica: ", stages, " does not divide the partition's ", size, " IPUs"));
      }
      workload.ipus_per_replica = stages;
      workload.replicas = size / stages;
      ASSIGN_OR_RETURN(model::StepPrediction p, model::PredictStep(workload, system_));
      RETURN_IF_ERROR(model::CheckMemoryFits(model::EstimateMemory(workload, system_, p)));
      return p.step_time_s;
    }();
    it = step_s_.emplace(key, std::move(step)).first;
  }
  if (!it->second.ok()) return it->second.status();
  return *it->second * static_cast<double>(job.steps);
}

}  // namespace vipu::plan
