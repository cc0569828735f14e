// The devices Poplar numbers inside a GCD, as a real pod's device list shows
// them for a reconfigurable partition: in a GCD of n IPUs (a power of two)
// ids 0..n-1 are the single IPUs, then come the n/2 pairs, the n/4 quads,
// and so on up to one id for all n. This is the numbering popdist's
// getDeviceId() answers in. A reconfigurable partition's IPUoF config lists
// its multi-IPU devices in the GCD attribute kMultiIpuDevicesAttribute as
// "8:0-1 9:2-3 10:4-5 11:6-7 12:0-3 13:4-7 14:0-7" (id:first-last, indexes
// into the GCD's devices).
#ifndef VIPU_FABRIC_SUB_DEVICES_H_
#define VIPU_FABRIC_SUB_DEVICES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vipu::fabric {

inline constexpr char kMultiIpuDevicesAttribute[] = "Multi IPU Devices";

struct SubDevice {
  uint32_t id = 0;
  uint32_t first = 0;  // index of its first IPU in the GCD's devices
  uint32_t count = 0;  // IPUs, a power of two >= 2
  friend bool operator==(const SubDevice& a, const SubDevice& b) {
    return a.id == b.id && a.first == b.first && a.count == b.count;
  }
};

// The multi-IPU devices of a GCD of `ipus` IPUs, by id; none when `ipus` is
// below 2 or not a power of two.
std::vector<SubDevice> MultiIpuDevices(uint32_t ipus);

// The attribute's text for MultiIpuDevices(ipus).
std::string FormatMultiIpuDevices(uint32_t ipus);

// Parses the attribute. INVALID_ARGUMENT naming the bad entry for anything
// that is not "id:first-last" entries with a power-of-two count of at least
// 2, ids unique, within a GCD of `ipus` devices.
absl::StatusOr<std::vector<SubDevice>> ParseMultiIpuDevices(absl::string_view text, uint32_t ipus);

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_SUB_DEVICES_H_
