// The device list `gc-info -l` prints for one GCD of a partition, laid out
// like Graphcore's gc-info: first one Fabric device per IPU (ids 0..N-1, in
// the order of the GCD's IPUoF config), then the Multi IPU devices Poplar
// offers on a partition, size class by size class (N/2 pairs, N/4 quads,
// ..., one device of all N IPUs), each followed by its member IPUs.
//
//   Graphcore device listing:
//   Partition: p1 (gcd:0) has 4 IPUs, from IPUoF config /home/u/.ipuof.conf.d/p1_gcd0_ipuof.conf
//   -+- Id: [0], target: [Fabric], IPU-M host: [127.0.0.1:40001], IPU#: [3]
//   ...
//   -+- Id: [4], target: [Multi IPU], IPUs: [2]
//    |--- Id: [0], DNC Id: [0], IPU-M host: [127.0.0.1:40001], IPU#: [3]
//    |--- Id: [1], DNC Id: [1], IPU-M host: [127.0.0.1:40001], IPU#: [2]
#ifndef VIPU_GCINFO_DEVICE_LISTING_H_
#define VIPU_GCINFO_DEVICE_LISTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "popdist/ipuof_client.h"

namespace vipu::gcinfo {

// One device of the list: a single IPU (members holds its own index) or a
// Multi IPU group.
struct Device {
  uint32_t id = 0;
  bool multi = false;
  std::vector<size_t> members;  // indexes into the GCD's devices, in DNC order
};

// The devices of a GCD of `num_ipus` IPUs: ids 0..num_ipus-1 single, then
// every aligned power-of-two group of 2..num_ipus IPUs, smallest first
// (fabric/sub_devices.h, the numbering a reconfigurable partition's IPUoF
// config lists). A GCD always holds a power of two of IPUs; for any other
// count only the singles are listed.
std::vector<Device> DevicesOf(size_t num_ipus);

// The whole listing, newline-terminated. `ipus` ordered by device id; the
// single devices are numbered by position, as Poplar numbers them.
std::string DeviceListing(const std::string& partition_id, uint32_t gcd,
                          const std::vector<popdist::ipuof::IpuofDevice>& ipus,
                          const std::string& source);

}  // namespace vipu::gcinfo

#endif  // VIPU_GCINFO_DEVICE_LISTING_H_
