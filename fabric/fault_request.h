// A fault to inject into a simulated IPU-Machine (`vipu-admin inject fault`):
// the kinds, their command-line spellings and the rules every layer (CLI,
// server, agent) checks the same way.
#ifndef VIPU_FABRIC_FAULT_REQUEST_H_
#define VIPU_FABRIC_FAULT_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vipu::fabric {

// Numbers equal the wire enums (vipuadmin.FaultKind, vipuagent.FaultKind).
enum class FaultKind : int {
  kUndefined = 0,
  kIpuError = 1,
  kLinkDown = 2,
  kAgentCrash = 3,
  kAgentHang = 4,
  kClear = 5,
  kPartitionLost = 6,
};

inline constexpr uint32_t kMaxHangMs = 3600000;  // one hour

struct FaultRequest {
  std::string agent_id;
  FaultKind kind = FaultKind::kUndefined;
  std::optional<uint32_t> ipu;   // kIpuError only: 0..3
  std::optional<uint32_t> link;  // kLinkDown only: a port 0..kPortsPerMachine-1
  uint32_t duration_ms = 0;      // kAgentHang only: 0 = until cleared
};

// ipu-error link-down agent-crash agent-hang clear partition-lost
std::string FaultKindName(FaultKind kind);
std::vector<std::string> FaultKindNames();
// The names above, case-insensitive, plus "crash" and "hang".
// INVALID_ARGUMENT "kind: unknown value 'x'; expected ...".
absl::StatusOr<FaultKind> ParseFaultKind(std::string_view name);

// INVALID_ARGUMENT naming the field: a bad agent id, an undefined kind, a
// missing ipu (ipu-error) or link (link-down), an ipu >= 4, a port >= 14, a
// field given to a kind that takes none, a hang longer than kMaxHangMs.
// Whether the port has a link is checked where the topology is known.
absl::Status ValidateFaultRequest(const FaultRequest& request);

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_FAULT_REQUEST_H_
