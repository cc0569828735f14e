// Renders a step prediction as JSON or as a readable summary. Strings only;
// the caller decides where they go.
#ifndef VIPU_MODEL_PREDICTION_FORMAT_H_
#define VIPU_MODEL_PREDICTION_FORMAT_H_

#include <string>

#include "model/ipu_memory.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/workload.h"

namespace vipu::fabric::model {

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

// Why `memory` does not fit, in one line: the fullest IPU, what it needs
// and its memory.
std::string MemoryRefusal(const MemoryEstimate& memory);

}  // namespace vipu::fabric::model

#endif  // VIPU_MODEL_PREDICTION_FORMAT_H_
