// gc-info's device list: the single and Multi IPU devices of a GCD, as text.
#include "gcinfo/device_listing.h"

#include "absl/strings/str_cat.h"
#include "fabric/sub_devices.h"

namespace vipu::gcinfo {
namespace {

std::string Endpoint(const popdist::ipuof::IpuofDevice& d) {
  const bool v6 = d.host.find(':') != std::string::npos && d.host.front() != '[';
  return v6 ? absl::StrCat("[", d.host, "]:", d.port) : absl::StrCat(d.host, ":", d.port);
}

}  // namespace

std::vector<Device> DevicesOf(size_t num_ipus) {
  std::vector<Device> devices;
  for (size_t i = 0; i < num_ipus; ++i) devices.push_back({static_cast<uint32_t>(i), false, {i}});
  for (const fabric::SubDevice& d : fabric::MultiIpuDevices(static_cast<uint32_t>(num_ipus))) {
    Device group{d.id, true, {}};
    for (size_t i = d.first; i < d.first + d.count; ++i) group.members.push_back(i);
    devices.push_back(std::move(group));
  }
  return devices;
}

std::string DeviceListing(const std::string& partition_id, uint32_t gcd,
                          const std::vector<popdist::ipuof::IpuofDevice>& ipus,
                          const std::string& source) {
  std::string out = "Graphcore device listing:\n";
  absl::StrAppend(&out, "Partition: ", partition_id, " (gcd:", gcd, ") has ", ipus.size(),
                  ipus.size() == 1 ? " IPU" : " IPUs", ", from ", source, "\n");
  for (const Device& device : DevicesOf(ipus.size())) {
    if (!device.multi) {
      const popdist::ipuof::IpuofDevice& ipu = ipus[device.members.front()];
      absl::StrAppend(&out, "-+- Id: [", device.id, "], target: [Fabric], IPU-M host: [",
                      Endpoint(ipu), "], IPU#: [", ipu.ipu_id, "]\n");
      continue;
    }
    absl::StrAppend(&out, "-+- Id: [", device.id, "], target: [Multi IPU], IPUs: [",
                    device.members.size(), "]\n");
    for (size_t dnc = 0; dnc < device.members.size(); ++dnc) {
      const popdist::ipuof::IpuofDevice& ipu = ipus[device.members[dnc]];
      absl::StrAppend(&out, " |--- Id: [", device.members[dnc], "], DNC Id: [", dnc,
                      "], IPU-M host: [", Endpoint(ipu), "], IPU#: [", ipu.ipu_id, "]\n");
    }
  }
  return out;
}

}  // namespace vipu::gcinfo
