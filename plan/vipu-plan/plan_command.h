// The `vipu-plan` command line (replay, compare, generate), kept out of
// main.cc so tests run it in-process. Lives in the vipu_plan_cli library:
// vipu_plan itself stays free of CLI11 and of the terminal.
#ifndef VIPU_PLAN_VIPU_PLAN_PLAN_COMMAND_H_
#define VIPU_PLAN_VIPU_PLAN_PLAN_COMMAND_H_

#include <iosfwd>

namespace vipu::plan {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // could not write the outputs
inline constexpr int kExitUsage = 2;    // invalid flags, pod, trace file or line

// Runs `vipu-plan ...`; results on `out`, progress and one-line errors on
// `err`. Nothing is written to --out unless the replay succeeded. Returns
// the process exit code.
int RunVipuPlan(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace vipu::plan

#endif  // VIPU_PLAN_VIPU_PLAN_PLAN_COMMAND_H_
