// The application side of the IPUoF data plane: attach to one GCD of a
// partition, list its devices, run a workload on them. The workload runs on
// the simulated machines that hold the IPUs: the client calls the machine
// holding the GCD's first IPU (device 0's IPUoF endpoint), which checks
// every other machine of the partition and answers with the compute and
// link model's step times. A failed IPU or link makes the run fail with a
// message naming the machine and the IPU or link.
//
// Attaching, as Poplar does (vipu-spec.md 6.1): with IPUOF_VIPU_API_HOST,
// IPUOF_VIPU_API_PORT (default 8090), IPUOF_VIPU_API_PARTITION_ID and
// IPUOF_VIPU_API_GCD_ID (default 0) the client asks vipu-server
// (GetPartitionIpuofConfig); otherwise it reads the IPUoF config file
// IPUOF_CONFIG_PATH.
#ifndef VIPU_CLI_IPUOF_CLIENT_H_
#define VIPU_CLI_IPUOF_CLIENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/client_config.h"
#include "vipu_agent.pb.h"
#include "vipuuser.pb.h"

namespace vipu::cli {

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
  std::vector<std::string> agent_ids;  // machines that ran it
};

class IpuofClient {
 public:
  // From the environment as described above. INVALID_ARGUMENT naming the
  // variable for a malformed value; FAILED_PRECONDITION when neither way of
  // attaching is configured.
  static absl::StatusOr<IpuofClient> Attach(const Environment& env,
                                            absl::Duration timeout = absl::Seconds(30));
  // GetPartitionIpuofConfig on vipu-server at host:port.
  static absl::StatusOr<IpuofClient> AttachToPartition(const std::string& host, uint32_t port,
                                                       const std::string& partition_id,
                                                       uint32_t gcd, absl::Duration timeout);
  // An IPUoF config file (~/.ipuof.conf.d/<p>_gcd<N>_ipuof.conf).
  static absl::StatusOr<IpuofClient> FromConfigFile(const std::string& path);
  // INVALID_ARGUMENT when the GCD has no devices or no "Partition Id".
  static absl::StatusOr<IpuofClient> FromGcd(const virmgrpc::PartitionConfig::Gcd& gcd);

  const std::string& partition_id() const { return partition_id_; }
  uint32_t gcd() const { return gcd_; }
  // Ordered by device id.
  const std::vector<IpuofDevice>& devices() const { return devices_; }

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
};

}  // namespace vipu::cli

#endif  // VIPU_CLI_IPUOF_CLIENT_H_
