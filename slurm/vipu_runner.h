// Creates, inspects and removes the partition of a Slurm job by running the
// project's `vipu` command line, so that slurmd and slurmstepd load no gRPC
// of their own.
//
// Why a child process instead of linking the gRPC client: the plugin lives
// inside slurmd, slurmstepd, srun and sbatch, processes with their own
// threads, signal handlers and libraries. gRPC's threads and its fork
// handlers in those processes would be a risk Slurm does not expect, while a
// `vipu` child costs a few milliseconds per job and brings the CLI's own
// validation, waiting for ACTIVE and error messages with it.
//
// The access key never appears on a command line: it is read from the key
// file by this process (root in slurmstepd) and handed to the child in its
// environment, which only root and the child's user can read.
//
// Thread safety: none; one runner per callback, used by one thread.
#ifndef VIPU_SLURM_VIPU_RUNNER_H_
#define VIPU_SLURM_VIPU_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "slurm/spank_config.h"

namespace vipu::slurm {

// What `vipu get partition` says about one partition.
struct PartitionInfo {
  uint32_t size = 0;
  uint32_t gcds = 0;
  bool active = false;  // PS_ACTIVE
};

class VipuRunner {
 public:
  explicit VipuRunner(PluginConfig config) : config_(std::move(config)) {}

  // Reads api-access-key-file. FAILED_PRECONDITION
  // "api-access-key-file: cannot read '/f' (No such file...)" or
  // "... is empty" on failure. Needed before any call when a key file is
  // configured.
  absl::Status LoadCredentials();

  // Creates partition `id` for `request` and waits until it is ACTIVE
  // (`vipu create partition` waits, within api-timeout). On failure, removes
  // the partition in case the server made it before the failure (so a
  // refusal leaves nothing created) and returns the CLI's reason, e.g.
  // UNAVAILABLE "cannot reach vipu-server at h:p: ...". ALREADY_EXISTS when
  // a partition of that id exists; that one is left as it is.
  absl::Status CreatePartition(const std::string& id, const IpuRequest& request);

  // Removes partition `id` (force). A partition that does not exist counts
  // as removed: OK.
  absl::Status RemovePartition(const std::string& id);

  // NOT_FOUND when `id` does not exist; otherwise its size, GCDs and state.
  absl::StatusOr<PartitionInfo> GetPartition(const std::string& id);

  // Ids of every partition this user may see.
  absl::StatusOr<std::vector<std::string>> ListPartitions();

 private:
  struct Result {
    int exit_code = -1;
    std::string output;  // stdout and stderr, interleaved
  };
  // Runs `vipu <connection flags> args...`. Fails only when it cannot be
  // started or waited for.
  absl::StatusOr<Result> Run(const std::vector<std::string>& args);
  // `vipu`, the connection flags from the plugin's arguments, then `args`.
  std::vector<std::string> CommandLine(const std::vector<std::string>& args) const;
  // The status a failed run stands for: the CLI's last line, code from text.
  static absl::Status FailureOf(const Result& result);

  PluginConfig config_;
  std::string access_key_;
};

}  // namespace vipu::slurm

#endif  // VIPU_SLURM_VIPU_RUNNER_H_
