// Renders a step prediction as JSON or as a readable summary. Strings only;
// the caller decides where they go.
#ifndef VIPU_MODEL_PREDICTION_FORMAT_H_
#define VIPU_MODEL_PREDICTION_FORMAT_H_

#include <string>

#include "absl/status/status.h"
#include "model/ipu_memory.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::model {

// One JSON object: the workload, the system, the step totals and a
// "stages" array with compute, exchange, collectives, weight update, host
// and idle seconds per IPU of a replica.
std::string PredictionJson(const Workload& workload, const SystemSpec& system,
                           const StepPrediction& prediction);

// A few lines of totals and a table of the stages.
std::string PredictionText(const Workload& workload, const SystemSpec& system,
                           const StepPrediction& prediction);

// The memory count as a JSON object: capacity, whether it fits, what is
// and is not counted, and bytes per IPU.
std::string MemoryJson(const MemoryEstimate& memory);

// The memory count as text: the fullest IPU against its memory, what the
// count leaves out, and one line per IPU.
std::string MemoryText(const MemoryEstimate& memory);

// OK when `memory` fits; else INVALID_ARGUMENT saying why in one line:
// "memory: IPU 1 needs at least 1186.0 MB, more than its 900.0 MB
// (weights ..., gradients ..., optimizer state ..., activations ... MB)",
// the fullest IPU of a replica. `ipu-model predict`, the machines'
// workloads and the console all refuse a layout with this one message.
absl::Status CheckMemoryFits(const MemoryEstimate& memory);

}  // namespace vipu::model

#endif  // VIPU_MODEL_PREDICTION_FORMAT_H_
