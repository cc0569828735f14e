// The user-API commands of vipu and vipu-admin: partitions, allocations, IPU attributes, version.
#include "cli/common/partition_commands.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "cli/common/ipuof_files.h"
#include "cli/common/json_output.h"
#include "cli/common/partition_request.h"
#include "cli/common/table.h"
#include "fabric/enum_names.h"
#include "fabric/types.h"
#include "wire/metadata_keys.h"

namespace vipu::cli {
namespace {

namespace fabric = ::vipu::fabric;

// Wire enum numbers equal fabric's (fabric/types.h), so names come from one
// place for the server and both CLIs.
std::string StateName(virmgrpc::PartitionReadyState s) {
  return fabric::TableName(static_cast<fabric::ReadyState>(s));
}
std::string OperationName(virmgrpc::PartitionOperationState s) {
  std::string name = fabric::WireName(static_cast<fabric::OperationState>(s));
  return absl::StartsWith(name, "POS_") ? name.substr(4) : name;
}
std::string RoutingName(virmgrpc::IpuLinkRoutingType r) {
  return fabric::TableName(static_cast<fabric::RoutingType>(r));
}
std::string GwRoutingName(virmgrpc::GatewayRoutingType r) {
  return fabric::TableName(static_cast<fabric::GwRoutingType>(r));
}
std::string SyncTypeName(virmgrpc::SyncType s) {
  if (s == virmgrpc::ST_UNDEFINED) return "DEFAULT";
  return fabric::CliName(static_cast<fabric::SyncType>(s));
}

// "ILD 0: 0-3 8; ILD 1: 0-63": topology ids per ILD, runs collapsed.
std::string IpuSummary(const virmgrpc::PartitionSpec& spec) {
  std::map<uint32_t, std::vector<uint32_t>> by_ild;
  for (const auto& ipu : spec.ipus()) {
    by_ild[ipu.ipulink_domain_topology_id()].push_back(ipu.topology_id());
  }
  std::vector<std::string> parts;
  for (auto& [ild, ids] : by_ild) {
    std::sort(ids.begin(), ids.end());
    std::vector<std::string> runs;
    for (size_t i = 0; i < ids.size();) {
      size_t j = i;
      while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
      runs.push_back(j == i ? absl::StrCat(ids[i]) : absl::StrCat(ids[i], "-", ids[j]));
      i = j + 1;
    }
    parts.push_back(absl::StrCat("ILD ", ild, ": ", absl::StrJoin(runs, " ")));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, "; ");
}

absl::StatusOr<virmgrpc::Partition> FindPartition(Connection& conn, const std::string& id) {
  virmgrpc::ListPartitionsRequest request;
  virmgrpc::ListPartitionsReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kReadOnly, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.user().ListPartitions(c, request, &reply);
  }));
  for (const auto& p : reply.partitions()) {
    if (p.id() == id) return p;
  }
  return absl::NotFoundError(absl::StrCat("partition ", id, " not found"));
}

absl::StatusOr<virmgrpc::PartitionStatus> FetchStatus(Connection& conn, const std::string& id) {
  virmgrpc::GetPartitionStatusRequest request;
  request.set_partition_id(id);
  virmgrpc::GetPartitionStatusReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kReadOnly, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.user().GetPartitionStatus(c, request, &reply);
  }));
  return reply.status();
}

// A create whose answer was lost: the partition id says whether it was made
// by now, so the failure says what was found. It stays a failure: the
// files are not written, and a create still in flight may yet be made.
absl::Status LookAfterALostCreate(Connection& conn, const std::string& id,
                                  const absl::Status& lost) {
  absl::StatusOr<virmgrpc::PartitionStatus> now = FetchStatus(conn, id);
  if (now.ok()) {
    return absl::Status(
        lost.code(), absl::StrCat(lost.message(), "; looked: partition ", id, " exists now (state ",
                                  StateName(now->ready_state()), "), so the create was made"));
  }
  if (absl::IsNotFound(now.status())) {
    return absl::Status(lost.code(),
                        absl::StrCat(lost.message(), "; looked: no partition ", id,
                                     " exists now, but a create still in flight may yet make it"));
  }
  return lost;
}

// Writes the ipuof file of every GCD 0..num_gcds-1.
absl::Status WriteAllGcdConfigs(Connection& conn, const CommandIo& io, const std::string& id,
                                uint32_t num_gcds) {
  for (uint32_t gcd = 0; gcd < num_gcds; ++gcd) {
    ASSIGN_OR_RETURN(auto config, FetchGcdConfig(conn, id, gcd));
    ASSIGN_OR_RETURN(auto json, GcdConfigJson(config));
    RETURN_IF_ERROR(WriteIpuofConfig(io.home, id, gcd, json));
  }
  return absl::OkStatus();
}

// The number of GCDs the server resolved for `id`, else `fallback`.
uint32_t NumGcds(Connection& conn, const std::string& id, uint32_t fallback) {
  auto partition = FindPartition(conn, id);
  if (partition.ok() && partition->spec().num_gcds() > 0) return partition->spec().num_gcds();
  return fallback > 0 ? fallback : 1;
}

}  // namespace

std::string FormatTimestamp(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return "never";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(t.seconds()),
                          absl::UTCTimeZone());
}

std::string RenderPartitionsTable(const virmgrpc::ListPartitionsReply& reply,
                                  PartitionTableKind kind) {
  // The id column is at least 11 wide: Graphcore's vipu prints "p64" in an
  // 11-wide "Partition" column (81-dash rule) and scripts were written
  // against that output.
  std::vector<Column> columns = {{"Partition", 11}, {"Cluster"}, {"ILDs"}, {"GW Routing"},
                                 {"ILD Routing"},   {"Size"},    {"GCDs"}, {"State"}};
  bool admin = kind == PartitionTableKind::kAdmin;
  if (admin) columns.insert(columns.begin(), Column{"Allocation"});
  Table table(std::move(columns));
  for (const auto& p : reply.partitions()) {
    const auto& spec = p.spec();
    // Built in place (an initializer list would copy every cell).
    std::vector<std::string> row;
    row.reserve(admin ? 9 : 8);
    if (admin) row.push_back(OrDash(spec.allocation_id()));
    row.push_back(p.id());
    row.push_back(OrDash(spec.cluster_id()));
    row.push_back(absl::StrCat(spec.num_ipulink_segments()));
    row.push_back(GwRoutingName(spec.gw_routing_type()));
    row.push_back(RoutingName(spec.ipulink_routing_type()));
    row.push_back(absl::StrCat(spec.ipus_size()));
    row.push_back(absl::StrCat(spec.num_gcds()));
    row.push_back(StateName(p.ready_state()));
    table.AddRow(std::move(row));
  }
  return table.Render();
}

std::string RenderAllocationsTable(const vipuadmin::ListAllocationsReply& reply) {
  Table table({{"Allocation ID"}, {"Agents"}}, TableStyle::kRuleFirst);
  for (const auto& a : reply.allocations()) {
    table.AddRow({a.id(), absl::StrJoin(a.spec().agent_ids(), " ")});
  }
  return table.Render();
}

std::string RenderIpuAttributesTable(const virmgrpc::ListIPUAttributesReply& reply) {
  Table table({{"Agent"}, {"IPU"}, {"Attribute"}, {"Value"}});
  for (const auto& entry : reply.entries()) {
    // Protobuf maps are unordered; print IPUs and attributes sorted.
    std::map<uint32_t, std::map<std::string, std::string>> ipus;
    for (const auto& [ipu, attrs] : entry.ipu_attributes()) {
      ipus[ipu].insert(attrs.attributes().begin(), attrs.attributes().end());
    }
    bool first_of_agent = true;
    for (const auto& [ipu, attrs] : ipus) {
      bool first_of_ipu = true;
      for (const auto& [key, value] : attrs) {
        table.AddRow({first_of_agent ? entry.agent() : "", first_of_ipu ? absl::StrCat(ipu) : "",
                      key, value});
        first_of_agent = first_of_ipu = false;
      }
    }
  }
  return table.Render();
}

std::string RenderPartitionDetails(const virmgrpc::Partition& p,
                                   const virmgrpc::PartitionStatus& status) {
  const auto& spec = p.spec();
  return RenderKeyValueBox({
      {"Partition ID", p.id()},
      {"Allocation", OrDash(spec.allocation_id())},
      {"Cluster", OrDash(spec.cluster_id())},
      {"Size", absl::StrCat(spec.ipus_size())},
      {"GCDs", absl::StrCat(spec.num_gcds())},
      {"Replicas", absl::StrCat(spec.num_replicas())},
      {"ILDs", absl::StrCat(spec.num_ipulink_segments())},
      {"ILD Routing", RoutingName(spec.ipulink_routing_type())},
      {"GW Routing", GwRoutingName(spec.gw_routing_type())},
      {"Sync Type", SyncTypeName(spec.sync_type())},
      {"Reconfigurable", spec.reconfigurable() ? "true" : "false"},
      {"State", StateName(status.ready_state())},
      {"Operation", OperationName(status.operation_state())},
      {"Errors", status.errors().empty() ? "none" : absl::StrJoin(status.errors(), "; ")},
      {"IPUs", IpuSummary(spec)},
  });
}

std::string RenderPartitionStatus(const virmgrpc::PartitionStatus& status) {
  return RenderKeyValueBox({
      {"Partition ID", status.partition_id()},
      {"State", StateName(status.ready_state())},
      {"Operation", OperationName(status.operation_state())},
      {"Errors", status.errors().empty() ? "none" : absl::StrJoin(status.errors(), "; ")},
      {"Max auto-reset retries", absl::StrCat(status.max_auto_reset_retries())},
      {"Auto-reset retry count", absl::StrCat(status.auto_reset_retry_count())},
      {"Last auto-reset", FormatTimestamp(status.last_auto_reset_time())},
  });
}

absl::Status GetVersion(Connection& conn, virmgrpc::VersionReply* reply, std::string* role,
                        std::string* leader) {
  virmgrpc::VersionRequest request;
  return conn.Call(CallKind::kReadOnly, [&](Stubs& stubs, grpc::ClientContext* c) {
    grpc::Status status = stubs.version().GetVersion(c, request, reply);
    if (status.ok()) {
      const auto& metadata = c->GetServerInitialMetadata();
      auto value = [&](const char* key) {
        auto it = metadata.find(key);
        return it == metadata.end() ? std::string()
                                    : std::string(it->second.data(), it->second.size());
      };
      *role = value(wire::kRoleMetadata);
      *leader = value(wire::kLeaderMetadata);
    }
    return status;
  });
}

absl::Status ServerVersion(Connection& conn, const CommandIo& io) {
  virmgrpc::VersionReply reply;
  std::string role, leader;
  RETURN_IF_ERROR(GetVersion(conn, &reply, &role, &leader));
  io.out << "version: " << reply.version() << "\n"
         << "host: " << conn.AnsweringMember() << "\n";
  if (!role.empty()) io.out << "role: " << role << "\n";
  if (!leader.empty()) io.out << "leader: " << leader << "\n";
  return absl::OkStatus();
}

absl::Status ListPartitions(Connection& conn, const CommandIo& io, const std::string& allocation_id,
                            PartitionTableKind kind) {
  virmgrpc::ListPartitionsRequest request;
  request.set_allocation_id(allocation_id);
  virmgrpc::ListPartitionsReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kReadOnly, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.user().ListPartitions(c, request, &reply);
  }));
  if (io.json) return WriteJson(io.out, reply);
  io.out << RenderPartitionsTable(reply, kind);
  return absl::OkStatus();
}

absl::StatusOr<virmgrpc::PartitionStatus> WaitForPartition(
    Connection& conn, const std::string& id, std::chrono::steady_clock::time_point deadline) {
  auto delay = std::chrono::milliseconds(2);
  constexpr auto kMaxDelay = std::chrono::milliseconds(100);
  while (true) {
    ASSIGN_OR_RETURN(auto status, FetchStatus(conn, id));
    switch (status.ready_state()) {
      case virmgrpc::PS_ERROR:
        return absl::AbortedError(status.errors().empty()
                                      ? std::string("partition is in state ERROR")
                                      : absl::StrJoin(status.errors(), "; "));
      case virmgrpc::PS_REMOVED:
        return absl::AbortedError("partition was removed");
      case virmgrpc::PS_ACTIVE:
        if (status.operation_state() != virmgrpc::POS_CREATING &&
            status.operation_state() != virmgrpc::POS_RESETTING) {
          return status;
        }
        break;
      default:
        break;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("timed out waiting for the partition to become ACTIVE (state ",
                       StateName(status.ready_state()), ", operation ",
                       OperationName(status.operation_state()), "); see --api-timeout"));
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(delay, deadline - now));
    delay = std::min(delay * 2, kMaxDelay);
  }
}

absl::StatusOr<virmgrpc::PartitionConfig::Gcd> FetchGcdConfig(Connection& conn,
                                                              const std::string& id, uint32_t gcd) {
  virmgrpc::GetPartitionIpuofConfigRequest request;
  request.set_partition_id(id);
  request.mutable_gcd_id()->set_id(gcd);
  virmgrpc::GetPartitionIpuofConfigReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kReadOnly, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.user().GetPartitionIpuofConfig(c, request, &reply);
  }));
  // The reply carries the requested GCD alone, or every GCD by index.
  const auto& gcds = reply.ipuof_config().gcd_configs();
  if (gcds.size() == 1) return gcds[0];
  if (gcd < static_cast<uint32_t>(gcds.size())) return gcds[static_cast<int>(gcd)];
  return absl::NotFoundError(absl::StrCat("the server returned no ipuof config for GCD ", gcd));
}

absl::Status CreatePartition(Connection& conn, const CommandIo& io,
                             const fabric::PartitionRequest& o) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(conn.config().timeout_seconds);
  const virmgrpc::CreatePartitionRequest request = ToWire(o);
  virmgrpc::CreatePartitionReply reply;
  const absl::Status sent =
      conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* c) {
        return stubs.user().CreatePartition(c, request, &reply);
      });
  if (OutcomeUnknown(sent)) return LookAfterALostCreate(conn, o.id, sent);
  RETURN_IF_ERROR(sent);

  RETURN_IF_ERROR(WaitForPartition(conn, o.id, deadline));
  RETURN_IF_ERROR(WriteAllGcdConfigs(conn, io, o.id, NumGcds(conn, o.id, o.num_gcds)));
  io.out << "create partition (" << o.id << "): success.\n";
  return absl::OkStatus();
}

absl::Status GetPartition(Connection& conn, const CommandIo& io, const std::string& id) {
  ASSIGN_OR_RETURN(auto status, FetchStatus(conn, id));
  ASSIGN_OR_RETURN(auto partition, FindPartition(conn, id));
  if (io.json) {
    ASSIGN_OR_RETURN(auto p, MessageToJson(partition));
    ASSIGN_OR_RETURN(auto st, MessageToJson(status));
    io.out << "{\n\"partition\": " << absl::StripTrailingAsciiWhitespace(p)
           << ",\n\"status\": " << absl::StripTrailingAsciiWhitespace(st) << "\n}\n";
    return absl::OkStatus();
  }
  io.out << RenderPartitionDetails(partition, status);
  return absl::OkStatus();
}

absl::Status GetPartitionIpuofConfig(Connection& conn, const CommandIo& io, const std::string& id,
                                     uint32_t gcd) {
  ASSIGN_OR_RETURN(auto config, FetchGcdConfig(conn, id, gcd));
  ASSIGN_OR_RETURN(auto json, GcdConfigJson(config));
  io.out << json;
  return absl::OkStatus();
}

absl::Status GetPartitionStatus(Connection& conn, const CommandIo& io, const std::string& id) {
  ASSIGN_OR_RETURN(auto status, FetchStatus(conn, id));
  if (io.json) {
    virmgrpc::GetPartitionStatusReply reply;
    *reply.mutable_status() = status;
    return WriteJson(io.out, reply);
  }
  io.out << RenderPartitionStatus(status);
  return absl::OkStatus();
}

absl::Status RemovePartition(Connection& conn, const CommandIo& io, const std::string& id,
                             bool force) {
  virmgrpc::RemovePartitionRequest request;
  request.set_partition_id(id);
  request.set_force(force);
  virmgrpc::RemovePartitionReply reply;
  absl::Status s = conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.user().RemovePartition(c, request, &reply);
  });
  if (!s.ok() && !absl::IsNotFound(s)) return s;
  if (absl::Status files = RemoveIpuofConfigs(io.home, id); !files.ok() && s.ok()) return files;
  RETURN_IF_ERROR(s);
  io.out << "remove partition (" << id << "): success.\n";
  return absl::OkStatus();
}

absl::Status ResetPartition(Connection& conn, const CommandIo& io, const std::string& id,
                            bool relocatable) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(conn.config().timeout_seconds);
  virmgrpc::ResetPartitionRequest request;
  request.set_partition_id(id);
  request.set_relocatable(relocatable);
  virmgrpc::ResetPartitionReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kMutating, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.user().ResetPartition(c, request, &reply);
  }));
  RETURN_IF_ERROR(WaitForPartition(conn, id, deadline));
  std::error_code ec;
  if (!io.home.empty() && std::filesystem::exists(IpuofConfigPath(io.home, id, 0), ec)) {
    RETURN_IF_ERROR(WriteAllGcdConfigs(conn, io, id, NumGcds(conn, id, 1)));
  }
  io.out << "reset partition (" << id << "): success.\n";
  return absl::OkStatus();
}

absl::Status ListAllocations(Connection& conn, const CommandIo& io) {
  vipuadmin::ListAllocationsRequest request;
  vipuadmin::ListAllocationsReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kReadOnly, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.allocations().ListAllocations(c, request, &reply);
  }));
  if (io.json) return WriteJson(io.out, reply);
  io.out << RenderAllocationsTable(reply);
  return absl::OkStatus();
}

absl::Status ListIpuAttributes(Connection& conn, const CommandIo& io,
                               const std::vector<std::string>& agents) {
  virmgrpc::ListIPUAttributesRequest request;
  for (const auto& a : agents) request.add_agents(a);
  virmgrpc::ListIPUAttributesReply reply;
  RETURN_IF_ERROR(conn.Call(CallKind::kReadOnly, [&](Stubs& stubs, grpc::ClientContext* c) {
    return stubs.user().ListIPUAttributes(c, request, &reply);
  }));
  if (io.json) return WriteJson(io.out, reply);
  io.out << RenderIpuAttributesTable(reply);
  return absl::OkStatus();
}

}  // namespace vipu::cli
