// The application side of the IPUoF data plane: attach to one GCD of a
// partition, list its devices, run a workload on them. The workload runs on
// the simulated machines that hold the IPUs: the client calls the machine
// holding the GCD's first IPU (device 0's IPUoF endpoint), which checks
// every other machine of the partition and answers with the compute and
// link model's step times. A failed IPU or link makes the run fail with a
// message naming the machine and the IPU or link.
//
// Attaching, as Poplar does, in this order:
//  1. IPUOF_VIPU_API_HOST (a comma-separated list of the server's members,
//     wire/server_members.h), IPUOF_VIPU_API_PORT (default 8090, for the
//     members given without a port),
//     IPUOF_VIPU_API_PARTITION_ID, IPUOF_VIPU_API_GCD_ID (default 0) and
//     IPUOF_VIPU_API_TIMEOUT (seconds): ask vipu-server
//     (GetPartitionIpuofConfig);
//  2. IPUOF_CONFIG_PATH: that IPUoF config file;
//  3. $HOME/.ipuof.conf.d/: <IPUOF_VIPU_API_PARTITION_ID>_gcd<N>_ipuof.conf
//     when a partition is named, else the directory's only config file.
//
// On a secure pod the client uses the credentials the vipu CLIs use,
// resolved by the same code (cli/common/client_config.h):
// VIPU_CLI_API_USER_ID, VIPU_CLI_API_ACCESS_KEY and VIPU_CLI_API_TLS_CA/
// _CERT/_KEY, else the keys api-user-id, api-access-key and api-tls-* of the
// vipu CLI configuration file (/etc/vipu/vipu-cli.hcl). With a CA, both
// legs speak mutual TLS: GetPartitionIpuofConfig to vipu-server carries the
// user id and access key, RunWorkload to a machine checks the machine's
// certificate against the host of its IPUoF endpoint and presents the
// client certificate (the access key is not sent to machines). Without a
// CA, both legs are plaintext.
//
// Thread safety: an IpuofClient is immutable after it is made; Run may be
// called from several threads at once. It owns copies of what it attached
// with and borrows nothing; Run dials the machines afresh on each call.
#ifndef VIPU_POPDIST_IPUOF_CLIENT_H_
#define VIPU_POPDIST_IPUOF_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/common/client_config.h"
#include "fabric/sub_devices.h"
#include "popdist/device_connection.h"
#include "vipu_agent.pb.h"
#include "vipuuser.pb.h"

namespace vipu::popdist::ipuof {

inline constexpr uint32_t kDefaultVipuPort = 8090;

// Environment variables by name; tests pass their own.
using Environment = std::map<std::string, std::string>;
// The variables the client reads (above, and HOME), from this process.
Environment ProcessEnvironment();

struct IpuofDevice {
  uint32_t device_id = 0;  // index in the GCD
  std::string host;
  uint32_t port = 0;    // IPUoF server port of its machine
  uint32_t ipu_id = 0;  // IPU# on the machine
  std::string chip_id;
};

class IpuofClient {
 public:
  // From the environment as described above. INVALID_ARGUMENT naming the
  // variable (or the file and key) for a malformed value or an unreadable
  // TLS file; FAILED_PRECONDITION when no way of attaching is configured or
  // ~/.ipuof.conf.d/ holds several configs and none is chosen. `timeout`
  // applies when IPUOF_VIPU_API_TIMEOUT is unset. `cli_config_path` is the
  // vipu CLI configuration file read for credentials the environment does
  // not give; "" reads none, and a missing file is no error.
  static absl::StatusOr<IpuofClient> Attach(
      const Environment& env, absl::Duration timeout = absl::Seconds(120),
      const std::string& cli_config_path = cli::kSystemConfigPath);
  // GetPartitionIpuofConfig on vipu-server, whose members `host` lists
  // (comma-separated HOST, HOST:PORT, [V6] or [V6]:PORT; `port` for entries
  // without one), failing over as wire/member_channels.h says; over TLS and with
  // the user id and access key of `credentials` when it names a CA (only
  // its user_id, access_key and tls_* fields are used). The server's refusal
  // comes back with its code and message (UNAUTHENTICATED for a wrong key);
  // a bad member list is INVALID_ARGUMENT naming IPUOF_VIPU_API_HOST and the
  // entry.
  static absl::StatusOr<IpuofClient> AttachToPartition(
      const std::string& host, uint32_t port, const std::string& partition_id, uint32_t gcd,
      absl::Duration timeout, const cli::ClientConfig& credentials = cli::ClientConfig());
  // An IPUoF config file (~/.ipuof.conf.d/<p>_gcd<N>_ipuof.conf).
  static absl::StatusOr<IpuofClient> FromConfigFile(const std::string& path);
  // INVALID_ARGUMENT when the GCD has no devices, an unusable endpoint or
  // no "Partition Id".
  static absl::StatusOr<IpuofClient> FromGcd(const virmgrpc::PartitionConfig::Gcd& gcd);

  const std::string& partition_id() const { return partition_id_; }
  uint32_t gcd() const { return gcd_; }
  // Ordered by device id.
  const std::vector<IpuofDevice>& devices() const { return devices_; }
  // How it attached: "V-IPU server <host:port>" (the member that answered)
  // or "IPUoF config <path>".
  const std::string& source() const { return source_; }
  // True when Run speaks TLS to the machines.
  bool tls() const { return credentials_.tls(); }
  // The GCD's multi-IPU devices: a reconfigurable partition's config lists
  // them (fabric/sub_devices.h); empty otherwise.
  const std::vector<fabric::SubDevice>& sub_devices() const { return sub_devices_; }
  // The device this client is narrowed to (Device()); unset: the whole GCD.
  std::optional<uint32_t> device_id() const { return device_id_; }

  // This client narrowed to device `id` of a reconfigurable partition's
  // GCD, as Poplar numbers them: a single IPU (0..n-1) or a listed
  // multi-IPU device; workloads then run on those IPUs. NOT_FOUND naming the
  // ids there are; FAILED_PRECONDITION when the GCD lists no sub-devices
  // (the partition is not reconfigurable) or the client is already narrowed.
  absl::StatusOr<IpuofClient> Device(uint32_t id) const;

  // Runs `steps` steps of `workload` (model preset and batching). Errors
  // come from the machines: INVALID_ARGUMENT for a bad workload or step
  // count, FAILED_PRECONDITION for a failed IPU or link (named), NOT_FOUND
  // when the partition is gone, UNAVAILABLE when a machine does not answer
  // or the TLS handshake with it fails; INVALID_ARGUMENT naming the file
  // when a TLS file can no longer be read.
  absl::StatusOr<WorkloadResult> Run(const vipuagent::WorkloadSpec& workload, uint32_t steps,
                                     absl::Duration timeout = absl::Seconds(30)) const;

  // The data plane to this GCD kept open (popdist/device_connection.h):
  // attach to its IPUs and run many steps over one channel. INVALID_ARGUMENT
  // naming the file when a TLS file can no longer be read.
  absl::StatusOr<std::unique_ptr<DeviceConnection>> Connect() const;

 private:
  // Attach once the credentials are resolved.
  static absl::StatusOr<IpuofClient> AttachWith(const Environment& env, absl::Duration timeout,
                                                const cli::ClientConfig& credentials);

  std::string partition_id_;
  uint32_t gcd_ = 0;
  std::vector<IpuofDevice> devices_;
  std::vector<fabric::SubDevice> sub_devices_;
  std::optional<uint32_t> device_id_;
  std::string source_;
  // TLS files for the machines; plaintext when it names no CA.
  cli::ClientConfig credentials_;
};

}  // namespace vipu::popdist::ipuof

#endif  // VIPU_POPDIST_IPUOF_CLIENT_H_
