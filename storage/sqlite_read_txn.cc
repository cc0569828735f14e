// Queries of SqliteTxn (storage/sqlite_store.h): SQL for every ReadTxn method but users.
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/connection.h"
#include "storage/membership_cache.h"
#include "storage/sqlite_partition_columns.h"
#include "storage/sqlite_store.h"

namespace vipu::storage {
namespace {

using fabric::Agent;
using fabric::Allocation;
using fabric::Cluster;
using fabric::IpuRef;
using fabric::Partition;
using fabric::PartitionIpu;

#define IPU_COLUMNS \
  "pi.partition_id, pi.agent_id, pi.ipu, pi.ild, pi.ild_routing, pi.topology_id, pi.routing_id"

// Moves `run` (the IPUs of one partition, in position order) into `ipus`
// with one allocation, instead of growing `ipus` row by row.
void TakeRun(std::vector<PartitionIpu>* run, std::vector<PartitionIpu>* ipus) {
  ipus->assign(std::make_move_iterator(run->begin()), std::make_move_iterator(run->end()));
  run->clear();
}

// Loads partitions with two queries whatever their number: the rows (ordered
// by id) and their IPUs (ordered by partition id, position), merged in one
// pass. Both queries take the same optional text parameter ?1. Partitions
// and IPUs are built in place: a list of 10,000 is one allocation per
// partition's IPU vector, none for ids that fit std::string's inline buffer.
// `count_sql` (optional, same parameter) sizes the result up front.
absl::StatusOr<std::vector<Partition>> LoadPartitions(Connection* conn,
                                                      std::string_view partitions_sql,
                                                      std::string_view ipus_sql,
                                                      std::string_view param,
                                                      std::string_view count_sql = {}) {
  std::vector<Partition> partitions;
  if (!count_sql.empty()) {
    ASSIGN_OR_RETURN(Statement stmt, conn->Prepare(count_sql));
    if (!param.empty()) stmt.BindText(1, param);
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (row) partitions.reserve(static_cast<size_t>(stmt.ColumnInt(0)));
  }
  {
    ASSIGN_OR_RETURN(Statement stmt, conn->Prepare(partitions_sql));
    if (!param.empty()) stmt.BindText(1, param);
    while (true) {
      ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      RETURN_IF_ERROR(ReadPartitionRow(stmt, &partitions.emplace_back()));
    }
  }
  if (partitions.empty()) return partitions;
  ASSIGN_OR_RETURN(Statement stmt, conn->Prepare(ipus_sql));
  if (!param.empty()) stmt.BindText(1, param);
  size_t i = 0;
  std::vector<PartitionIpu> run;  // IPU rows of partitions[i] so far
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) break;
    std::string_view partition_id = stmt.ColumnView(0);
    if (partitions[i].id != partition_id) {
      if (!run.empty()) TakeRun(&run, &partitions[i].ipus);
      // Both lists are in BINARY (memcmp) order, as std::string compares.
      while (i < partitions.size() && partitions[i].id < partition_id) ++i;
      if (i == partitions.size() || partitions[i].id != partition_id) {
        return absl::InternalError(absl::StrCat("IPU row of partition ", AbslView(partition_id),
                                                " does not match a partition row"));
      }
    }
    PartitionIpu& ipu = run.emplace_back();
    ipu.ipu.agent_id = stmt.ColumnView(1);
    ipu.ipu.ipu = static_cast<uint32_t>(stmt.ColumnInt(2));
    ipu.ild = static_cast<uint32_t>(stmt.ColumnInt(3));
    ipu.ild_routing = static_cast<uint32_t>(stmt.ColumnInt(4));
    ipu.topology_id = static_cast<uint32_t>(stmt.ColumnInt(5));
    ipu.routing_id = static_cast<uint32_t>(stmt.ColumnInt(6));
  }
  if (!run.empty()) TakeRun(&run, &partitions[i].ipus);
  return partitions;
}

// Agent ids of a cluster or allocation, in position order.
absl::StatusOr<std::vector<std::string>> LoadMembers(Connection* conn, std::string_view sql,
                                                     std::string_view owner_id) {
  ASSIGN_OR_RETURN(Statement stmt, conn->Prepare(sql));
  stmt.BindText(1, owner_id);
  std::vector<std::string> ids;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return ids;
    ids.push_back(stmt.ColumnText(0));
  }
}

// The first column of every row of `sql` (no parameter).
absl::StatusOr<std::vector<std::string>> LoadIds(Connection* conn, std::string_view sql) {
  ASSIGN_OR_RETURN(Statement stmt, conn->Prepare(sql));
  std::vector<std::string> ids;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return ids;
    ids.push_back(stmt.ColumnText(0));
  }
}

absl::StatusOr<int64_t> QueryCount(Connection* conn, std::string_view sql, std::string_view param) {
  ASSIGN_OR_RETURN(Statement stmt, conn->Prepare(sql));
  stmt.BindText(1, param);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  return row ? stmt.ColumnInt(0) : 0;
}

Agent AgentFromRow(const Statement& row) {
  Agent a;
  a.id = row.ColumnText(0);
  a.host = row.ColumnText(1);
  a.port = static_cast<uint32_t>(row.ColumnInt(2));
  a.machine_type = static_cast<fabric::MachineType>(row.ColumnInt(3));
  return a;
}

constexpr char kClusterMembersSql[] =
    "SELECT agent_id FROM cluster_agents WHERE cluster_id = ?1 ORDER BY position";
constexpr char kAllocationMembersSql[] =
    "SELECT agent_id FROM allocation_agents WHERE allocation_id = ?1 ORDER BY position";

// A cluster and its members as the snapshot has them.
absl::StatusOr<Cluster> LoadCluster(Connection* conn, std::string_view id) {
  Cluster c;
  {
    ASSIGN_OR_RETURN(
        Statement stmt,
        conn->Prepare("SELECT num_ilds, topology, cluster_topology FROM clusters WHERE id = ?1"));
    stmt.BindText(1, id);
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return absl::NotFoundError(absl::StrCat("cluster ", AbslView(id), " not found"));
    c.id = std::string(id);
    c.num_ilds = static_cast<uint32_t>(stmt.ColumnInt(0));
    c.topology = static_cast<fabric::IldTopology>(stmt.ColumnInt(1));
    c.cluster_topology = static_cast<fabric::ClusterTopology>(stmt.ColumnInt(2));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> members, LoadMembers(conn, kClusterMembersSql, id));
  c.agent_ids = std::move(members);
  return c;
}

// An allocation and its members as the snapshot has them.
absl::StatusOr<Allocation> LoadAllocation(Connection* conn, std::string_view id) {
  ASSIGN_OR_RETURN(std::string cluster,
                   conn->QueryText("SELECT cluster_id FROM allocations WHERE id = ?1", id));
  if (cluster.empty())
    return absl::NotFoundError(absl::StrCat("allocation ", AbslView(id), " not found"));
  Allocation a;
  a.id = std::string(id);
  a.cluster_id = std::move(cluster);
  ASSIGN_OR_RETURN(std::vector<std::string> members, LoadMembers(conn, kAllocationMembersSql, id));
  a.agent_ids = std::move(members);
  return a;
}

}  // namespace

absl::StatusOr<Agent> SqliteTxn::GetAgent(std::string_view id) {
  ASSIGN_OR_RETURN(Statement stmt,
                   conn_->Prepare("SELECT id, host, port, machine_type FROM agents WHERE id = ?1"));
  stmt.BindText(1, id);
  ASSIGN_OR_RETURN(bool row, stmt.Step());
  if (!row) return absl::NotFoundError(absl::StrCat("agent ", AbslView(id), " not found"));
  return AgentFromRow(stmt);
}

absl::StatusOr<std::vector<Agent>> SqliteTxn::ListAgents() {
  ASSIGN_OR_RETURN(Statement stmt,
                   conn_->Prepare("SELECT id, host, port, machine_type FROM agents ORDER BY id"));
  std::vector<Agent> agents;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return agents;
    agents.push_back(AgentFromRow(stmt));
  }
}

absl::StatusOr<Cluster> SqliteTxn::GetCluster(std::string_view id) {
  ASSIGN_OR_RETURN(std::shared_ptr<const Cluster> c, ClusterRef(id));
  return *c;
}

absl::StatusOr<std::vector<Cluster>> SqliteTxn::ListClusters() {
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const Cluster>> refs, ClusterRefs());
  std::vector<Cluster> clusters;
  clusters.reserve(refs.size());
  for (const auto& c : refs) clusters.push_back(*c);
  return clusters;
}

absl::Status SqliteTxn::BeginSnapshot() {
  if (sqlite3_txn_state(conn_->db(), "main") != SQLITE_TXN_NONE) return absl::OkStatus();
  // Any read of the file starts the read transaction, and with it the snapshot.
  ASSIGN_OR_RETURN(Statement stmt, conn_->Prepare("SELECT 1 FROM clusters LIMIT 1"));
  return stmt.Step().status();
}

absl::StatusOr<std::shared_ptr<const Cluster>> SqliteTxn::ClusterRef(std::string_view id) {
  if (cache_ != nullptr) {
    RETURN_IF_ERROR(BeginSnapshot());
    if (auto hit = cache_->FindCluster(id, epoch_)) return hit;
  }
  ASSIGN_OR_RETURN(Cluster loaded, LoadCluster(conn_, id));
  auto value = std::make_shared<const Cluster>(std::move(loaded));
  if (cache_ != nullptr) cache_->PutCluster(epoch_, value);
  return value;
}

absl::StatusOr<std::vector<std::shared_ptr<const Cluster>>> SqliteTxn::ClusterRefs() {
  ASSIGN_OR_RETURN(std::vector<std::string> ids,
                   LoadIds(conn_, "SELECT id FROM clusters ORDER BY id"));
  std::vector<std::shared_ptr<const Cluster>> clusters;
  clusters.reserve(ids.size());
  for (const std::string& id : ids) {
    ASSIGN_OR_RETURN(std::shared_ptr<const Cluster> c, ClusterRef(id));
    clusters.push_back(std::move(c));
  }
  return clusters;
}

absl::StatusOr<std::string> SqliteTxn::ClusterOfAgent(std::string_view agent_id) {
  return conn_->QueryText("SELECT cluster_id FROM cluster_agents WHERE agent_id = ?1", agent_id);
}

absl::StatusOr<Allocation> SqliteTxn::GetAllocation(std::string_view id) {
  ASSIGN_OR_RETURN(std::shared_ptr<const Allocation> a, AllocationRef(id));
  return *a;
}

absl::StatusOr<std::vector<Allocation>> SqliteTxn::ListAllocations() {
  ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const Allocation>> refs, AllocationRefs());
  std::vector<Allocation> allocations;
  allocations.reserve(refs.size());
  for (const auto& a : refs) allocations.push_back(*a);
  return allocations;
}

absl::StatusOr<std::shared_ptr<const Allocation>> SqliteTxn::AllocationRef(std::string_view id) {
  if (cache_ != nullptr) {
    RETURN_IF_ERROR(BeginSnapshot());
    if (auto hit = cache_->FindAllocation(id, epoch_)) return hit;
  }
  ASSIGN_OR_RETURN(Allocation loaded, LoadAllocation(conn_, id));
  auto value = std::make_shared<const Allocation>(std::move(loaded));
  if (cache_ != nullptr) cache_->PutAllocation(epoch_, value);
  return value;
}

absl::StatusOr<std::vector<std::shared_ptr<const Allocation>>> SqliteTxn::AllocationRefs() {
  ASSIGN_OR_RETURN(std::vector<std::string> ids,
                   LoadIds(conn_, "SELECT id FROM allocations ORDER BY id"));
  std::vector<std::shared_ptr<const Allocation>> allocations;
  allocations.reserve(ids.size());
  for (const std::string& id : ids) {
    ASSIGN_OR_RETURN(std::shared_ptr<const Allocation> a, AllocationRef(id));
    allocations.push_back(std::move(a));
  }
  return allocations;
}

absl::StatusOr<std::string> SqliteTxn::AllocationOfAgent(std::string_view agent_id) {
  return conn_->QueryText("SELECT allocation_id FROM allocation_agents WHERE agent_id = ?1",
                          agent_id);
}

absl::StatusOr<Partition> SqliteTxn::GetPartition(std::string_view id) {
  static const std::string* const partitions_sql =
      new std::string(SelectPartitionsSql("WHERE id = ?1"));
  ASSIGN_OR_RETURN(
      std::vector<Partition> found,
      LoadPartitions(conn_, *partitions_sql,
                     "SELECT " IPU_COLUMNS
                     " FROM partition_ipus pi WHERE pi.partition_id = ?1 ORDER BY pi.position",
                     id));
  // An empty id binds nothing above, so check the id, not only the count.
  if (found.size() != 1 || found[0].id != id) {
    return absl::NotFoundError(absl::StrCat("partition ", AbslView(id), " not found"));
  }
  return std::move(found[0]);
}

absl::StatusOr<std::vector<Partition>> SqliteTxn::ListPartitions(std::string_view allocation_id) {
  static const std::string* const all_sql = new std::string(SelectPartitionsSql("ORDER BY id"));
  static const std::string* const of_allocation_sql =
      new std::string(SelectPartitionsSql("WHERE allocation_id = ?1 ORDER BY id"));
  if (allocation_id.empty()) {
    return LoadPartitions(conn_, *all_sql,
                          "SELECT " IPU_COLUMNS
                          " FROM partition_ipus pi ORDER BY pi.partition_id, pi.position",
                          "", "SELECT COUNT(*) FROM partitions");
  }
  return LoadPartitions(conn_, *of_allocation_sql,
                        // IN (...) walks the primary key in order: no sort.
                        "SELECT " IPU_COLUMNS
                        " FROM partition_ipus pi WHERE pi.partition_id IN"
                        " (SELECT id FROM partitions WHERE allocation_id = ?1)"
                        " ORDER BY pi.partition_id, pi.position",
                        allocation_id, "SELECT COUNT(*) FROM partitions WHERE allocation_id = ?1");
}

absl::StatusOr<std::vector<Partition>> SqliteTxn::PartitionsOnAgent(std::string_view agent_id) {
  static const std::string* const partitions_sql = new std::string(SelectPartitionsSql(
      "WHERE id IN (SELECT partition_id FROM partition_ipus WHERE agent_id = ?1) ORDER BY id"));
  if (agent_id.empty()) return std::vector<Partition>();
  return LoadPartitions(conn_, *partitions_sql,
                        "SELECT " IPU_COLUMNS
                        " FROM partition_ipus pi WHERE pi.partition_id IN"
                        " (SELECT partition_id FROM partition_ipus WHERE agent_id = ?1)"
                        " ORDER BY pi.partition_id, pi.position",
                        agent_id);
}

absl::StatusOr<int64_t> SqliteTxn::CountPartitionsInCluster(std::string_view cluster_id) {
  return QueryCount(conn_, "SELECT COUNT(*) FROM partitions WHERE cluster_id = ?1", cluster_id);
}

absl::StatusOr<int64_t> SqliteTxn::CountPartitionsInAllocation(std::string_view allocation_id) {
  return QueryCount(conn_, "SELECT COUNT(*) FROM partitions WHERE allocation_id = ?1",
                    allocation_id);
}

absl::StatusOr<std::set<IpuRef>> SqliteTxn::UsedIpus(std::string_view cluster_id) {
  // Driven by the IPUs held (CROSS JOIN fixes the order): a probe of the
  // agent's cluster per held IPU, instead of a probe of partition_ipus per
  // machine of the cluster, 16,384 on every create of a large pod however
  // few partitions it holds.
  ASSIGN_OR_RETURN(
      Statement stmt,
      conn_->Prepare(
          "SELECT pi.agent_id, pi.ipu FROM partition_ipus pi"
          " CROSS JOIN cluster_agents ca ON ca.agent_id = pi.agent_id WHERE ca.cluster_id = ?1"));
  stmt.BindText(1, cluster_id);
  std::set<IpuRef> used;
  while (true) {
    ASSIGN_OR_RETURN(bool row, stmt.Step());
    if (!row) return used;
    used.insert(IpuRef{stmt.ColumnText(0), static_cast<uint32_t>(stmt.ColumnInt(1))});
  }
}

absl::StatusOr<uint64_t> SqliteTxn::LastGeneration() {
  ASSIGN_OR_RETURN(int64_t last,
                   conn_->QueryInt("SELECT value FROM meta WHERE key = 'generation'"));
  return static_cast<uint64_t>(last);
}

}  // namespace vipu::storage
