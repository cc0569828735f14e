// The IPUoF configuration files `vipu create partition` leaves for Poplar:
// $HOME/.ipuof.conf.d/<partition>_gcd<N>_ipuof.conf (directory 0700, files
// 0600, because they grant access to the partition's devices).
#ifndef VIPU_CLI_COMMON_IPUOF_FILES_H_
#define VIPU_CLI_COMMON_IPUOF_FILES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "vipuuser.pb.h"

namespace vipu::cli {

std::string IpuofConfigDir(const std::string& home);
std::string IpuofConfigPath(const std::string& home, const std::string& partition_id, uint32_t gcd);

// The file content: the GCD message as pretty-printed JSON with proto field
// names ({"devices": [...], "attributes": {...}}), zero values included so
// that device_id 0 is present. Newline-terminated.
absl::StatusOr<std::string> GcdConfigJson(const virmgrpc::PartitionConfig::Gcd& gcd);

// Writes `content` atomically (temporary file + rename) with mode 0600,
// creating the directory with mode 0700 when missing.
absl::Status WriteIpuofConfig(const std::string& home, const std::string& partition_id,
                              uint32_t gcd, const std::string& content);

// Deletes every <partition_id>_gcd<digits>_ipuof.conf and nothing else
// (not p10's files when removing p1). OK when there are none.
absl::Status RemoveIpuofConfigs(const std::string& home, const std::string& partition_id);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_IPUOF_FILES_H_
