// The vipu-admin commands on agents, clusters and allocations
// (vipuadmin.AdminService). Same contract as partition_commands.h: failures
// come back as a status whose message follows "failure: ", success output
// goes to io.out, options arrive validated.
#ifndef VIPU_CLI_COMMON_ADMIN_COMMANDS_H_
#define VIPU_CLI_COMMON_ADMIN_COMMANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "cli/common/command_io.h"
#include "cli/common/connection.h"
#include "vipu_admin.pb.h"

namespace vipu::cli {

struct CreateClusterOptions {
  std::string id;
  std::vector<std::string> agents;  // ordered: position defines topology ids
  uint32_t num_ipulink_domains = 1;
  vipuadmin::IpuLinkTopology topology = vipuadmin::ILT_TORUS;
  vipuadmin::GwLinkTopology cluster_topology = vipuadmin::GLT_LOOPED;
};

// Pure renderers, exposed for byte-exact tests.
std::string RenderAgentsTable(const vipuadmin::ListAgentsReply& reply);
// The `get agent` box: Agent ID, Host, Port, Status,
// Cluster, Last heartbeat, then the agent's details in order.
std::string RenderAgentBox(const vipuadmin::Agent& agent);
std::string RenderClustersTable(const vipuadmin::ListClustersReply& reply);

absl::Status CreateAgent(Connection& conn, const CommandIo& io, const std::string& id,
                         const std::string& host, uint32_t port);
absl::Status ListAgents(Connection& conn, const CommandIo& io);
absl::Status GetAgent(Connection& conn, const CommandIo& io, const std::string& id);
absl::Status RemoveAgent(Connection& conn, const CommandIo& io, const std::string& id);

absl::Status CreateCluster(Connection& conn, const CommandIo& io,
                           const CreateClusterOptions& options);
absl::Status ListClusters(Connection& conn, const CommandIo& io);
absl::Status RemoveCluster(Connection& conn, const CommandIo& io, const std::string& id);

// `agents` empty: every agent of the cluster.
absl::Status CreateAllocation(Connection& conn, const CommandIo& io, const std::string& id,
                              const std::string& cluster_id,
                              const std::vector<std::string>& agents);
absl::Status RemoveAllocation(Connection& conn, const CommandIo& io, const std::string& id);

// vipuadmin.AdminService.Backup: the server copies its database to `path`
// (absolute, on the server's machine) and the reply's size is printed.
absl::Status BackupDatabase(Connection& conn, const CommandIo& io, const std::string& path);

// vipuadmin.AdminService.MoveLeadership: the leader of a highly available
// control plane hands its leadership to the member at `to` (empty: the
// standby next in line). Returns once a member says the successor leads,
// or DEADLINE_EXCEEDED when none has within `wait`.
absl::Status MoveLeadership(Connection& conn, const CommandIo& io, const std::string& to,
                            absl::Duration wait);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_ADMIN_COMMANDS_H_
