// TopologyRequest and TopologyFingerprint: each agent's SetTopology from its cluster's links.
#include "server/topology_request.h"

namespace vipu::server {

vipuagent::SetTopologyRequest TopologyRequest(const ClusterLinks& links,
                                              const std::string& agent_id) {
  vipuagent::SetTopologyRequest r;
  r.set_agent_id(agent_id);
  r.set_cluster_id(links.layout.cluster().id);
  r.set_num_ilds(links.layout.num_ilds());
  r.set_machines_per_ild(links.layout.machines_per_ild());
  r.set_torus(links.layout.cluster().topology == fabric::IldTopology::kTorus);
  if (auto pos = links.layout.PositionOf({agent_id, 0})) {
    r.set_ild(pos->first);
    r.set_machine_index(pos->second / fabric::kIpusPerMachine);
  }
  for (const auto& [port, link] : links.topology.PortsOf(agent_id)) {
    const bool is_a = link->a.agent_id == agent_id && link->a.port == port;
    const fabric::LinkEnd& self = is_a ? link->a : link->b;
    const fabric::LinkEnd& peer = is_a ? link->b : link->a;
    vipuagent::LinkPort* p = r.add_ports();
    p->set_port(port);
    p->set_kind(static_cast<vipuagent::LinkKind>(link->kind));  // numbers equal
    p->set_name(link->name);
    p->set_local_ipu(self.ipu);
    p->set_peer_agent_id(peer.agent_id);
    p->set_peer_port(peer.port);
    p->set_internal(link->internal);
  }
  return r;
}

std::string TopologyFingerprint(const vipuagent::SetTopologyRequest& request) {
  std::string out;
  request.SerializeToString(&out);  // deterministic enough: we built it
  return out;
}

}  // namespace vipu::server
