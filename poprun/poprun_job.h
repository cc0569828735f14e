// One poprun launch as one object: the V-IPU server and the partition the
// launch runs on, the mpirun command with its environment, the executable
// cache and NUMA binding, mpirun itself, and the removal of what poprun
// created, also when the application fails or poprun is interrupted
// (SIGINT/SIGTERM are forwarded to mpirun first).
#ifndef VIPU_POPRUN_POPRUN_JOB_H_
#define VIPU_POPRUN_POPRUN_JOB_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/common/client_config.h"
#include "cli/common/connection.h"
#include "poprun/poprun_hosts.h"
#include "poprun/poprun_launch.h"
#include "poprun/poprun_log.h"
#include "poprun/poprun_options.h"
#include "poprun/poprun_partition.h"

namespace vipu::poprun {

// Owns the connection to the server, the partition poprun created and the
// temporary executable cache. Members are declared in the order Prepare
// builds them. Finish, or else the destructor, removes what was created in
// the reverse order: the temporary cache first, then the partition (unless
// --remove-partition=no), while the connection it is removed through is
// still open. The options, environment, logger and probe passed to Prepare
// are borrowed and must outlive the job. Not thread-safe: one thread
// prepares, launches and finishes; only the SIGINT/SIGTERM handler Prepare
// installs runs beside it, and it only reads and writes process-wide
// atomics and forwards the signal to mpirun.
class PoprunJob {
 public:
  // Called with Prepare's failure before anything it created is removed, so
  // that the error comes before the removal's log lines.
  using FailureReporter = std::function<void(const absl::Status&)>;

  // Reads the target options from POPLAR_TARGET_OPTIONS, finds mpirun
  // (POPRUN_MPIRUN, else mpirun on PATH), exports the configuration with
  // --export-config, installs the signal handlers, resolves the server,
  // checks that every host's instances reach it, prepares the partition
  // (PartitionManager), prints the topology, and sets up the executable
  // cache and NUMA binding. In offline mode the server is left alone. When
  // SIGINT or SIGTERM arrived by the time the partition is ready, it stops
  // there and Launch runs nothing. On failure `report` is called with the
  // status, what was created is removed, and the status is returned; its
  // message is the text of the "POPRUN ERROR: ..." line.
  static absl::StatusOr<std::unique_ptr<PoprunJob>> Prepare(const PoprunOptions& options,
                                                            const cli::Environment& env,
                                                            const Logger& log,
                                                            const HostProbe& probe,
                                                            const FailureReporter& report);
  // Does what Finish has not done yet; a failed removal is only logged.
  ~PoprunJob();

  PoprunJob(const PoprunJob&) = delete;
  PoprunJob& operator=(const PoprunJob&) = delete;

  // Runs mpirun and waits for it, forwarding SIGINT/SIGTERM. Returns its exit
  // code (128+signal when it was killed by one), 128+signal when poprun was
  // interrupted before mpirun ran or when mpirun exited 0 after poprun was
  // interrupted, and 1 when mpirun could not be started. Call once.
  int Launch();

  // Removes the temporary executable cache and the partition poprun created
  // (or logs that it is kept with --remove-partition=no). Returns `code`, or
  // 1 when `code` is 0 and removing the partition failed.
  int Finish(int code);

 private:
  PoprunJob(const PoprunOptions& options, const cli::Environment& env, const Logger& log,
            const HostProbe& probe);

  // The server and the partition; the launch context's server fields.
  absl::Status PrepareServerAndPartition();
  // The topology, target options, executable cache and NUMA binding.
  absl::Status PrepareLaunch();

  const PoprunOptions& options_;
  const cli::Environment& env_;
  const Logger& log_;
  const HostProbe& probe_;
  TargetOptions env_targets_;  // from POPLAR_TARGET_OPTIONS
  LaunchContext launch_;
  uint32_t num_ilds_ = 1;
  TargetOptions partition_targets_;
  std::unique_ptr<cli::Connection> conn_;
  std::unique_ptr<PartitionManager> manager_;  // uses *conn_
  std::string created_;                // the partition to remove; empty once removed or kept
  int interrupted_before_launch_ = 0;  // the signal, when it stopped Prepare
  std::string temp_cache_;             // removed at the end; empty if none
};

}  // namespace vipu::poprun

#endif  // VIPU_POPRUN_POPRUN_JOB_H_
