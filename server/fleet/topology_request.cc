// TopologyFor and TopologyFingerprint: each agent's SetTopology from its cluster's links.
#include "server/fleet/topology_request.h"

#include "absl/strings/str_cat.h"

namespace vipu::server {

AgentTopology TopologyFor(const ClusterLinks& links, const std::string& agent_id) {
  AgentTopology t;
  t.cluster_id = links.layout.cluster().id;
  t.num_ilds = links.layout.num_ilds();
  t.machines_per_ild = links.layout.machines_per_ild();
  t.torus = links.layout.cluster().topology == fabric::IldTopology::kTorus;
  if (auto pos = links.layout.PositionOf({agent_id, 0})) {
    t.ild = pos->first;
    t.machine_index = pos->second / fabric::kIpusPerMachine;
  }
  for (const auto& [port, link] : links.topology.PortsOf(agent_id)) {
    const bool is_a = link->a.agent_id == agent_id && link->a.port == port;
    const fabric::LinkEnd& self = is_a ? link->a : link->b;
    const fabric::LinkEnd& peer = is_a ? link->b : link->a;
    t.ports.push_back(
        {port, link->kind, link->name, self.ipu, peer.agent_id, peer.port, link->internal});
  }
  return t;
}

std::string TopologyFingerprint(const AgentTopology& t) {
  // Strings are length-prefixed, so that no two topologies concatenate alike.
  auto text = [](const std::string& s) { return absl::StrCat(s.size(), ":", s); };
  std::string out = absl::StrCat(text(t.cluster_id), ";", t.ild, ";", t.num_ilds, ";",
                                 t.machine_index, ";", t.machines_per_ild, ";", t.torus ? 1 : 0);
  for (const AgentLinkPort& p : t.ports) {
    absl::StrAppend(&out, "|", p.port, ";", static_cast<int>(p.kind), ";", text(p.name), ";",
                    p.local_ipu, ";", text(p.peer_agent_id), ";", p.peer_port, ";",
                    p.internal ? 1 : 0);
  }
  return out;
}

}  // namespace vipu::server
