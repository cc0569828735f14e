// Time of one training step of a workload on a system, from first
// principles and the global calibration constants.
#ifndef VIPU_MODEL_STEP_PREDICTOR_H_
#define VIPU_MODEL_STEP_PREDICTOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/calibration.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::model {

// One IPU of a replica (a pipeline stage). Per-step seconds add up to the
// step time with `idle_s`.
struct StageTime {
  uint32_t ipu = 0;
  uint32_t layers = 0;              // pipeline units placed here
  std::vector<std::string> extras;  // "embedding", "mlm+nsp heads", ...
  double params = 0;
  // One micro-batch (forward, backward, recomputation) on this IPU.
  double micro_batch_compute_s = 0;
  double matmul_s = 0;                // of which: matrix products and convolutions
  double attention_s = 0;             //           attention products
  double elementwise_s = 0;           //           element-wise ops
  double op_overhead_s = 0;           //           compute sets' sync and launch
  double micro_batch_exchange_s = 0;  // activations/gradients to neighbours
  // Per step.
  double compute_s = 0;
  double exchange_s = 0;
  double collectives_s = 0;    // gradient reduction with the other replicas
  double weight_update_s = 0;  // optimizer maths + Streaming Memory traffic
  double host_s = 0;           // host overhead and un-hidden host I/O
  double idle_s = 0;           // pipeline bubbles and waiting on the slowest IPU
};

struct StepPrediction {
  double step_time_s = 0;
  double samples_per_sec = 0;
  double sequences_per_sec = 0;  // samples x packing
  double tokens_per_sec = 0;     // transformers: sequences x seq_len
  uint64_t samples_per_step = 0;
  // Pipeline.
  std::vector<uint32_t> layers_per_ipu;
  bool layers_auto_balanced = false;
  uint32_t pipeline_stages = 1;      // IPU visits of a micro-batch (heads on IPU 0 add one)
  uint32_t beats_per_iteration = 0;  // grad_accum + fill and drain
  double beat_s = 0;                 // slowest IPU per micro-batch
  // Per step totals.
  double pipeline_s = 0;
  double collectives_s = 0;
  double ipu_link_collectives_s = 0;
  double gw_link_collectives_s = 0;
  double weight_update_s = 0;
  double host_io_s = 0;               // streaming inputs from the hosts (overlapped)
  double host_overhead_s = 0;         // per-step host call: round trips + framework
  double host_round_trips_s = 0;      // of which: the call's round trips and syncs
  bool host_bound = false;            // host I/O or the data loader sets the pace
  double communication_fraction = 0;  // (exchange + collectives) / step
  // Size and efficiency.
  uint32_t ipus_used = 0;
  uint32_t ilds_spanned = 1;
  double model_flops_per_sample = 0;  // forward + backward, no recomputation
  double model_tflops_per_ipu = 0;
  double model_flops_utilization = 0;  // of FP16 peak
  std::vector<StageTime> stages;
};

// INVALID_ARGUMENT when the workload cannot run on the system: zero sizes,
// more IPUs than the system has, a pipeline split that does not add up, ...
absl::Status ValidateWorkload(const Workload& workload, const SystemSpec& system);

absl::StatusOr<StepPrediction> PredictStep(const Workload& workload, const SystemSpec& system,
                                           const Calibration& calibration = DefaultCalibration());

}  // namespace vipu::model

#endif  // VIPU_MODEL_STEP_PREDICTOR_H_
