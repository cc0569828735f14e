// Inventory: validated, transactional changes and reads of agents, clusters and allocations.
#include "server/control/inventory.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "fabric/topology.h"
#include "fabric/validation.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

absl::Status Renamed(const absl::Status& s, const std::string& what) {
  if (absl::IsNotFound(s)) return absl::NotFoundError(absl::StrCat(what, " not found"));
  return s;
}

absl::Status ValidateAgentFields(const fabric::Agent& agent) {
  if (absl::Status s = fabric::ValidateId("agent id", agent.id); !s.ok()) return s;
  if (agent.host.empty()) return absl::InvalidArgumentError("host: must not be empty");
  if (agent.host.size() > 253 || agent.host.find_first_of(" \t\n/") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("host: not a host name or address: '", agent.host, "'"));
  }
  if (agent.port == 0 || agent.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("port: must be 1..65535, got ", agent.port));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Inventory::CreateAgent(const fabric::Agent& agent) {
  if (absl::Status s = ValidateAgentFields(agent); !s.ok()) return s;
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    if (txn.GetAgent(agent.id).ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("agent id: agent '", agent.id, "' already exists"));
    }
    return txn.InsertAgent(agent);
  });
  if (s.ok()) spdlog::info("agent {} created at {}:{}", agent.id, agent.host, agent.port);
  return s;
}

absl::Status Inventory::RemoveAgent(const std::string& id) {
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    if (absl::Status g = txn.GetAgent(id).status(); !g.ok()) {
      return Renamed(g, absl::StrCat("agent id: agent '", id, "'"));
    }
    ASSIGN_OR_RETURN(const std::string cluster, txn.ClusterOfAgent(id));
    if (!cluster.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("agent '", id, "' is in cluster '", cluster, "'; remove the cluster first"));
    }
    return txn.DeleteAgent(id);
  });
  if (s.ok()) spdlog::info("agent {} removed", id);
  return s;
}

absl::StatusOr<fabric::Agent> Inventory::GetAgent(const std::string& id) {
  fabric::Agent out;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto a = txn.GetAgent(id);
    if (!a.ok()) return Renamed(a.status(), absl::StrCat("agent id: agent '", id, "'"));
    out = std::move(*a);
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  return out;
}

absl::StatusOr<std::vector<fabric::Agent>> Inventory::ListAgents() {
  std::vector<fabric::Agent> out;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(out, txn.ListAgents());
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  return out;
}

absl::StatusOr<std::vector<std::string>> Inventory::ClustersOf(
    const std::vector<std::string>& agent_ids) {
  std::vector<std::string> out;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    for (const std::string& id : agent_ids) {
      ASSIGN_OR_RETURN(std::string c, txn.ClusterOfAgent(id));
      out.push_back(std::move(c));
    }
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  return out;
}

absl::Status Inventory::RecordRegistration(const fabric::Agent& agent, bool auto_add) {
  if (absl::Status s = ValidateAgentFields(agent); !s.ok()) return s;
  bool added = false;
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    auto existing = txn.GetAgent(agent.id);
    if (existing.ok()) {
      if (existing->host == agent.host && existing->port == agent.port &&
          existing->machine_type == agent.machine_type) {
        return absl::OkStatus();
      }
      return txn.UpdateAgent(agent);
    }
    if (!absl::IsNotFound(existing.status())) return existing.status();
    if (!auto_add) {
      return absl::NotFoundError(absl::StrCat(
          "agent id: agent '", agent.id, "' is unknown; create it with vipu-admin create agent"));
    }
    added = true;
    return txn.InsertAgent(agent);
  });
  if (s.ok() && added) spdlog::info("agent {} added at {}:{}", agent.id, agent.host, agent.port);
  return s;
}

absl::StatusOr<std::vector<absl::Status>> Inventory::RecordRegistrations(
    const std::vector<fabric::Agent>& agents, bool auto_add) {
  std::vector<absl::Status> results(agents.size());
  for (size_t i = 0; i < agents.size(); ++i) results[i] = ValidateAgentFields(agents[i]);
  std::vector<size_t> added;
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    added.clear();
    for (size_t i = 0; i < agents.size(); ++i) {
      if (!results[i].ok()) continue;
      const fabric::Agent& agent = agents[i];
      auto existing = txn.GetAgent(agent.id);
      if (existing.ok()) {
        if (existing->host == agent.host && existing->port == agent.port &&
            existing->machine_type == agent.machine_type) {
          continue;
        }
        if (absl::Status u = txn.UpdateAgent(agent); !u.ok()) return u;
        continue;
      }
      if (!absl::IsNotFound(existing.status())) return existing.status();
      if (!auto_add) {
        results[i] = absl::NotFoundError(absl::StrCat(
            "agent id: agent '", agent.id, "' is unknown; create it with vipu-admin create agent"));
        continue;
      }
      if (absl::Status ins = txn.InsertAgent(agent); !ins.ok()) return ins;
      added.push_back(i);
    }
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  if (!added.empty()) {
    spdlog::info("{} agents added (first {} at {}:{})", added.size(), agents[added[0]].id,
                 agents[added[0]].host, agents[added[0]].port);
  }
  return results;
}

absl::Status Inventory::CreateCluster(const fabric::Cluster& cluster) {
  if (absl::Status s = fabric::ValidateId("cluster id", cluster.id); !s.ok()) return s;
  if (cluster.agent_ids.empty())
    return absl::InvalidArgumentError("agents: must name at least one agent");
  std::set<std::string> seen;
  for (const std::string& a : cluster.agent_ids) {
    if (absl::Status s = fabric::ValidateId("agents", a); !s.ok()) return s;
    if (!seen.insert(a).second) {
      return absl::InvalidArgumentError(absl::StrCat("agents: agent '", a, "' is listed twice"));
    }
  }
  if (cluster.topology == fabric::IldTopology::kUndefined) {
    return absl::InvalidArgumentError("topology: must be torus or mesh");
  }
  if (cluster.cluster_topology == fabric::ClusterTopology::kUndefined) {
    return absl::InvalidArgumentError("cluster_topology: must be looped or switched");
  }
  if (auto layout = fabric::ClusterLayout::Build(cluster); !layout.ok()) return layout.status();
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    if (txn.GetCluster(cluster.id).ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("cluster id: cluster '", cluster.id, "' already exists"));
    }
    for (const std::string& a : cluster.agent_ids) {
      if (absl::Status g = txn.GetAgent(a).status(); !g.ok()) {
        return Renamed(g, absl::StrCat("agents: agent '", a, "'"));
      }
      ASSIGN_OR_RETURN(const std::string c, txn.ClusterOfAgent(a));
      if (!c.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("agents: agent '", a, "' is already in cluster '", c, "'"));
      }
    }
    return txn.InsertCluster(cluster);
  });
  if (s.ok()) {
    spdlog::info("cluster {} created: {} agents, {} ILDs", cluster.id, cluster.agent_ids.size(),
                 cluster.num_ilds);
  }
  return s;
}

absl::Status Inventory::RemoveCluster(const std::string& id) {
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    if (absl::Status g = txn.GetCluster(id).status(); !g.ok()) {
      return Renamed(g, absl::StrCat("cluster id: cluster '", id, "'"));
    }
    ASSIGN_OR_RETURN(const std::vector<fabric::Allocation> allocations, txn.ListAllocations());
    for (const fabric::Allocation& a : allocations) {
      if (a.cluster_id == id) {
        return absl::FailedPreconditionError(absl::StrCat("cluster '", id, "' has allocation '",
                                                          a.id, "'; remove its allocations first"));
      }
    }
    ASSIGN_OR_RETURN(const int64_t partitions, txn.CountPartitionsInCluster(id));
    if (partitions > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("cluster '", id, "' has ", partitions, " partitions"));
    }
    return txn.DeleteCluster(id);
  });
  if (s.ok()) spdlog::info("cluster {} removed", id);
  return s;
}

absl::StatusOr<std::vector<fabric::Cluster>> Inventory::ListClusters() {
  std::vector<fabric::Cluster> out;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(out, txn.ListClusters());
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  return out;
}

absl::Status Inventory::CreateAllocation(const fabric::Allocation& request) {
  if (absl::Status s = fabric::ValidateId("allocation id", request.id); !s.ok()) return s;
  if (absl::Status s = fabric::ValidateId("cluster id", request.cluster_id); !s.ok()) return s;
  std::set<std::string> seen;
  for (const std::string& a : request.agent_ids) {
    if (absl::Status s = fabric::ValidateId("agents", a); !s.ok()) return s;
    if (!seen.insert(a).second) {
      return absl::InvalidArgumentError(absl::StrCat("agents: agent '", a, "' is listed twice"));
    }
  }
  fabric::Allocation allocation = request;
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    if (txn.GetAllocation(allocation.id).ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("allocation id: allocation '", allocation.id, "' already exists"));
    }
    auto cluster = txn.GetCluster(allocation.cluster_id);
    if (!cluster.ok()) {
      return Renamed(cluster.status(),
                     absl::StrCat("cluster id: cluster '", allocation.cluster_id, "'"));
    }
    if (allocation.agent_ids.empty()) allocation.agent_ids = cluster->agent_ids;
    std::set<std::string> members(cluster->agent_ids.begin(), cluster->agent_ids.end());
    for (const std::string& a : allocation.agent_ids) {
      if (!members.count(a)) {
        return absl::InvalidArgumentError(
            absl::StrCat("agents: agent '", a, "' is not in cluster '", cluster->id, "'"));
      }
      ASSIGN_OR_RETURN(const std::string other, txn.AllocationOfAgent(a));
      if (!other.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("agents: agent '", a, "' is already in allocation '", other, "'"));
      }
    }
    return txn.InsertAllocation(allocation);
  });
  if (s.ok()) {
    spdlog::info("allocation {} created on cluster {} with {} agents", allocation.id,
                 allocation.cluster_id, allocation.agent_ids.size());
  }
  return s;
}

absl::Status Inventory::RemoveAllocation(const std::string& id) {
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    if (absl::Status g = txn.GetAllocation(id).status(); !g.ok()) {
      return Renamed(g, absl::StrCat("allocation id: allocation '", id, "'"));
    }
    ASSIGN_OR_RETURN(const int64_t partitions, txn.CountPartitionsInAllocation(id));
    if (partitions > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("allocation '", id, "' has ", partitions, " partitions; remove them first"));
    }
    return txn.DeleteAllocation(id);
  });
  if (s.ok()) spdlog::info("allocation {} removed", id);
  return s;
}

absl::StatusOr<std::vector<fabric::Allocation>> Inventory::ListAllocations() {
  std::vector<fabric::Allocation> out;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(out, txn.ListAllocations());
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  return out;
}

}  // namespace vipu::server
