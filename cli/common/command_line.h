// The command lines of `vipu` and `vipu-admin`: `<verb> <noun> [id] [flags]`
// with nouns singular or plural and the global connection flags accepted
// anywhere on the line. Runs in-process so tests can drive the real parser.
//
// Exit codes: 0 success; 1 the server refused or could not be reached
// ("<verb> <noun> (<id>): failure: <message>"); 2 the command line or the
// configuration is wrong ("<program>: <message>"), detected before any RPC.
// Every failure is exactly one line on `err`.
#ifndef VIPU_CLI_COMMON_COMMAND_LINE_H_
#define VIPU_CLI_COMMON_COMMAND_LINE_H_

#include <ostream>
#include <string>
#include <vector>

#include "cli/common/client_config.h"

namespace vipu::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

enum class CliKind { kVipu, kVipuAdmin };

// `args` is the whole command line, args[0] the program name.
int RunCli(CliKind kind, const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
           const Environment& env);

int RunVipu(int argc, char** argv, std::ostream& out, std::ostream& err, const Environment& env);
int RunVipuAdmin(int argc, char** argv, std::ostream& out, std::ostream& err,
                 const Environment& env);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_COMMAND_LINE_H_
