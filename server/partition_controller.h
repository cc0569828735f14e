// The partition lifecycle (DESIGN.md): validate, place, commit, reply; then
// configure the agents in the background and commit the outcome. Every
// operation is fenced by the partition's generation, so a late result of an
// older operation never overwrites a newer one, and agents refuse it.
#ifndef VIPU_SERVER_PARTITION_CONTROLLER_H_
#define VIPU_SERVER_PARTITION_CONTROLLER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fabric/ipuof_config.h"
#include "fabric/types.h"
#include "server/agent_driver.h"
#include "server/agent_registry.h"
#include "server/work_queue.h"
#include "storage/store.h"

namespace vipu::server {

// What an agent says it holds (from Register).
struct HeldPartition {
  std::string partition_id;
  uint64_t generation = 0;
};

class PartitionController {
 public:
  PartitionController(storage::Store* store, const AgentRegistry* registry, AgentDriver* driver,
                      int worker_threads);
  ~PartitionController();

  // Commits the partition as PS_PENDING/POS_CREATING and returns it; agents
  // are configured afterwards.
  absl::StatusOr<fabric::Partition> Create(const fabric::PartitionRequest& request,
                                           const std::string& owner);
  // Releases the IPUs on the agents, then deletes the partition. With
  // `force`, agent errors are logged and the partition is deleted anyway.
  absl::Status Remove(const std::string& id, bool force);
  // New generation, PS_PENDING/POS_RESETTING; agents reset afterwards.
  absl::Status Reset(const std::string& id);

  absl::StatusOr<fabric::Partition> Get(const std::string& id);
  absl::StatusOr<std::vector<fabric::Partition>> List(const std::string& allocation_id);
  // All GCDs, or just `gcd`.
  absl::StatusOr<std::vector<fabric::GcdConfig>> IpuofConfigs(const std::string& id,
                                                              std::optional<uint32_t> gcd);

  // After an agent (re)registers: release what the database does not want
  // there, re-push what it lost.
  void ReconcileAgent(const std::string& agent_id, std::vector<HeldPartition> held);
  // After a server start: finish operations a crash interrupted.
  void Recover();

  // Waits for queued background work (tests, shutdown).
  void Stop();

 private:
  enum class Job { kConfigure, kReset };
  void Converge(const std::string& id, uint64_t generation, Job job);

  storage::Store* store_;
  const AgentRegistry* registry_;
  AgentDriver* driver_;
  WorkQueue work_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_PARTITION_CONTROLLER_H_
