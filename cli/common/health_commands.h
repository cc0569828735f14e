// The vipu-admin commands of simulated pods (docs/cli.md): `inject fault`
// (forwarded by the server to the agent) and `test cluster` (the installation
// tests). Same contract as admin_commands.h: failures come back as a status
// whose message follows "failure: ", success output goes to io.out.
#ifndef VIPU_CLI_COMMON_HEALTH_COMMANDS_H_
#define VIPU_CLI_COMMON_HEALTH_COMMANDS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/common/command_io.h"
#include "cli/common/connection.h"
#include "fabric/fault_request.h"
#include "vipu_admin.pb.h"

namespace vipu::cli {

// The flags of `inject fault` as typed (nullopt: not given).
struct FaultFlags {
  std::string agent_id;
  std::optional<std::string> kind;
  std::optional<std::string> ipu;
  std::optional<std::string> link;
  std::optional<std::string> duration_ms;
};

// Parses and validates completely; INVALID_ARGUMENT naming the flag
// ("--kind: ...", "--ipu: must be an integer in 0..3, got x").
absl::StatusOr<fabric::FaultRequest> ParseFaultFlags(const FaultFlags& flags);

// The `test cluster` table: "Showing test results for
// cluster ID", then Test Type | Duration | Passed | Summary between rules,
// then one "  <test>: <failure>" line per failed item.
std::string RenderTestResults(const vipuadmin::TestClusterReply& reply);

absl::Status InjectFault(Connection& conn, const CommandIo& io,
                         const fabric::FaultRequest& request);
// Fails (after printing the table) when a test failed, so scripts can
// check the exit code.
absl::Status TestCluster(Connection& conn, const CommandIo& io, const std::string& cluster_id,
                         bool force);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_HEALTH_COMMANDS_H_
