// The `ipu-model` command line, kept out of main.cc so tests can
// drive it. Lives in the vipu_model_cli library: vipu_model itself stays
// free of I/O and of CLI11.
#ifndef VIPU_MODEL_IPU_MODEL_PREDICT_COMMAND_H_
#define VIPU_MODEL_IPU_MODEL_PREDICT_COMMAND_H_

#include <iosfwd>

namespace vipu::model {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;  // invalid flags or flag values

// Runs `ipu-model predict ...`; output on `out`, a one-line error on `err`.
// Returns the process exit code.
int RunIpuModel(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace vipu::model

#endif  // VIPU_MODEL_IPU_MODEL_PREDICT_COMMAND_H_
