// What each big structure of vipu-server costs per machine at the design
// limit (16,384 machines, 65,536 IPUs, 1,024 ILDs): heap bytes allocated
// (mallinfo2 before and after building it), divided by the machines. The
// structures are built as the server builds them: the registry from the
// simulator's own reports (agents/simulated_machine.h), the membership
// cache's cluster and allocation, the cluster layout, the cluster's links,
// the topology pusher's fingerprints. No server, no I/O.
//
//   memory_scale_bench [--machines N]   prints a markdown table
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "agents/simulated_machine.h"
#include "fabric/topology.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links.h"
#include "server/fleet/topology_push.h"
#include "server/fleet/topology_request.h"

namespace {

size_t HeapBytes() { return mallinfo2().uordblks; }

void Row(const char* what, size_t bytes, size_t machines, const char* note) {
  std::printf("| %s | %.1f | %.0f | %s |\n", what, static_cast<double>(bytes) / (1024.0 * 1024.0),
              static_cast<double>(bytes) / static_cast<double>(machines), note);
}

using Pairs = std::vector<std::pair<std::string, std::string>>;

}  // namespace

int main(int argc, char** argv) {
  uint32_t machines = 16384;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--machines") == 0) machines = std::atoi(argv[i + 1]);
  }
  machines = std::max<uint32_t>(16, machines - machines % 16);
  std::vector<std::string> ids;
  for (uint32_t m = 0; m < machines; ++m) ids.push_back("m" + std::to_string(m));

  // The reports as agents send them (one machine's shape per id).
  std::vector<Pairs> details(machines);
  std::vector<std::vector<Pairs>> ipus(machines);
  for (uint32_t m = 0; m < machines; ++m) {
    vipu::agents::SimulatedMachine machine(ids[m], vipu::fabric::MachineType::kM2000);
    for (const auto& d : machine.details()) details[m].emplace_back(d.name, d.value);
    for (const auto& ipu : machine.ipus()) {
      Pairs& attrs = ipus[m].emplace_back();
      for (const auto& a : ipu.attributes) attrs.emplace_back(a.name, a.value);
    }
  }

  std::printf("| structure (%u machines) | MiB | bytes per machine | note |\n", machines);
  std::printf("|---|---|---|---|\n");

  // The registry's reports as they were kept before: a vector of string
  // pairs per IPU, grown pair by pair as the registry service read them.
  size_t before = HeapBytes();
  {
    std::vector<std::vector<Pairs>> grown(machines);
    std::vector<Pairs> grown_details(machines);
    for (uint32_t m = 0; m < machines; ++m) {
      for (const auto& [k, v] : details[m]) grown_details[m].emplace_back(k, v);
      for (const Pairs& attrs : ipus[m]) {
        Pairs& g = grown[m].emplace_back();
        for (const auto& [k, v] : attrs) g.emplace_back(k, v);
      }
    }
    Row("agent reports as string pairs (before)", HeapBytes() - before, machines,
        "12 details, 4 x 20 IPU attributes");
  }

  // The registry as the server keeps it now.
  vipu::server::AgentRegistry registry(absl::Seconds(1));
  before = HeapBytes();
  {
    std::vector<vipu::server::LiveAgent> batch;
    for (uint32_t m = 0; m < machines; ++m) {
      vipu::server::LiveAgent a;
      a.id = ids[m];
      a.host = "127.0.0.1";
      a.port = 50000 + m % 16;
      a.details = vipu::server::Attributes(details[m]);
      for (const Pairs& attrs : ipus[m]) a.ipus.emplace_back(attrs);
      batch.push_back(std::move(a));
    }
    registry.RegisterMany(std::move(batch), absl::Now());
  }
  Row("agent registry (LiveAgent, reports packed)", HeapBytes() - before, machines,
      "std::map node, ids, packed attributes");

  vipu::fabric::Cluster cluster{"pod", ids, machines / 16, vipu::fabric::IldTopology::kTorus,
                                vipu::fabric::ClusterTopology::kSwitched};
  before = HeapBytes();
  auto shared_cluster = std::make_shared<const vipu::fabric::Cluster>(cluster);
  auto shared_allocation =
      std::make_shared<const vipu::fabric::Allocation>(vipu::fabric::Allocation{"all", "pod", ids});
  Row("membership cache: cluster + allocation", HeapBytes() - before, machines,
      "one shared copy each");

  before = HeapBytes();
  auto layout = vipu::fabric::ClusterLayout::Build(cluster);
  if (!layout.ok()) {
    std::fprintf(stderr, "%s\n", std::string(layout.status().message()).c_str());
    return 1;
  }
  auto shared_layout = std::make_shared<const vipu::fabric::ClusterLayout>(*std::move(layout));
  Row("cluster layout", HeapBytes() - before, machines, "copy of the cluster, index by id");

  before = HeapBytes();
  auto links = std::make_shared<const vipu::server::ClusterLinks>(
      vipu::server::BuildClusterLinks(*shared_layout));
  Row("cluster links (layout copy + links)", HeapBytes() - before, machines,
      "9 links per machine, ports by machine");

  before = HeapBytes();
  {
    // The index of the links by (agent, port) as a tree, as it was kept before.
    std::map<std::pair<std::string, uint32_t>, size_t> by_port;
    const auto& all = links->topology.links();
    for (size_t i = 0; i < all.size(); ++i) {
      by_port[{all[i].a.agent_id, all[i].a.port}] = i;
      by_port[{all[i].b.agent_id, all[i].b.port}] = i;
    }
    Row("links by (agent, port) as a std::map (before)", HeapBytes() - before, machines,
        "replaced by ports by machine number");
  }

  before = HeapBytes();
  std::vector<uint64_t> fingerprints;
  fingerprints.reserve(machines);
  for (const std::string& id : ids) {
    fingerprints.push_back(vipu::server::TopologyHash(vipu::server::TopologyFor(*links, id)));
  }
  Row("topology pusher plan", HeapBytes() - before, machines, "a fingerprint per machine");

  before = HeapBytes();
  auto up = registry.UpMachines(shared_layout, absl::Now());
  Row("registry Up bitmap", HeapBytes() - before, machines, "one bit per machine");
  return up->empty() ? 1 : 0;
}
