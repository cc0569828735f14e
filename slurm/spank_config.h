// The settings of the vipu_spank Slurm plugin: the arguments of its
// plugstack.conf line and the job options --ipus, --ipus-gcds and
// --ipus-reconfigurable, each checked by the rule a user or an administrator
// can act on.
//
// Thread safety: plain values and pure functions; safe from any thread.
#ifndef VIPU_SLURM_SPANK_CONFIG_H_
#define VIPU_SLURM_SPANK_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vipu::slurm {

inline constexpr const char* kDefaultVipuPath = "/usr/bin/vipu";
// Partition ids are "slurm_<jobid>", the name poprun's --vipu-partition and
// Graphcore's documentation expect.
inline constexpr const char* kPartitionPrefix = "slurm_";

// The plugstack.conf arguments. Keys are those of vipu-cli.hcl where one
// exists, so an administrator copies them from the CLI's configuration.
struct PluginConfig {
  // api-host=H (required): the server's members, comma-separated HOST,
  // HOST:PORT, [V6] or [V6]:PORT (wire/server_members.h); api-port for
  // the entries without a port.
  std::string api_host;
  uint32_t api_port = 0;                // api-port=P (required, 1..65535)
  uint32_t api_timeout_seconds = 120;   // api-timeout=S: each call to vipu-server
  std::string api_user_id;              // api-user-id=U
  std::string api_access_key_file;      // api-access-key-file=F: holds the access key
  std::string api_tls_ca;               // api-tls-ca=F
  std::string api_tls_cert;             // api-tls-cert=F
  std::string api_tls_key;              // api-tls-key=F
  std::string allocation;               // allocation=A: partitions are made in A
  std::string vipu = kDefaultVipuPath;  // vipu=PATH: the CLI the plugin runs
};

// Parses "key=value" arguments. Fails with INVALID_ARGUMENT naming the
// argument and the rule: unknown key, missing '=', empty value, a port or
// timeout out of range, a missing api-host/api-port, TLS cert without key
// (or either without a CA), an access key file without api-user-id.
// Files are not opened here: the plugin is also loaded by srun/sbatch on
// machines and as users that cannot read them.
absl::StatusOr<PluginConfig> ParsePluginArgs(const std::vector<std::string>& args);

// The job's request, from the command-line options.
struct IpuRequest {
  uint32_t ipus = 0;  // 0: the job asked for no IPUs
  uint32_t gcds = 1;
  bool reconfigurable = false;
};

// --ipus=N: a power of two in 1..1024. INVALID_ARGUMENT otherwise, e.g.
// "--ipus=3: must be a power of two (1, 2, 4, ... 1024)".
absl::StatusOr<uint32_t> ParseIpus(const std::string& text);
// --ipus-gcds=G: a power of two in 1..1024.
absl::StatusOr<uint32_t> ParseGcds(const std::string& text);
// The rules between the options: --ipus-gcds and --ipus-reconfigurable need
// --ipus; G divides N.
absl::Status CheckRequest(const IpuRequest& request, bool gcds_given);

// The partition id of a job: "slurm_<jobid>".
std::string PartitionId(uint32_t job_id);

}  // namespace vipu::slurm

#endif  // VIPU_SLURM_SPANK_CONFIG_H_
