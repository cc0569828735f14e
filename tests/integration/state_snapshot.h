// What a running vipu-server and its agents say about the partitions, read
// from the outside: the user and admin APIs, each agent's GetInfo, and the
// generation numbers from the database file (read-only; the user API does
// not show them). The reliability tests take one after a crash or a race and
// check the invariants of docs/architecture.md against it.
#ifndef VIPU_TESTS_INTEGRATION_STATE_SNAPSHOT_H_
#define VIPU_TESTS_INTEGRATION_STATE_SNAPSHOT_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/integration/harness.h"
#include "vipuuser.pb.h"

namespace vipu::testing {

// (agent id, IPU# on the machine).
using MachineIpu = std::pair<std::string, uint32_t>;

// One partition row of the database.
struct StoredPartition {
  uint64_t generation = 0;
  int ready_state = 0;      // virmgrpc::PartitionReadyState number
  int operation_state = 0;  // virmgrpc::PartitionOperationState number
  std::set<MachineIpu> ipus;
};

// What one agent holds: partition id -> (generation, IPU#s).
struct HeldByAgent {
  std::map<std::string, std::pair<uint64_t, std::set<uint32_t>>> partitions;
};

struct StateSnapshot {
  std::map<std::string, virmgrpc::Partition> listed;  // UserService.ListPartitions
  std::map<std::string, StoredPartition> stored;      // the database
  std::map<std::string, HeldByAgent> agents;          // Agent.GetInfo per agent of ListAgents
};

// Reads everything; an RPC or database error is returned as is.
absl::StatusOr<StateSnapshot> TakeSnapshot(const ServerProcess& server);

// What the user and admin APIs list (partitions, agents, clusters,
// allocations) as text, without what moves by itself (an agent's heartbeat
// and status). Equal texts before and after a refused request show that it
// changed nothing. An RPC error is returned as is.
absl::StatusOr<std::string> ListedState(const ServerProcess& server);

// Invariants that hold at any moment: stored partitions are listed, no topology
// position and no machine IPU in two partitions, at most `pod_size` IPUs in
// partitions. Returns one line per violation.
std::vector<std::string> CheckPlacementInvariants(const StateSnapshot& s, uint32_t pod_size);

// Agents agree with the database: every PS_ACTIVE/POS_IDLE partition is held
// by each of its machines at its generation with exactly its IPUs, and (with
// `no_orphans`, for a quiet server) no agent holds a partition the database
// does not have or holds one at a newer generation than the database's.
std::vector<std::string> CheckAgentsAgree(const StateSnapshot& s, bool no_orphans);

}  // namespace vipu::testing

#endif  // VIPU_TESTS_INTEGRATION_STATE_SNAPSHOT_H_
