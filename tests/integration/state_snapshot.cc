// TakeSnapshot and the invariant checks run on it: placement and agents against the database.
#include "tests/integration/state_snapshot.h"

#include <grpcpp/grpcpp.h>
#include <sqlite3.h>

#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "vipu_admin.grpc.pb.h"
#include "vipu_agent.grpc.pb.h"
#include "vipuuser.grpc.pb.h"
#include "wire/status.h"

namespace vipu::testing {
namespace {

absl::Status FromGrpc(const char* what, const grpc::Status& s) {
  absl::Status status = wire::FromGrpc(s);
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(what, ": ", status.message()));
}

void SetDeadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
}

// The rows of the partition tables, in one read transaction so that the
// IPUs and the generations belong together.
absl::Status ReadDatabase(const std::string& path, std::map<std::string, StoredPartition>* out) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close);
  if (rc != SQLITE_OK) {
    return absl::UnavailableError(absl::StrCat("open ", path, ": ", sqlite3_errstr(rc)));
  }
  sqlite3_busy_timeout(db.get(), 5000);
  auto query = [&](const char* sql, auto&& row) -> absl::Status {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db.get(), sql, -1, &stmt, nullptr) != SQLITE_OK) {
      return absl::InternalError(absl::StrCat(sql, ": ", sqlite3_errmsg(db.get())));
    }
    int step;
    while ((step = sqlite3_step(stmt)) == SQLITE_ROW) row(stmt);
    sqlite3_finalize(stmt);
    if (step != SQLITE_DONE) {
      return absl::InternalError(absl::StrCat(sql, ": ", sqlite3_errmsg(db.get())));
    }
    return absl::OkStatus();
  };
  auto text = [](sqlite3_stmt* stmt, int col) {
    return std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, col)));
  };
  if (absl::Status s = query("BEGIN", [](sqlite3_stmt*) {}); !s.ok()) return s;
  absl::Status s = query("SELECT id, generation, ready_state, operation_state FROM partitions",
                         [&](sqlite3_stmt* st) {
                           StoredPartition& p = (*out)[text(st, 0)];
                           p.generation = static_cast<uint64_t>(sqlite3_column_int64(st, 1));
                           p.ready_state = sqlite3_column_int(st, 2);
                           p.operation_state = sqlite3_column_int(st, 3);
                         });
  if (s.ok()) {
    s = query("SELECT partition_id, agent_id, ipu FROM partition_ipus", [&](sqlite3_stmt* st) {
      (*out)[text(st, 0)].ipus.emplace(text(st, 1), sqlite3_column_int(st, 2));
    });
  }
  query("COMMIT", [](sqlite3_stmt*) {}).IgnoreError();
  return s;
}

}  // namespace

absl::StatusOr<StateSnapshot> TakeSnapshot(const ServerProcess& server) {
  StateSnapshot out;
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  auto user = virmgrpc::UserService::NewStub(channel);
  auto admin = vipuadmin::AdminService::NewStub(channel);

  virmgrpc::ListPartitionsReply partitions;
  {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    if (absl::Status s = FromGrpc("ListPartitions", user->ListPartitions(&ctx, {}, &partitions));
        !s.ok()) {
      return s;
    }
  }
  for (const virmgrpc::Partition& p : partitions.partitions()) out.listed[p.id()] = p;
  // The database before the agents: a partition stored as ACTIVE was
  // configured on its agents before that commit, so they must show it.
  if (absl::Status s = ReadDatabase(server.db_path(), &out.stored); !s.ok()) return s;
  vipuadmin::ListAgentsReply agents;
  {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    if (absl::Status s = FromGrpc("ListAgents", admin->ListAgents(&ctx, {}, &agents)); !s.ok()) {
      return s;
    }
  }
  for (const vipuadmin::Agent& a : agents.agents()) {
    auto agent = vipuagent::Agent::NewStub(grpc::CreateChannel(
        absl::StrCat(a.host(), ":", a.port()), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    vipuagent::GetInfoRequest request;
    request.set_agent_id(a.id());
    vipuagent::GetInfoReply reply;
    if (absl::Status s = FromGrpc("GetInfo", agent->GetInfo(&ctx, request, &reply)); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("agent ", a.id(), ": ", s.message()));
    }
    HeldByAgent& held = out.agents[a.id()];
    for (const vipuagent::HeldPartition& h : reply.held()) {
      auto& [generation, ipus] = held.partitions[h.partition_id()];
      generation = h.generation();
      ipus.insert(h.ipus().begin(), h.ipus().end());
    }
  }
  return out;
}

absl::StatusOr<std::string> ListedState(const ServerProcess& server) {
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  auto user = virmgrpc::UserService::NewStub(channel);
  auto admin = vipuadmin::AdminService::NewStub(channel);
  auto allocation = vipuadmin::AllocationService::NewStub(channel);
  virmgrpc::ListPartitionsReply partitions;
  vipuadmin::ListAgentsReply agents;
  vipuadmin::ListClustersReply clusters;
  vipuadmin::ListAllocationsReply allocations;
  auto call = [](const char* what, const auto& rpc) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    return FromGrpc(what, rpc(&ctx));
  };
  using C = grpc::ClientContext*;
  absl::Status s =
      call("ListPartitions", [&](C c) { return user->ListPartitions(c, {}, &partitions); });
  if (s.ok()) s = call("ListAgents", [&](C c) { return admin->ListAgents(c, {}, &agents); });
  if (s.ok()) s = call("ListClusters", [&](C c) { return admin->ListClusters(c, {}, &clusters); });
  if (s.ok()) {
    s = call("ListAllocations",
             [&](C c) { return allocation->ListAllocations(c, {}, &allocations); });
  }
  if (!s.ok()) return s;
  for (vipuadmin::Agent& a : *agents.mutable_agents()) {
    a.clear_last_heartbeat();
    a.clear_status();
  }
  return absl::StrCat(partitions.DebugString(), agents.DebugString(), clusters.DebugString(),
                      allocations.DebugString());
}

std::vector<std::string> CheckPlacementInvariants(const StateSnapshot& s, uint32_t pod_size) {
  std::vector<std::string> problems;
  // Listed first, stored next: only a removal may finish in between.
  for (const auto& [id, p] : s.stored) {
    if (!s.listed.count(id) && p.operation_state != virmgrpc::POS_REMOVING) {
      problems.push_back(absl::StrCat("stored ", id, " is not listed"));
    }
  }
  std::map<std::tuple<std::string, uint32_t, uint32_t>, std::string> position_owner;
  uint32_t total = 0;
  for (const auto& [id, p] : s.listed) {
    for (const virmgrpc::PartitionIpu& ipu : p.spec().ipus()) {
      ++total;
      auto key = std::make_tuple(p.spec().cluster_id(), ipu.ipulink_domain_topology_id(),
                                 ipu.topology_id());
      auto [it, inserted] = position_owner.emplace(key, id);
      if (!inserted) {
        problems.push_back(absl::StrCat("IPU at ILD ", ipu.ipulink_domain_topology_id(),
                                        " topology id ", ipu.topology_id(), " is in both ",
                                        it->second, " and ", id));
      }
    }
  }
  if (total > pod_size) {
    problems.push_back(absl::StrCat(total, " IPUs in partitions on a pod of ", pod_size));
  }
  std::map<MachineIpu, std::string> machine_owner;
  for (const auto& [id, p] : s.stored) {
    for (const MachineIpu& ipu : p.ipus) {
      auto [it, inserted] = machine_owner.emplace(ipu, id);
      if (!inserted) {
        problems.push_back(
            absl::StrCat(ipu.first, " IPU ", ipu.second, " is in both ", it->second, " and ", id));
      }
    }
  }
  return problems;
}

std::vector<std::string> CheckAgentsAgree(const StateSnapshot& s, bool no_orphans) {
  std::vector<std::string> problems;
  for (const auto& [id, p] : s.stored) {
    if (p.ready_state != virmgrpc::PS_ACTIVE || p.operation_state != virmgrpc::POS_IDLE) continue;
    std::map<std::string, std::set<uint32_t>> wanted;
    for (const auto& [agent, ipu] : p.ipus) wanted[agent].insert(ipu);
    for (const auto& [agent, ipus] : wanted) {
      auto a = s.agents.find(agent);
      if (a == s.agents.end()) {
        problems.push_back(absl::StrCat(id, ": agent ", agent, " is not listed"));
        continue;
      }
      auto h = a->second.partitions.find(id);
      if (h == a->second.partitions.end()) {
        problems.push_back(
            absl::StrCat("ACTIVE ", id, " (generation ", p.generation, ") is not held by ", agent));
      } else if (h->second.first != p.generation || h->second.second != ipus) {
        problems.push_back(absl::StrCat(
            "ACTIVE ", id, " (generation ", p.generation, ", ", ipus.size(), " IPUs) is held by ",
            agent, " at generation ", h->second.first, " with ", h->second.second.size(), " IPUs"));
      }
    }
  }
  if (!no_orphans) return problems;
  for (const auto& [agent, held] : s.agents) {
    for (const auto& [id, h] : held.partitions) {
      auto p = s.stored.find(id);
      if (p == s.stored.end()) {
        problems.push_back(
            absl::StrCat(agent, " holds ", id, " (generation ", h.first, "), which is not stored"));
        continue;
      }
      if (h.first > p->second.generation) {
        problems.push_back(absl::StrCat(agent, " holds ", id, " at generation ", h.first,
                                        ", newer than the stored ", p->second.generation));
      }
      for (uint32_t ipu : h.second) {
        if (!p->second.ipus.count({agent, ipu})) {
          problems.push_back(absl::StrCat(agent, " holds IPU ", ipu, " for ", id,
                                          ", which is not its IPU in the database"));
        }
      }
    }
  }
  return problems;
}

}  // namespace vipu::testing
