// `poprun`: launches a distributed application on a V-IPU partition.
#include <grpc/support/log.h>

#include <string>
#include <vector>

#include "cli/common/client_config.h"
#include "poprun/poprun_runner.h"

int main(int argc, char** argv) {
  // Failures are reported as one POPRUN ERROR line, not by gRPC's logger.
  gpr_set_log_function([](gpr_log_func_args*) {});
  return vipu::poprun::RunPoprun(std::vector<std::string>(argv + 1, argv + argc),
                                 vipu::cli::Environment::FromProcess());
}
