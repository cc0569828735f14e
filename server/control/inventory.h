// Agents, clusters and allocations: the admin side of the object model.
// Each operation validates completely, then commits in one transaction.
//
// Borrows the store, which must outlive it. Thread-safe: it keeps no state
// of its own, so the gRPC threads call it at once and the Store orders
// their transactions.
#ifndef VIPU_SERVER_CONTROL_INVENTORY_H_
#define VIPU_SERVER_CONTROL_INVENTORY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fabric/types.h"
#include "storage/store.h"

namespace vipu::server {

class Inventory {
 public:
  explicit Inventory(storage::Store* store) : store_(store) {}

  absl::Status CreateAgent(const fabric::Agent& agent);
  absl::Status RemoveAgent(const std::string& id);
  absl::StatusOr<fabric::Agent> GetAgent(const std::string& id);
  absl::StatusOr<std::vector<fabric::Agent>> ListAgents();
  // Cluster of each agent ("" when none), same order as `agent_ids`.
  absl::StatusOr<std::vector<std::string>> ClustersOf(const std::vector<std::string>& agent_ids);

  // What the store says about answering now (storage::Store::Answerable).
  absl::Status Answerable() const { return store_->Answerable(); }

  // Registration of a running agent: updates its address, or adds it when
  // `auto_add` (simulated pods); NOT_FOUND for an unknown agent otherwise.
  absl::Status RecordRegistration(const fabric::Agent& agent, bool auto_add);
  // The same for many agents in one transaction (16,384 machines
  // registering must not cost one durable commit each). One status per agent,
  // in order; an error of the transaction itself (nothing recorded) otherwise.
  absl::StatusOr<std::vector<absl::Status>> RecordRegistrations(
      const std::vector<fabric::Agent>& agents, bool auto_add);

  absl::Status CreateCluster(const fabric::Cluster& cluster);
  absl::Status RemoveCluster(const std::string& id);
  absl::StatusOr<std::vector<fabric::Cluster>> ListClusters();

  // Empty agent list: every agent of the cluster.
  absl::Status CreateAllocation(const fabric::Allocation& allocation);
  absl::Status RemoveAllocation(const std::string& id);
  absl::StatusOr<std::vector<fabric::Allocation>> ListAllocations();

 private:
  storage::Store* store_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_INVENTORY_H_
