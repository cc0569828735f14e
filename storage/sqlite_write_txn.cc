// Changes of SqliteTxn (storage/sqlite_store.h). Each method is all-or-nothing
// (its own SAVEPOINT) so a caller that ignores an error still commits a
// consistent state. Constraint errors from SQLite are rewritten into
// messages that name the object; the in-code checks before deletes give
// clear messages, the foreign keys stay as the backstop.
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/connection.h"
#include "storage/membership_cache.h"
#include "storage/sqlite_partition_columns.h"
#include "storage/sqlite_store.h"
#include "storage/still_used.h"

namespace vipu::storage {
namespace {

using fabric::Agent;
using fabric::Allocation;
using fabric::Cluster;
using fabric::Partition;

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<bool> Exists(Connection* conn, std::string_view sql, std::string_view id) {
  ASSIGN_OR_RETURN(Statement stmt, conn->Prepare(sql));
  stmt.BindText(1, id);
  return stmt.Step();
}

// First id (and count) of rows referencing `id`, for "still in use" messages.
struct Users {
  int64_t count = 0;
  std::string first;
};
absl::StatusOr<Users> FindUsers(Connection* conn, std::string_view sql, std::string_view id) {
  ASSIGN_OR_RETURN(Statement stmt, conn->Prepare(sql));
  stmt.BindText(1, id);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  Users users;
  if (row) {
    users.count = stmt.ColumnInt(0);
    users.first = stmt.ColumnText(1);
  }
  return users;
}

// Names what a failed partition row insert/update refers to.
absl::Status PartitionReferenceError(Connection* conn, const Partition& p, absl::Status s) {
  if (!absl::IsFailedPrecondition(s)) return s;
  absl::StatusOr<bool> cluster = Exists(conn, "SELECT 1 FROM clusters WHERE id = ?1", p.cluster_id);
  if (cluster.ok() && !*cluster) {
    return absl::FailedPreconditionError(
        absl::StrCat("partition ", p.id, ": cluster ", p.cluster_id, " does not exist"));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("partition ", p.id, ": allocation ", p.allocation_id, " does not exist"));
}

// Membership rows of a partition, in order.
absl::Status InsertPartitionIpus(Connection* conn, const Partition& p) {
  for (size_t i = 0; i < p.ipus.size(); ++i) {
    const fabric::PartitionIpu& ipu = p.ipus[i];
    ASSIGN_OR_RETURN(
        Statement stmt,
        conn->Prepare(
            "INSERT INTO partition_ipus (partition_id, position, agent_id, ipu, ild, ild_routing,"
            " topology_id, routing_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
    stmt.BindText(1, p.id)
        .BindInt(2, static_cast<int64_t>(i))
        .BindText(3, ipu.ipu.agent_id)
        .BindInt(4, ipu.ipu.ipu)
        .BindInt(5, ipu.ild)
        .BindInt(6, ipu.ild_routing)
        .BindInt(7, ipu.topology_id)
        .BindInt(8, ipu.routing_id);
    absl::Status s = stmt.Run();
    if (absl::IsAlreadyExists(s)) {
      absl::StatusOr<Statement> holder =
          conn->Prepare("SELECT partition_id FROM partition_ipus WHERE agent_id = ?1 AND ipu = ?2");
      std::string holder_id;
      if (holder.ok()) {
        holder->BindText(1, ipu.ipu.agent_id).BindInt(2, ipu.ipu.ipu);
        absl::StatusOr<bool> row = holder->Step();
        if (row.ok() && *row) holder_id = holder->ColumnText(0);
      }
      return absl::AlreadyExistsError(absl::StrCat("IPU ", ipu.ipu.agent_id, ":", ipu.ipu.ipu,
                                                   " is already in a partition (", holder_id, ")"));
    }
    if (absl::IsFailedPrecondition(s)) {
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", p.id, ": agent ", ipu.ipu.agent_id, " does not exist"));
    }
    RETURN_IF_ERROR(s);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SqliteTxn::InsertAgent(const Agent& agent) {
  ASSIGN_OR_RETURN(Statement stmt,
                   conn_->Prepare("INSERT INTO agents (id, host, port, machine_type, created)"
                                  " VALUES (?1, ?2, ?3, ?4, ?5)"));
  stmt.BindText(1, agent.id)
      .BindText(2, agent.host)
      .BindInt(3, agent.port)
      .BindInt(4, static_cast<int64_t>(agent.machine_type))
      .BindInt(5, NowUnixMs());
  absl::Status s = stmt.Run();
  if (absl::IsAlreadyExists(s)) {
    return absl::AlreadyExistsError(absl::StrCat("agent ", agent.id, " already exists"));
  }
  return s;
}

absl::Status SqliteTxn::UpdateAgent(const Agent& agent) {
  ASSIGN_OR_RETURN(
      Statement stmt,
      conn_->Prepare("UPDATE agents SET host = ?2, port = ?3, machine_type = ?4 WHERE id = ?1"));
  stmt.BindText(1, agent.id)
      .BindText(2, agent.host)
      .BindInt(3, agent.port)
      .BindInt(4, static_cast<int64_t>(agent.machine_type));
  RETURN_IF_ERROR(stmt.Run());
  if (conn_->changes() == 0) {
    return absl::NotFoundError(absl::StrCat("agent ", agent.id, " not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteTxn::DeleteAgent(std::string_view id) {
  ASSIGN_OR_RETURN(std::string cluster, ClusterOfAgent(id));
  if (!cluster.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("agent ", AbslView(id), " is in cluster ",
                                                      cluster,
                                                      "; remove the cluster before the agent"));
  }
  ASSIGN_OR_RETURN(
      std::string partition,
      conn_->QueryText("SELECT partition_id FROM partition_ipus WHERE agent_id = ?1 LIMIT 1", id));
  if (!partition.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("agent ", AbslView(id), " has IPUs in partition ", partition));
  }
  ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare("DELETE FROM agents WHERE id = ?1"));
  stmt.BindText(1, id);
  absl::Status s = stmt.Run();
  if (absl::IsFailedPrecondition(s)) {
    return absl::FailedPreconditionError(
        absl::StrCat("agent ", AbslView(id), " is still in use: ", s.message()));
  }
  RETURN_IF_ERROR(s);
  if (conn_->changes() == 0)
    return absl::NotFoundError(absl::StrCat("agent ", AbslView(id), " not found"));
  return absl::OkStatus();
}

absl::Status SqliteTxn::InsertCluster(const Cluster& cluster) {
  if (change_ != nullptr) change_->TouchCluster(cluster.id);
  Savepoint sp(conn_, "insert_cluster");
  RETURN_IF_ERROR(sp.status());
  {
    ASSIGN_OR_RETURN(
        Statement stmt,
        conn_->Prepare("INSERT INTO clusters (id, num_ilds, topology, cluster_topology)"
                       " VALUES (?1, ?2, ?3, ?4)"));
    stmt.BindText(1, cluster.id)
        .BindInt(2, cluster.num_ilds)
        .BindInt(3, static_cast<int64_t>(cluster.topology))
        .BindInt(4, static_cast<int64_t>(cluster.cluster_topology));
    absl::Status s = stmt.Run();
    if (absl::IsAlreadyExists(s)) {
      return absl::AlreadyExistsError(absl::StrCat("cluster ", cluster.id, " already exists"));
    }
    RETURN_IF_ERROR(s);
  }
  for (size_t i = 0; i < cluster.agent_ids.size(); ++i) {
    const std::string& agent_id = cluster.agent_ids[i];
    ASSIGN_OR_RETURN(
        Statement stmt,
        conn_->Prepare(
            "INSERT INTO cluster_agents (cluster_id, position, agent_id) VALUES (?1, ?2, ?3)"));
    stmt.BindText(1, cluster.id).BindInt(2, static_cast<int64_t>(i)).BindText(3, agent_id);
    absl::Status s = stmt.Run();
    if (absl::IsAlreadyExists(s)) {
      absl::StatusOr<std::string> other = ClusterOfAgent(agent_id);
      if (other.ok() && *other == cluster.id) {
        return absl::InvalidArgumentError(
            absl::StrCat("cluster ", cluster.id, ": agent ", agent_id, " is listed twice"));
      }
      return absl::AlreadyExistsError(
          absl::StrCat("agent ", agent_id, " is already in cluster ", other.ok() ? *other : ""));
    }
    if (absl::IsFailedPrecondition(s)) {
      return absl::FailedPreconditionError(
          absl::StrCat("cluster ", cluster.id, ": agent ", agent_id, " does not exist"));
    }
    RETURN_IF_ERROR(s);
  }
  return sp.Release();
}

absl::Status SqliteTxn::DeleteCluster(std::string_view id) {
  if (change_ != nullptr) change_->TouchCluster(id);
  ASSIGN_OR_RETURN(
      Users allocations,
      FindUsers(conn_, "SELECT COUNT(*), MIN(id) FROM allocations WHERE cluster_id = ?1", id));
  if (allocations.count > 0) {
    return StillUsedError("cluster", id, allocations.count, "allocation", allocations.first);
  }
  ASSIGN_OR_RETURN(
      Users partitions,
      FindUsers(conn_, "SELECT COUNT(*), MIN(id) FROM partitions WHERE cluster_id = ?1", id));
  if (partitions.count > 0) {
    return StillUsedError("cluster", id, partitions.count, "partition", partitions.first);
  }
  ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare("DELETE FROM clusters WHERE id = ?1"));
  stmt.BindText(1, id);
  absl::Status s = stmt.Run();  // cluster_agents rows go with it (ON DELETE CASCADE)
  if (absl::IsFailedPrecondition(s)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cluster ", AbslView(id), " is still in use: ", s.message()));
  }
  RETURN_IF_ERROR(s);
  if (conn_->changes() == 0)
    return absl::NotFoundError(absl::StrCat("cluster ", AbslView(id), " not found"));
  return absl::OkStatus();
}

absl::Status SqliteTxn::InsertAllocation(const Allocation& allocation) {
  if (change_ != nullptr) change_->TouchAllocation(allocation.id);
  Savepoint sp(conn_, "insert_allocation");
  RETURN_IF_ERROR(sp.status());
  {
    ASSIGN_OR_RETURN(Statement stmt,
                     conn_->Prepare("INSERT INTO allocations (id, cluster_id) VALUES (?1, ?2)"));
    stmt.BindText(1, allocation.id).BindText(2, allocation.cluster_id);
    absl::Status s = stmt.Run();
    if (absl::IsAlreadyExists(s)) {
      return absl::AlreadyExistsError(
          absl::StrCat("allocation ", allocation.id, " already exists"));
    }
    if (absl::IsFailedPrecondition(s)) {
      return absl::FailedPreconditionError(absl::StrCat("allocation ", allocation.id, ": cluster ",
                                                        allocation.cluster_id, " does not exist"));
    }
    RETURN_IF_ERROR(s);
  }
  for (size_t i = 0; i < allocation.agent_ids.size(); ++i) {
    const std::string& agent_id = allocation.agent_ids[i];
    // An allocation takes agents of its own cluster only.
    ASSIGN_OR_RETURN(std::string cluster, ClusterOfAgent(agent_id));
    if (cluster != allocation.cluster_id) {
      return absl::FailedPreconditionError(absl::StrCat("allocation ", allocation.id, ": agent ",
                                                        agent_id, " is not in cluster ",
                                                        allocation.cluster_id));
    }
    ASSIGN_OR_RETURN(
        Statement stmt,
        conn_->Prepare("INSERT INTO allocation_agents (allocation_id, position, agent_id)"
                       " VALUES (?1, ?2, ?3)"));
    stmt.BindText(1, allocation.id).BindInt(2, static_cast<int64_t>(i)).BindText(3, agent_id);
    absl::Status s = stmt.Run();
    if (absl::IsAlreadyExists(s)) {
      absl::StatusOr<std::string> other = AllocationOfAgent(agent_id);
      if (other.ok() && *other == allocation.id) {
        return absl::InvalidArgumentError(
            absl::StrCat("allocation ", allocation.id, ": agent ", agent_id, " is listed twice"));
      }
      return absl::AlreadyExistsError(
          absl::StrCat("agent ", agent_id, " is already in allocation ", other.ok() ? *other : ""));
    }
    RETURN_IF_ERROR(s);
  }
  return sp.Release();
}

absl::Status SqliteTxn::DeleteAllocation(std::string_view id) {
  if (change_ != nullptr) change_->TouchAllocation(id);
  ASSIGN_OR_RETURN(
      Users partitions,
      FindUsers(conn_, "SELECT COUNT(*), MIN(id) FROM partitions WHERE allocation_id = ?1", id));
  if (partitions.count > 0) {
    return StillUsedError("allocation", id, partitions.count, "partition", partitions.first);
  }
  ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare("DELETE FROM allocations WHERE id = ?1"));
  stmt.BindText(1, id);
  absl::Status s = stmt.Run();  // allocation_agents rows go with it
  if (absl::IsFailedPrecondition(s)) {
    return absl::FailedPreconditionError(
        absl::StrCat("allocation ", AbslView(id), " is still in use: ", s.message()));
  }
  RETURN_IF_ERROR(s);
  if (conn_->changes() == 0) {
    return absl::NotFoundError(absl::StrCat("allocation ", AbslView(id), " not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteTxn::InsertPartition(const Partition& partition) {
  Savepoint sp(conn_, "insert_partition");
  RETURN_IF_ERROR(sp.status());
  {
    ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare(InsertPartitionSql()));
    BindPartitionRow(stmt, partition);
    absl::Status s = stmt.Run();
    if (absl::IsAlreadyExists(s)) {
      return absl::AlreadyExistsError(absl::StrCat("partition ", partition.id, " already exists"));
    }
    if (!s.ok()) return PartitionReferenceError(conn_, partition, s);
  }
  RETURN_IF_ERROR(InsertPartitionIpus(conn_, partition));
  return sp.Release();
}

absl::Status SqliteTxn::UpdatePartition(const Partition& partition) {
  Savepoint sp(conn_, "update_partition");
  RETURN_IF_ERROR(sp.status());
  RETURN_IF_ERROR(UpdatePartitionState(partition));
  {
    ASSIGN_OR_RETURN(Statement stmt,
                     conn_->Prepare("DELETE FROM partition_ipus WHERE partition_id = ?1"));
    stmt.BindText(1, partition.id);
    RETURN_IF_ERROR(stmt.Run());
  }
  RETURN_IF_ERROR(InsertPartitionIpus(conn_, partition));
  return sp.Release();
}

absl::Status SqliteTxn::UpdatePartitionState(const Partition& partition) {
  ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare(UpdatePartitionSql()));
  BindPartitionRow(stmt, partition);
  absl::Status s = stmt.Run();
  if (!s.ok()) return PartitionReferenceError(conn_, partition, s);
  if (conn_->changes() == 0) {
    return absl::NotFoundError(absl::StrCat("partition ", partition.id, " not found"));
  }
  return absl::OkStatus();
}

absl::Status SqliteTxn::DeletePartition(std::string_view id) {
  ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare("DELETE FROM partitions WHERE id = ?1"));
  stmt.BindText(1, id);
  RETURN_IF_ERROR(stmt.Run());  // partition_ipus rows cascade
  if (conn_->changes() == 0) {
    return absl::NotFoundError(absl::StrCat("partition ", AbslView(id), " not found"));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> SqliteTxn::NextGeneration() {
  ASSIGN_OR_RETURN(
      int64_t next,
      conn_->QueryInt(
          "UPDATE meta SET value = value + 1 WHERE key = 'generation' RETURNING value"));
  return static_cast<uint64_t>(next);
}

}  // namespace vipu::storage
