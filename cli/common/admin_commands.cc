// vipu-admin's agent, cluster and allocation commands, and their tables and boxes.
#include "cli/common/admin_commands.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"
#include "cli/common/json_output.h"
#include "cli/common/partition_commands.h"
#include "cli/common/table.h"
#include "fabric/enum_names.h"
#include "fabric/types.h"

namespace vipu::cli {
namespace {

namespace fabric = ::vipu::fabric;

std::string StatusName(vipuadmin::AgentStatus s) {
  switch (s) {
    case vipuadmin::AGENT_UP:
      return "Up";
    case vipuadmin::AGENT_DOWN:
      return "Down";
    default:
      return "Unknown";
  }
}

// Admin enum numbers equal fabric's IldTopology / ClusterTopology.
std::string TopologyName(vipuadmin::IpuLinkTopology t) {
  if (t == vipuadmin::ILT_UNDEFINED) return "-";
  return fabric::CliName(static_cast<fabric::IldTopology>(t));
}
std::string ClusterTopologyName(vipuadmin::GwLinkTopology t) {
  if (t == vipuadmin::GLT_UNDEFINED) return "-";
  return fabric::CliName(static_cast<fabric::ClusterTopology>(t));
}

void Success(const CommandIo& io, const char* verb_noun, const std::string& id) {
  io.out << verb_noun << " (" << id << "): success.\n";
}

}  // namespace

std::string RenderAgentsTable(const vipuadmin::ListAgentsReply& reply) {
  Table table(
      {{"Agent ID"}, {"Host"}, {"Port"}, {"Status"}, {"Cluster"}, {"IPUs"}, {"Last Heartbeat"}});
  for (const auto& a : reply.agents()) {
    table.AddRow({a.id(), a.host(), absl::StrCat(a.port()), StatusName(a.status()),
                  OrDash(a.cluster_id()), absl::StrCat(a.num_ipus()),
                  FormatTimestamp(a.last_heartbeat())});
  }
  return table.Render();
}

std::string RenderAgentBox(const vipuadmin::Agent& a) {
  std::vector<std::pair<std::string, std::string>> rows = {
      {"Agent ID", a.id()},
      {"Host", a.host()},
      {"Port", absl::StrCat(a.port())},
      {"Status", StatusName(a.status())},
      {"Cluster", OrDash(a.cluster_id())},
      {"Last heartbeat", FormatTimestamp(a.last_heartbeat())},
  };
  for (const auto& d : a.details()) rows.emplace_back(d.name(), d.value());
  return RenderKeyValueBox(rows);
}

std::string RenderClustersTable(const vipuadmin::ListClustersReply& reply) {
  Table table({{"Cluster ID"}, {"Agents"}, {"ILDs"}, {"Topology"}, {"Cluster Topology"}});
  for (const auto& c : reply.clusters()) {
    table.AddRow({c.id(), absl::StrJoin(c.agent_ids(), " "), absl::StrCat(c.num_ipulink_domains()),
                  TopologyName(c.topology()), ClusterTopologyName(c.cluster_topology())});
  }
  return table.Render();
}

absl::Status CreateAgent(Connection& conn, const CommandIo& io, const std::string& id,
                         const std::string& host, uint32_t port) {
  vipuadmin::CreateAgentRequest request;
  request.set_agent_id(id);
  request.set_host(host);
  request.set_port(port);
  vipuadmin::CreateAgentReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.admin().CreateAgent(c, request, &reply);
  }));
  Success(io, "create agent", id);
  return absl::OkStatus();
}

absl::Status ListAgents(Connection& conn, const CommandIo& io) {
  vipuadmin::ListAgentsRequest request;
  vipuadmin::ListAgentsReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kReadOnly, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.admin().ListAgents(c, request, &reply);
  }));
  if (io.json) return WriteJson(io.out, reply);
  io.out << RenderAgentsTable(reply);
  return absl::OkStatus();
}

absl::Status GetAgent(Connection& conn, const CommandIo& io, const std::string& id) {
  vipuadmin::GetAgentRequest request;
  request.set_agent_id(id);
  vipuadmin::GetAgentReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kReadOnly, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.admin().GetAgent(c, request, &reply);
  }));
  if (io.json) return WriteJson(io.out, reply);
  io.out << RenderAgentBox(reply.agent());
  return absl::OkStatus();
}

absl::Status RemoveAgent(Connection& conn, const CommandIo& io, const std::string& id) {
  vipuadmin::RemoveAgentRequest request;
  request.set_agent_id(id);
  vipuadmin::RemoveAgentReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.admin().RemoveAgent(c, request, &reply);
  }));
  Success(io, "remove agent", id);
  return absl::OkStatus();
}

absl::Status CreateCluster(Connection& conn, const CommandIo& io,
                           const CreateClusterOptions& options) {
  vipuadmin::CreateClusterRequest request;
  auto* cluster = request.mutable_cluster();
  cluster->set_id(options.id);
  for (const auto& a : options.agents) cluster->add_agent_ids(a);
  cluster->set_num_ipulink_domains(options.num_ipulink_domains);
  cluster->set_topology(options.topology);
  cluster->set_cluster_topology(options.cluster_topology);
  vipuadmin::CreateClusterReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.admin().CreateCluster(c, request, &reply);
  }));
  Success(io, "create cluster", options.id);
  return absl::OkStatus();
}

absl::Status ListClusters(Connection& conn, const CommandIo& io) {
  vipuadmin::ListClustersRequest request;
  vipuadmin::ListClustersReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kReadOnly, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.admin().ListClusters(c, request, &reply);
  }));
  if (io.json) return WriteJson(io.out, reply);
  io.out << RenderClustersTable(reply);
  return absl::OkStatus();
}

absl::Status RemoveCluster(Connection& conn, const CommandIo& io, const std::string& id) {
  vipuadmin::RemoveClusterRequest request;
  request.set_cluster_id(id);
  vipuadmin::RemoveClusterReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.admin().RemoveCluster(c, request, &reply);
  }));
  Success(io, "remove cluster", id);
  return absl::OkStatus();
}

absl::Status CreateAllocation(Connection& conn, const CommandIo& io, const std::string& id,
                              const std::string& cluster_id,
                              const std::vector<std::string>& agents) {
  vipuadmin::CreateAllocationRequest request;
  request.set_allocation_id(id);
  request.set_cluster_id(cluster_id);
  for (const auto& a : agents) request.add_agent_ids(a);
  vipuadmin::CreateAllocationReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.admin().CreateAllocation(c, request, &reply);
  }));
  Success(io, "create allocation", id);
  return absl::OkStatus();
}

absl::Status RemoveAllocation(Connection& conn, const CommandIo& io, const std::string& id) {
  vipuadmin::RemoveAllocationRequest request;
  request.set_allocation_id(id);
  vipuadmin::RemoveAllocationReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.admin().RemoveAllocation(c, request, &reply);
  }));
  Success(io, "remove allocation", id);
  return absl::OkStatus();
}

absl::Status BackupDatabase(Connection& conn, const CommandIo& io, const std::string& path) {
  vipuadmin::BackupRequest request;
  request.set_path(path);
  vipuadmin::BackupReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.admin().Backup(c, request, &reply);
  }));
  if (io.json) return WriteJson(io.out, reply);
  io.out << "backup (" << reply.path() << "): success. " << reply.size_bytes()
         << " bytes written on the server.\n";
  return absl::OkStatus();
}

absl::Status MoveLeadership(Connection& conn, const CommandIo& io, const std::string& to,
                            absl::Duration wait) {
  vipuadmin::MoveLeadershipRequest request;
  request.set_to(to);
  vipuadmin::MoveLeadershipReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.admin().MoveLeadership(c, request, &reply);
  }));
  // The leader answers before it hands over, as it can answer nothing after:
  // the members say when the successor leads.
  const absl::Time deadline = absl::Now() + wait;
  for (;;) {
    virmgrpc::VersionReply version;
    std::string role, leader;
    if (GetVersion(conn, &version, &role, &leader).ok() && leader == reply.to()) break;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "the leader ", reply.from(), " began handing the leadership to ", reply.to(),
          ", but no member said that ", reply.to(), " leads within ", absl::ToInt64Seconds(wait),
          " s (--api-timeout); vipu --server-version shows who does"));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  if (io.json) return WriteJson(io.out, reply);
  io.out << "leadership moved from " << reply.from() << " to " << reply.to() << "\n";
  return absl::OkStatus();
}

}  // namespace vipu::cli
