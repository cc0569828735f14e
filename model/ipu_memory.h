// What each IPU of a replica must hold in its In-Processor Memory through a
// training step: the FP16 weights and gradients of what is placed on it,
// the optimizer state kept on chip, and the activations kept for the
// backward pass of the micro-batches in flight under the pipeline the step
// time assumes. Counted from the workload's shapes, like the step time.
//
// Code, vertex state, exchange buffers and the temporaries of each op are
// not counted: their size is the compiler's and no figure here would be
// more than a guess. The count is therefore a floor: a layout above the
// IPU's memory cannot fit, one below it may still not.
#ifndef VIPU_MODEL_IPU_MEMORY_H_
#define VIPU_MODEL_IPU_MEMORY_H_

#include <cstdint>
#include <vector>

#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::model {

struct IpuMemory {
  uint32_t ipu = 0;
  double weights_bytes = 0;    // FP16, whole even under RTS: the products read them all
  double gradients_bytes = 0;  // FP16, held until the once-per-iteration reduction
  double optimizer_bytes =
      0;  // state on chip at its precision: this replica's RTS shard; 0 off chip
  // Stashed for the micro-batches in flight (each recomputed unit's input,
  // or a kept unit's saved_bytes), plus one unit's saved activations while
  // it is recomputed.
  double activations_bytes = 0;
  double TotalBytes() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes;
  }
};

struct MemoryEstimate {
  std::vector<IpuMemory> ipus;  // one per IPU of a replica
  double capacity_bytes = 0;    // In-Processor Memory of one IPU
  uint32_t fullest = 0;         // index into `ipus` of the largest total
  bool fits = true;             // every total is within the capacity
};

// The floor above for `prediction`'s layout (its split and pipeline depth)
// of `workload` on `system`. `prediction` is PredictStep's for the same
// workload and system.
MemoryEstimate EstimateMemory(const Workload& workload, const SystemSpec& system,
                              const StepPrediction& prediction);

}  // namespace vipu::model

#endif  // VIPU_MODEL_IPU_MEMORY_H_
