// poprun's side of V-IPU: which server, which partition, creating or
// updating it to fit the launch, waiting for PS_ACTIVE, the reset rule, and
// removing what poprun created.
#ifndef VIPU_POPRUN_POPRUN_PARTITION_H_
#define VIPU_POPRUN_POPRUN_PARTITION_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/common/client_config.h"
#include "cli/common/connection.h"
#include "fabric/types.h"
#include "poprun/poprun_log.h"
#include "poprun/poprun_options.h"
#include "poprun/poprun_target_options.h"

namespace vipu::poprun {

struct ServerChoice {
  cli::ClientConfig config;
  bool from_vipu_config = false;  // picked up from vipu's env or vipu-cli.hcl
};

// --vipu-server-host/-port/-timeout, else IPUOF_VIPU_API_HOST/PORT/TIMEOUT,
// else the vipu CLI configuration (VIPU_CLI_API_*, /etc/vipu/vipu-cli.hcl),
// else localhost:8090 and 120 s.
absl::StatusOr<ServerChoice> ResolveServer(const PoprunOptions& options,
                                           const cli::Environment& env);

// What the launch runs on.
struct PartitionPlan {
  std::string id;
  bool created = false;  // by this poprun (also when re-created by --update-partition)
  bool reconfigurable = false;
  uint32_t num_gcds = 1;
  uint32_t num_ilds = 1;
  TargetOptions target_options;  // from the partition
};

// Whether the reset rule asks for a reset: --reset-partition when given,
// else non-reconfigurable partitions only. A partition poprun has just
// created is fresh and is reset only when asked explicitly.
bool ShouldReset(const std::optional<bool>& flag, bool reconfigurable, bool created);

// The GCD instance `instance` of `num_instances` attaches to.
uint32_t GcdOfInstance(uint32_t instance, uint32_t num_instances, uint32_t num_gcds);

// What poprun asks the server for when it creates partition `id` for the
// launch: the IPUs the replicas need, one GCD per instance, --num-ilds,
// --vipu-allocation, --vipu-cluster and --sync-type; the rest is the server's
// choice. INVALID_ARGUMENT naming --sync-type and the accepted values when
// options.sync_type is neither empty nor a sync type, as the option parser
// reports it: the partition is then not created.
absl::StatusOr<fabric::PartitionRequest> CreateRequest(const PoprunOptions& options,
                                                       const std::string& id);

// Borrows the connection, options, environment and logger, which must
// outlive it. Not thread-safe: poprun's one thread prepares and removes.
class PartitionManager {
 public:
  PartitionManager(cli::Connection& conn, const PoprunOptions& options, const cli::Environment& env,
                   const Logger& log)
      : conn_(conn), options_(options), env_(env), log_(log) {}

  // Resolves, checks, creates or updates, waits for PS_ACTIVE (with
  // --vipu-partition-attempts) and resets. Nothing is created when a check
  // fails: an unreachable server, several partitions and none named, a
  // mismatch without --update-partition, a partition too large for the
  // allocation.
  absl::StatusOr<PartitionPlan> Prepare();

  // RemovePartition on the server.
  absl::Status Remove(const std::string& id);

  // The partition this poprun created (empty if none), also when Prepare
  // failed after creating it, so the caller can clean up.
  const std::string& created_partition() const { return created_; }

 private:
  absl::Status CheckFitsAllocation(uint32_t size);
  absl::Status Create(const std::string& id);
  absl::Status WaitActive(const std::string& id);
  absl::Status Reset(const std::string& id);

  cli::Connection& conn_;
  const PoprunOptions& options_;
  const cli::Environment& env_;
  const Logger& log_;
  std::string created_;
};

}  // namespace vipu::poprun

#endif  // VIPU_POPRUN_POPRUN_PARTITION_H_
