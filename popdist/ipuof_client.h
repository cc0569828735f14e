// The application side of the IPUoF data plane: attach to one GCD of a
// partition, list its devices, run a workload on them. The workload runs on
// the simulated machines that hold the IPUs: the client calls the machine
// holding the GCD's first IPU (device 0's IPUoF endpoint), which checks
// every other machine of the partition and answers with the compute and
// link model's step times. A failed IPU or link makes the run fail with a
// message naming the machine and the IPU or link.
//
// Attaching, as Poplar does, in this order:
//  1. IPUOF_VIPU_API_HOST, IPUOF_VIPU_API_PORT (default 8090),
//     IPUOF_VIPU_API_PARTITION_ID, IPUOF_VIPU_API_GCD_ID (default 0) and
//     IPUOF_VIPU_API_TIMEOUT (seconds): ask vipu-server
//     (GetPartitionIpuofConfig);
//  2. IPUOF_CONFIG_PATH: that IPUoF config file;
//  3. $HOME/.ipuof.conf.d/: <IPUOF_VIPU_API_PARTITION_ID>_gcd<N>_ipuof.conf
//     when a partition is named, else the directory's only config file.
#ifndef VIPU_POPDIST_IPUOF_CLIENT_H_
#define VIPU_POPDIST_IPUOF_CLIENT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "fabric/sub_devices.h"
#include "vipu_agent.pb.h"
#include "vipuuser.pb.h"

namespace vipu::ipuof {

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

struct WorkloadResult {
  std::vector<double> step_time_s;
  double samples_per_sec = 0;
  uint64_t generation = 0;             // of the partition that ran it
  std::vector<std::string> agent_ids;  // machines that ran it
  // As the machines configured the partition (IRT_*, ST_*, GRT_* values).
  virmgrpc::IpuLinkRoutingType routing = virmgrpc::IRT_UNDEFINED;
  virmgrpc::SyncType sync_type = virmgrpc::ST_UNDEFINED;
  virmgrpc::GatewayRoutingType gw_routing = virmgrpc::GRT_UNDEFINED;
};

class IpuofClient {
 public:
  // From the environment as described above. INVALID_ARGUMENT naming the
  // variable for a malformed value; FAILED_PRECONDITION when no way of
  // attaching is configured or ~/.ipuof.conf.d/ holds several configs and
  // none is chosen. `timeout` applies when IPUOF_VIPU_API_TIMEOUT is unset.
  static absl::StatusOr<IpuofClient> Attach(const Environment& env,
                                            absl::Duration timeout = absl::Seconds(120));
  // GetPartitionIpuofConfig on vipu-server at host:port.
  static absl::StatusOr<IpuofClient> AttachToPartition(const std::string& host, uint32_t port,
                                                       const std::string& partition_id,
                                                       uint32_t gcd, absl::Duration timeout);
  // An IPUoF config file (~/.ipuof.conf.d/<p>_gcd<N>_ipuof.conf).
  static absl::StatusOr<IpuofClient> FromConfigFile(const std::string& path);
  // INVALID_ARGUMENT when the GCD has no devices, an unusable endpoint or
  // no "Partition Id".
  static absl::StatusOr<IpuofClient> FromGcd(const virmgrpc::PartitionConfig::Gcd& gcd);

  const std::string& partition_id() const { return partition_id_; }
  uint32_t gcd() const { return gcd_; }
  // Ordered by device id.
  const std::vector<IpuofDevice>& devices() const { return devices_; }
  // How it attached: "V-IPU server <host:port>" or "IPUoF config <path>".
  const std::string& source() const { return source_; }
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
  // when the partition is gone, UNAVAILABLE when a machine does not answer.
  absl::StatusOr<WorkloadResult> Run(const vipuagent::WorkloadSpec& workload, uint32_t steps,
                                     absl::Duration timeout = absl::Seconds(30)) const;

 private:
  std::string partition_id_;
  uint32_t gcd_ = 0;
  std::vector<IpuofDevice> devices_;
  std::vector<fabric::SubDevice> sub_devices_;
  std::optional<uint32_t> device_id_;
  std::string source_;
};

}  // namespace vipu::ipuof

#endif  // VIPU_POPDIST_IPUOF_CLIENT_H_
