// `vipu`: the V-IPU user command line.
#include <grpc/support/log.h>

#include <iostream>

#include "cli/common/client_config.h"
#include "cli/common/command_line.h"

int main(int argc, char** argv) {
  // Failures are reported as one line by the CLI itself, not by gRPC's logger.
  gpr_set_log_function([](gpr_log_func_args*) {});
  return vipu::cli::RunVipu(argc, argv, std::cout, std::cerr,
                            vipu::cli::Environment::FromProcess());
}
