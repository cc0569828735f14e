// The whole poprun run: parse, answer --help and --version, validate, then
// prepare, launch and finish one PoprunJob (poprun_job.h), which exports the
// config, prepares the partition, runs mpirun and cleans up what poprun
// created, also when the application fails or poprun is interrupted
// (SIGINT/SIGTERM are forwarded to mpirun first).
#ifndef VIPU_POPRUN_POPRUN_RUNNER_H_
#define VIPU_POPRUN_POPRUN_RUNNER_H_

#include <string>
#include <vector>

#include "cli/common/client_config.h"

namespace vipu::poprun {

// Returns the process exit code: mpirun's, 1 for a poprun error (printed as
// one "POPRUN ERROR: ..." line on stderr), 128+signal when interrupted
// before mpirun ran.
int RunPoprun(const std::vector<std::string>& args, const cli::Environment& env);

}  // namespace vipu::poprun

#endif  // VIPU_POPRUN_POPRUN_RUNNER_H_
