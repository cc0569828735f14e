// vipu and vipu-admin run in-process, as the CLI's tests drive them: the exit
// code and what the command line printed on each stream.
#ifndef VIPU_TESTS_UNIT_SUPPORT_CLI_RUN_H_
#define VIPU_TESTS_UNIT_SUPPORT_CLI_RUN_H_

#include <sstream>
#include <string>
#include <vector>

#include "cli/common/command_line.h"

namespace vipu::test {

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

// `words` after the program name of `kind` ("vipu" or "vipu-admin"), with
// `env` for the environment and the configuration files.
inline CliResult RunCliWords(cli::CliKind kind, const std::vector<std::string>& words,
                             const cli::Environment& env) {
  std::vector<std::string> args = {kind == cli::CliKind::kVipu ? "vipu" : "vipu-admin"};
  args.insert(args.end(), words.begin(), words.end());
  std::ostringstream out, err;
  int code = cli::RunCli(kind, args, out, err, env);
  return {code, out.str(), err.str()};
}

}  // namespace vipu::test

#endif  // VIPU_TESTS_UNIT_SUPPORT_CLI_RUN_H_
