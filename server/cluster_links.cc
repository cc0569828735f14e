// The layout and link memos per cluster, partition link ports and each agent's SetTopology.
#include "server/cluster_links.h"

#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/mutex.h"

namespace vipu::server {

namespace {

bool SameCluster(const fabric::Cluster& a, const fabric::Cluster& b) {
  return a.id == b.id && a.num_ilds == b.num_ilds && a.topology == b.topology &&
         a.cluster_topology == b.cluster_topology && a.agent_ids == b.agent_ids;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const fabric::ClusterLayout>> LayoutOf(
    const fabric::Cluster& cluster) {
  static vipu::Mutex mu;
  // By cluster id, one entry each: clusters are few, and a changed cluster
  // replaces its entry.
  static auto* built ABSL_PT_GUARDED_BY(mu) =
      new std::map<std::string, std::shared_ptr<const fabric::ClusterLayout>>;
  {
    vipu::MutexLock lock(&mu);
    auto it = built->find(cluster.id);
    if (it != built->end() && SameCluster(it->second->cluster(), cluster)) return it->second;
  }
  auto layout = fabric::ClusterLayout::Build(cluster);
  if (!layout.ok()) return layout.status();
  auto shared = std::make_shared<const fabric::ClusterLayout>(*std::move(layout));
  vipu::MutexLock lock(&mu);
  (*built)[cluster.id] = shared;
  return shared;
}

absl::StatusOr<std::shared_ptr<const ClusterLinks>> LinksOf(const fabric::Cluster& cluster) {
  auto layout = LayoutOf(cluster);
  if (!layout.ok()) return layout.status();
  static vipu::Mutex mu;
  // The links of each layout LayoutOf handed out: valid while it hands out
  // the same one.
  static auto* built ABSL_PT_GUARDED_BY(mu) =
      new std::map<std::string, std::pair<std::shared_ptr<const fabric::ClusterLayout>,
                                          std::shared_ptr<const ClusterLinks>>>;
  {
    vipu::MutexLock lock(&mu);
    auto it = built->find(cluster.id);
    if (it != built->end() && it->second.first == *layout) return it->second.second;
  }
  auto links = std::make_shared<const ClusterLinks>(BuildClusterLinks(**layout));
  vipu::MutexLock lock(&mu);
  (*built)[cluster.id] = {*layout, links};
  return links;
}

absl::StatusOr<std::shared_ptr<const ClusterLinks>> LoadClusterLinks(
    storage::Store* store, const std::string& cluster_id) {
  fabric::Cluster cluster;
  absl::Status s = store->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto c = txn.GetCluster(cluster_id);
    if (!c.ok()) return c.status();
    cluster = std::move(*c);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return LinksOf(cluster);
}

ClusterLinks BuildClusterLinks(fabric::ClusterLayout layout) {
  ClusterLinks links;
  links.topology = fabric::LinkTopology::Build(layout);
  links.layout = std::move(layout);
  return links;
}

absl::StatusOr<std::map<std::string, std::vector<uint32_t>>> PartitionLinkPorts(
    storage::Store* store, const fabric::Partition& partition) {
  auto links = LoadClusterLinks(store, partition.cluster_id);
  if (!links.ok()) return links.status();
  return fabric::PartitionPorts((*links)->topology, partition);
}

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

std::vector<std::string> PartitionProblems(const fabric::Partition& partition,
                                           const ClusterLinks& links, const AgentRegistry& registry,
                                           absl::Time now) {
  std::vector<std::string> problems;
  std::map<std::string, AgentHealth> health;
  std::set<std::string> machines;
  for (const fabric::PartitionIpu& ipu : partition.ipus) machines.insert(ipu.ipu.agent_id);
  for (const std::string& agent : machines) {
    std::optional<LiveAgent> live = registry.Get(agent);
    if (!live) {
      problems.push_back(absl::StrCat("agent ", agent, ": not connected"));
      continue;
    }
    if (!registry.IsUp(agent, now)) {
      problems.push_back(absl::StrFormat("agent %s: down (no heartbeat for %.1f s)", agent,
                                         absl::ToDoubleSeconds(now - live->last_heartbeat)));
      continue;
    }
    health[agent] = live->health;
  }
  for (const fabric::PartitionIpu& ipu : partition.ipus) {
    auto h = health.find(ipu.ipu.agent_id);
    if (h == health.end()) continue;
    auto e = h->second.ipu_errors.find(ipu.ipu.ipu);
    if (e != h->second.ipu_errors.end()) {
      problems.push_back(absl::StrCat("agent ", ipu.ipu.agent_id, ": IPU ", ipu.ipu.ipu, " error (",
                                      e->second, ")"));
    }
  }
  for (const fabric::Link* link : fabric::PartitionLinks(links.topology, partition)) {
    for (const fabric::LinkEnd* end : {&link->a, &link->b}) {
      auto h = health.find(end->agent_id);
      if (h == health.end() || !h->second.links_down.count(end->port)) continue;
      problems.push_back(absl::StrCat("agent ", end->agent_id, ": ",
                                      fabric::LinkKindName(link->kind), " ", link->name, " down"));
      break;  // one message per link, from the first end that reports it
    }
  }
  return problems;
}

}  // namespace vipu::server
