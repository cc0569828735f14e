// Fault kinds of `inject fault`: names, parsing, and the validation every layer shares.
#include "fabric/fault_request.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "fabric/link_topology.h"
#include "fabric/types.h"
#include "fabric/validation.h"

namespace vipu::fabric {

std::string FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kIpuError:
      return "ipu-error";
    case FaultKind::kLinkDown:
      return "link-down";
    case FaultKind::kAgentCrash:
      return "agent-crash";
    case FaultKind::kAgentHang:
      return "agent-hang";
    case FaultKind::kClear:
      return "clear";
    case FaultKind::kPartitionLost:
      return "partition-lost";
    default:
      return "undefined";
  }
}

std::vector<std::string> FaultKindNames() {
  return {"ipu-error", "link-down", "agent-crash", "agent-hang", "clear", "partition-lost"};
}

absl::StatusOr<FaultKind> ParseFaultKind(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(absl::string_view(name.data(), name.size()));
  for (FaultKind k : {FaultKind::kIpuError, FaultKind::kLinkDown, FaultKind::kAgentCrash,
                      FaultKind::kAgentHang, FaultKind::kClear, FaultKind::kPartitionLost}) {
    if (lower == FaultKindName(k)) return k;
  }
  if (lower == "crash") return FaultKind::kAgentCrash;
  if (lower == "hang") return FaultKind::kAgentHang;
  return absl::InvalidArgumentError(absl::StrCat("kind: unknown value '", lower,
                                                 "'; expected one of ",
                                                 absl::StrJoin(FaultKindNames(), ", ")));
}

absl::Status ValidateFaultRequest(const FaultRequest& r) {
  RETURN_IF_ERROR(ValidateId("agent_id", r.agent_id));
  switch (r.kind) {
    case FaultKind::kIpuError:
    case FaultKind::kLinkDown:
    case FaultKind::kAgentCrash:
    case FaultKind::kAgentHang:
    case FaultKind::kClear:
    case FaultKind::kPartitionLost:
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("kind: must be one of ",
                                                     absl::StrJoin(FaultKindNames(), ", "),
                                                     ", got ", static_cast<int>(r.kind)));
  }
  const std::string kind = FaultKindName(r.kind);
  if (r.kind == FaultKind::kIpuError) {
    if (!r.ipu) return absl::InvalidArgumentError("ipu: is required for kind ipu-error");
    if (*r.ipu >= kIpusPerMachine) {
      return absl::InvalidArgumentError(
          absl::StrCat("ipu: must be 0..", kIpusPerMachine - 1, ", got ", *r.ipu));
    }
  } else if (r.ipu) {
    return absl::InvalidArgumentError(
        absl::StrCat("ipu: only meaningful for kind ipu-error, not ", kind));
  }
  if (r.kind == FaultKind::kLinkDown) {
    if (!r.link) return absl::InvalidArgumentError("link: is required for kind link-down");
    if (*r.link >= kPortsPerMachine) {
      return absl::InvalidArgumentError(
          absl::StrCat("link: must be a port 0..", kPortsPerMachine - 1, ", got ", *r.link));
    }
  } else if (r.link) {
    return absl::InvalidArgumentError(
        absl::StrCat("link: only meaningful for kind link-down, not ", kind));
  }
  if (r.kind == FaultKind::kAgentHang) {
    if (r.duration_ms > kMaxHangMs) {
      return absl::InvalidArgumentError(absl::StrCat("duration_ms: must be 0..", kMaxHangMs,
                                                     " (0: until cleared), got ", r.duration_ms));
    }
  } else if (r.duration_ms != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("duration_ms: only meaningful for kind agent-hang, not ", kind));
  }
  return absl::OkStatus();
}

}  // namespace vipu::fabric
