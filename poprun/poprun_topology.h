// The --print-topology table: rows of hosts, ILDs and instances, each cell
// spanning the replicas it holds, over a row of replica indices.
#ifndef VIPU_POPRUN_POPRUN_TOPOLOGY_H_
#define VIPU_POPRUN_POPRUN_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

namespace vipu::poprun {

// `hosts` holds one label per host ("localhost", "[0]", ...); replicas,
// instances and ILDs divide evenly among them (validated before). Cells are
// centred, an odd space going to the right; replica cells are as wide as
// the longest index, widened uniformly when a label (with a space
// on each side) would not fit.
std::string RenderTopology(const std::vector<std::string>& hosts, uint32_t num_ilds,
                           uint32_t num_instances, uint32_t num_replicas);

}  // namespace vipu::poprun

#endif  // VIPU_POPRUN_POPRUN_TOPOLOGY_H_
