// Clusters and placement requests as the fabric's tests build them: a preset
// pod's layout and a request for so many IPUs.
#ifndef VIPU_TESTS_UNIT_SUPPORT_POD_LAYOUT_H_
#define VIPU_TESTS_UNIT_SUPPORT_POD_LAYOUT_H_

#include <cstdint>
#include <string>

#include "fabric/placement.h"
#include "fabric/pods.h"
#include "fabric/topology.h"

namespace vipu::test {

// The layout of the preset pod `pod` ("pod64", ...), as one cluster of that
// name.
inline fabric::ClusterLayout PodLayout(const std::string& pod) {
  return *fabric::ClusterLayout::Build(fabric::PodCluster(*fabric::PodPreset(pod), pod));
}

// A placement of `size` IPUs over `num_ilds` ILDs (0: as few as possible).
inline fabric::PlacementRequest PlacementOfSize(uint32_t size, uint32_t num_ilds = 0) {
  fabric::PlacementRequest r;
  r.size = size;
  r.num_ilds = num_ilds;
  return r;
}

}  // namespace vipu::test

#endif  // VIPU_TESTS_UNIT_SUPPORT_POD_LAYOUT_H_
