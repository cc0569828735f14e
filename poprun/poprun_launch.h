// The mpirun command poprun runs: global options, then one app context per
// instance with its own environment, host and NUMA binding. Pure functions, so
// tests check the exact argv.
#ifndef VIPU_POPRUN_POPRUN_LAUNCH_H_
#define VIPU_POPRUN_POPRUN_LAUNCH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/common/client_config.h"
#include "poprun/poprun_options.h"

namespace vipu::poprun {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// Everything the launch needs beyond the options, resolved by the runner.
struct LaunchContext {
  std::string mpirun = "mpirun";
  std::string vipu_host;  // empty in offline mode: no IPUOF_VIPU_API_*
  // With hosts: the server address for each host's instances (see
  // poprun_hosts.h); empty: vipu_host everywhere.
  std::vector<std::string> vipu_host_per_host;
  uint32_t vipu_port = 0;
  uint32_t vipu_timeout = 0;
  std::string partition_id;
  uint32_t num_gcds = 1;
  std::string target_options;  // JSON; empty: not exported
  std::string ipuof_log_level = "WARN";
  std::string cache_dir;        // empty: no executable cache
  std::string tf_poplar_flags;  // TF_POPLAR_FLAGS from poprun's environment
  uint32_t numa_nodes = 1;      // per host; binding only with > 1
  std::string numactl = "numactl";
  // Forwarded by name (`-x PATH`); the runner keeps those that are set.
  std::vector<std::string> forwarded = {"PATH", "LD_LIBRARY_PATH", "PYTHONPATH"};
  // Who the instances attach as (CredentialEnvironment): set in mpirun's own
  // environment and forwarded by name only, so that the access key is on no
  // command line, neither mpirun's nor the one poprun logs.
  EnvList credentials;
};

// The VIPU_CLI_API_* variables that give instances the credentials poprun
// resolved (from its environment or vipu-cli.hcl): user id, access key and
// TLS files, each when set; TLS paths made absolute, since an instance may
// start elsewhere. Empty for an unauthenticated plaintext server.
EnvList CredentialEnvironment(const cli::ClientConfig& config);

// The variables an instance gets: POPDIST_*, IPUOF_VIPU_API_*,
// IPUOF_LOG_LEVEL, POPLAR_TARGET_OPTIONS, POPDIST_AUTOREPORT_DIRECTORY with
// --autoreport-dir and, with a cache, POPTORCH_CACHE_DIR, POPART_CACHE_DIR,
// POPXL_CACHE_DIR and TF_POPLAR_FLAGS.
EnvList InstanceEnvironment(const PoprunOptions& options, const LaunchContext& context,
                            uint32_t instance);

// NUMA nodes of the `local_index`-th of `local_instances` instances on a
// host with `nodes` nodes: a contiguous block when there are enough nodes,
// round robin otherwise (spreadnuma).
std::vector<uint32_t> SpreadNuma(uint32_t nodes, uint32_t local_instances, uint32_t local_index);

// mpirun's global mapping and binding options for a placement: spreadnuma
// leaves binding to numactl, scattersocket, scatternuma and close bind each
// instance to one core mapped round robin over sockets, over NUMA nodes, or
// onto consecutive cores; disabled adds nothing, so the user's --map-by and
// --bind-to in --mpi-global-args apply.
const std::vector<std::string>& PlacementArgs(ProcessPlacement placement);

// The full argv, mpirun first. Credentials appear as `-x NAME` only; the
// caller puts their values into mpirun's environment.
std::vector<std::string> BuildMpirunCommand(const PoprunOptions& options,
                                            const LaunchContext& context);

// Each element single-quoted, as poprun logs it: '--tag-output' 'a b'.
std::string QuoteCommand(const std::vector<std::string>& argv);

// How much of the start of mpirun's stderr poprun keeps for
// ExplainMpirunFailure: mpirun refuses before any instance writes.
inline constexpr size_t kMpirunStderrHead = 8192;

// poprun's one-line explanation of a refusal mpirun printed at the start of
// its stderr (`stderr_head`), for a run that failed; nullopt when it
// recognises none. Open MPI refuses to run as root unless told to.
std::optional<std::string> ExplainMpirunFailure(const std::string& stderr_head);

}  // namespace vipu::poprun

#endif  // VIPU_POPRUN_POPRUN_LAUNCH_H_
