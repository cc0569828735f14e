// CreatePartitionRequest bytes as the server receives them: decode, translate
// (server/api/wire FromWire), validate, resolve defaults and place on a preset
// pod. Nothing may crash, and a placement must be a set of free, distinct
// IPUs of the asked size; placing the same request again next to it must
// not overlap it (invariant 1 at the fabric level).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "fabric/placement.h"
#include "fabric/pods.h"
#include "fabric/topology.h"
#include "fabric/validation.h"
#include "server/api/wire.h"
#include "vipuuser.pb.h"

namespace {

struct Pod {
  vipu::fabric::ClusterLayout layout;
  std::set<std::string> agents;
};

std::vector<Pod> BuildPods() {
  std::vector<Pod> pods;
  for (const char* name : {"pod4", "pod16", "pod64", "pod256", "bow-pod64"}) {
    auto spec = vipu::fabric::PodPreset(name);
    if (!spec.ok()) abort();
    vipu::fabric::Cluster cluster = vipu::fabric::PodCluster(*spec, name);
    auto layout = vipu::fabric::ClusterLayout::Build(cluster);
    if (!layout.ok()) abort();
    pods.push_back({*layout, {cluster.agent_ids.begin(), cluster.agent_ids.end()}});
  }
  return pods;
}

// The checks of Place's promise; a violation is a crash for libFuzzer.
void CheckPlacement(const std::vector<vipu::fabric::PartitionIpu>& ipus, uint32_t size,
                    const std::set<std::string>& allowed, std::set<vipu::fabric::IpuRef>* used) {
  if (ipus.size() != size) abort();
  for (const vipu::fabric::PartitionIpu& p : ipus) {
    if (!allowed.count(p.ipu.agent_id)) abort();
    if (p.ipu.ipu >= vipu::fabric::kIpusPerMachine) abort();
    if (!used->insert(p.ipu).second) abort();  // taken twice, or already used
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<Pod> pods = BuildPods();
  if (size < 1) return 0;
  const Pod& pod = pods[data[0] % pods.size()];
  virmgrpc::CreatePartitionRequest wire;
  if (!wire.ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;
  auto request = vipu::server::FromWire(wire);
  if (!request.ok()) return 0;
  if (!vipu::fabric::ValidatePartitionRequest(*request).ok()) return 0;
  auto resolved = vipu::fabric::ResolveDefaults(*request, pod.layout);
  if (!resolved.ok()) return 0;
  if (resolved->size != request->size) abort();
  vipu::fabric::PlacementRequest placement{resolved->size, resolved->num_ilds, resolved->ipus};
  std::set<vipu::fabric::IpuRef> used;
  auto first = vipu::fabric::Place(pod.layout, pod.agents, used, placement);
  if (!first.ok()) return 0;
  CheckPlacement(*first, resolved->size, pod.agents, &used);
  auto second = vipu::fabric::Place(pod.layout, pod.agents, used, placement);
  if (second.ok()) CheckPlacement(*second, resolved->size, pod.agents, &used);
  return 0;
}
