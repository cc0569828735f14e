// vipu-server's command line: its flags, the configuration file beneath
// them, and the checks of one option against another.
#ifndef VIPU_SERVER_DAEMON_COMMAND_LINE_H_
#define VIPU_SERVER_DAEMON_COMMAND_LINE_H_

#include <optional>
#include <variant>

#include "fabric/pods.h"
#include "server/daemon/server_options.h"

namespace vipu::server {

// What the command line and the configuration file ask for, checked.
struct CommandLine {
  ServerOptions options;
  // --simulate's pod; none without --simulate (and always for a member).
  std::optional<fabric::PodSpec> pod;
};

// Parses `argv`, then the configuration file (--config, or
// /etc/vipu/vipu-server.hcl when it exists) beneath the flags given, and
// refuses what the options together cannot mean (two HTTP listeners, and
// --db, --simulate or --init for a member of a highly available control
// plane). Security defaults are resolved (ResolveSecurityDefaults).
// Returns the checked options, or the exit code when the process must end
// now: 0 after --help or --version, printed; 2 on a configuration error,
// printed on stderr as "vipu-server: <what is wrong>".
std::variant<CommandLine, int> ParseCommandLine(int argc, char** argv);

}  // namespace vipu::server

#endif  // VIPU_SERVER_DAEMON_COMMAND_LINE_H_
