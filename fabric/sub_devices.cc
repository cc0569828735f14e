// Poplar's numbering of the multi-IPU devices of a GCD, and its text in IPUoF configs.
#include "fabric/sub_devices.h"

#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "fabric/validation.h"

namespace vipu::fabric {

std::vector<SubDevice> MultiIpuDevices(uint32_t ipus) {
  std::vector<SubDevice> out;
  if (ipus < 2 || !IsPowerOfTwo(ipus)) return out;
  uint32_t id = ipus;
  for (uint32_t width = 2; width <= ipus; width *= 2) {
    for (uint32_t first = 0; first < ipus; first += width) out.push_back({id++, first, width});
  }
  return out;
}

std::string FormatMultiIpuDevices(uint32_t ipus) {
  std::vector<std::string> entries;
  for (const SubDevice& d : MultiIpuDevices(ipus)) {
    entries.push_back(absl::StrCat(d.id, ":", d.first, "-", d.first + d.count - 1));
  }
  return absl::StrJoin(entries, " ");
}

absl::StatusOr<std::vector<SubDevice>> ParseMultiIpuDevices(absl::string_view text, uint32_t ipus) {
  std::vector<SubDevice> out;
  std::set<uint32_t> ids;
  for (absl::string_view entry : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat(kMultiIpuDevicesAttribute, ": entry '", entry, "' ", why));
    };
    std::vector<absl::string_view> id_range = absl::StrSplit(entry, ':');
    if (id_range.size() != 2) return bad("is not id:first-last");
    std::vector<absl::string_view> range = absl::StrSplit(id_range[1], '-');
    uint32_t id = 0, first = 0, last = 0;
    if (range.size() != 2 || !absl::SimpleAtoi(id_range[0], &id) ||
        !absl::SimpleAtoi(range[0], &first) || !absl::SimpleAtoi(range[1], &last)) {
      return bad("is not id:first-last");
    }
    if (last < first || !IsPowerOfTwo(last - first + 1) || last == first) {
      return bad("does not span a power of two of at least 2 IPUs");
    }
    if (last >= ipus) return bad(absl::StrCat("goes beyond the GCD's ", ipus, " devices"));
    if (id < ipus) return bad(absl::StrCat("reuses the id of a single IPU (0..", ipus - 1, ")"));
    if (!ids.insert(id).second) return bad("repeats its id");
    out.push_back({id, first, last - first + 1});
  }
  return out;
}

}  // namespace vipu::fabric
