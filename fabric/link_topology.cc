// LinkTopology: a cluster's IPU-, Sync- and GW-Links, found by port, counted, owned by partitions.
#include "fabric/link_topology.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

namespace vipu::fabric {
namespace {

std::string EndName(const LinkEnd& end, LinkKind kind) {
  switch (kind) {
    case LinkKind::kIpuLink:
      return absl::StrCat(end.agent_id, ".ipu", end.ipu);
    case LinkKind::kSyncLink:
      return absl::StrCat(end.agent_id, ".sync", end.port - kPortSyncNext0);
    case LinkKind::kGwLink:
      return absl::StrCat(end.agent_id, ".gw", end.port - kPortGw0);
    default:
      return end.agent_id;
  }
}

}  // namespace

std::string LinkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kIpuLink:
      return "IPU-Link";
    case LinkKind::kSyncLink:
      return "Sync-Link";
    case LinkKind::kGwLink:
      return "GW-Link";
    default:
      return "link";
  }
}

std::string PortName(uint32_t port) {
  static const char* const kNames[kPortsPerMachine] = {
      "rung-lower",  "rung-upper",  "rail-inner-0", "rail-inner-1", "rail-next-0",
      "rail-next-1", "rail-prev-0", "rail-prev-1",  "sync-next-0",  "sync-next-1",
      "sync-prev-0", "sync-prev-1", "gw0",          "gw1"};
  if (port >= kPortsPerMachine) return absl::StrCat("port ", port);
  return kNames[port];
}

LinkTopology LinkTopology::Build(const ClusterLayout& layout) {
  LinkTopology t;
  const uint32_t machines = layout.machines_per_ild();
  const uint32_t ilds = layout.num_ilds();
  const bool torus = layout.cluster().topology == IldTopology::kTorus;
  t.agents_ = machines * ilds;
  t.ilds_ = ilds;
  auto agent = [&](uint32_t ild, uint32_t m) {
    return layout.cluster().agent_ids[ild * machines + m];
  };
  auto ipu_of = [&](uint32_t ild, uint32_t m, uint32_t slot) {
    return layout.IpuAt(ild, m * kIpusPerMachine + slot).ipu;
  };
  t.machine_of_.reserve(static_cast<size_t>(machines) * ilds);
  t.port_link_.reserve(static_cast<size_t>(machines) * ilds * kPortsPerMachine);
  t.links_.reserve(static_cast<size_t>(machines) * ilds * 9);  // 4 rungs and rails, 2 + 2, 1 GW
  auto mark = [&](const LinkEnd& end, uint32_t index) {
    auto [it, added] =
        t.machine_of_.emplace(end.agent_id, static_cast<uint32_t>(t.machine_of_.size()));
    if (added) t.port_link_.resize(t.port_link_.size() + kPortsPerMachine, kNoLink);
    t.port_link_[static_cast<size_t>(it->second) * kPortsPerMachine + end.port] = index;
  };
  auto add = [&](Link link) {
    link.name = absl::StrCat(EndName(link.a, link.kind), "-", EndName(link.b, link.kind));
    const uint32_t index = static_cast<uint32_t>(t.links_.size());
    mark(link.a, index);
    mark(link.b, index);
    t.links_.push_back(std::move(link));
  };
  auto ipu_link = [&](uint32_t ild, uint32_t m, uint32_t port_a, uint32_t slot_a, uint32_t m_b,
                      uint32_t port_b, uint32_t slot_b) {
    Link l;
    l.kind = LinkKind::kIpuLink;
    l.ild = ild;
    l.a = {agent(ild, m), port_a, ipu_of(ild, m, slot_a)};
    l.b = {agent(ild, m_b), port_b, ipu_of(ild, m_b, slot_b)};
    l.internal = m == m_b;
    l.wrap = m_b < m;
    l.cables = l.internal ? 0 : kCablesPerRail;
    add(std::move(l));
  };

  for (uint32_t ild = 0; ild < ilds; ++ild) {
    for (uint32_t m = 0; m < machines; ++m) {
      ipu_link(ild, m, kPortRungLower, 0, m, kPortRungLower, 1);
      ipu_link(ild, m, kPortRungUpper, 2, m, kPortRungUpper, 3);
      ipu_link(ild, m, kPortRailInner0, 0, m, kPortRailInner0, 2);
      ipu_link(ild, m, kPortRailInner1, 1, m, kPortRailInner1, 3);
      const bool last = m + 1 == machines;
      if (last && !(torus && machines > 1)) continue;
      const uint32_t next = last ? 0 : m + 1;
      ipu_link(ild, m, kPortRailNext0, 2, next, kPortRailPrev0, 0);
      ipu_link(ild, m, kPortRailNext1, 3, next, kPortRailPrev1, 1);
      for (uint32_t k = 0; k < 2; ++k) {
        Link s;
        s.kind = LinkKind::kSyncLink;
        s.ild = ild;
        s.a = {agent(ild, m), kPortSyncNext0 + k, 0};
        s.b = {agent(ild, next), kPortSyncPrev0 + k, 0};
        s.wrap = last;
        s.cables = 1;
        add(std::move(s));
      }
    }
  }
  if (ilds >= 2) {
    for (uint32_t ild = 0; ild < ilds; ++ild) {
      for (uint32_t m = 0; m < machines; ++m) {
        Link g;
        g.kind = LinkKind::kGwLink;
        g.ild = ild;
        g.a = {agent(ild, m), kPortGw0, 0};
        g.b = {agent((ild + 1) % ilds, m), kPortGw1, 0};
        g.cables = 1;
        add(std::move(g));
      }
    }
  }
  return t;
}

std::map<uint32_t, const Link*> LinkTopology::PortsOf(const std::string& agent_id) const {
  std::map<uint32_t, const Link*> out;
  auto it = machine_of_.find(agent_id);
  if (it == machine_of_.end()) return out;
  const size_t first = static_cast<size_t>(it->second) * kPortsPerMachine;
  for (uint32_t port = 0; port < kPortsPerMachine; ++port) {
    const uint32_t index = port_link_[first + port];
    if (index != kNoLink) out[port] = &links_[index];
  }
  return out;
}

const Link* LinkTopology::Find(const std::string& agent_id, uint32_t port) const {
  if (port >= kPortsPerMachine) return nullptr;
  auto it = machine_of_.find(agent_id);
  if (it == machine_of_.end()) return nullptr;
  const uint32_t index = port_link_[static_cast<size_t>(it->second) * kPortsPerMachine + port];
  return index == kNoLink ? nullptr : &links_[index];
}

LinkCounts LinkTopology::Counts() const {
  LinkCounts c;
  c.agents = agents_;
  c.ilds = ilds_;
  for (const Link& l : links_) {
    switch (l.kind) {
      case LinkKind::kIpuLink:
        ++c.ipu_links;
        c.ipu_link_cables += l.cables;
        break;
      case LinkKind::kSyncLink:
        c.sync_cables += l.cables;
        break;
      case LinkKind::kGwLink:
        ++c.gw_links;
        break;
      default:
        break;
    }
  }
  return c;
}

std::vector<const Link*> PartitionLinks(const LinkTopology& topology, const Partition& partition) {
  std::set<IpuRef> ipus;
  std::set<std::string> machines;
  for (const PartitionIpu& p : partition.ipus) {
    ipus.insert(p.ipu);
    machines.insert(p.ipu.agent_id);
  }
  const bool ring = partition.routing == RoutingType::kRingSwnc;
  // Only links on the partition's machines' ports can be owned: a few per
  // machine, instead of every link of a cluster of up to 16,384 machines.
  std::vector<const Link*> candidates;
  for (const std::string& machine : machines) {
    for (const auto& [port, link] : topology.PortsOf(machine)) candidates.push_back(link);
  }
  std::sort(candidates.begin(), candidates.end());  // the topology's order
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<const Link*> out;
  for (const Link* link : candidates) {
    const Link& l = *link;
    if (l.wrap && !ring) continue;
    bool owned = false;
    switch (l.kind) {
      case LinkKind::kIpuLink:
        owned = ipus.count({l.a.agent_id, l.a.ipu}) && ipus.count({l.b.agent_id, l.b.ipu});
        break;
      case LinkKind::kSyncLink:
      case LinkKind::kGwLink:
        owned = machines.count(l.a.agent_id) && machines.count(l.b.agent_id);
        break;
      default:
        break;
    }
    if (owned) out.push_back(link);
  }
  return out;
}

std::map<std::string, std::vector<uint32_t>> PartitionPorts(const LinkTopology& topology,
                                                            const Partition& partition) {
  std::map<std::string, std::vector<uint32_t>> out;
  for (const PartitionIpu& p : partition.ipus) out[p.ipu.agent_id];  // every machine, even bare
  for (const Link* l : PartitionLinks(topology, partition)) {
    out[l->a.agent_id].push_back(l->a.port);
    if (!l->internal) out[l->b.agent_id].push_back(l->b.port);
  }
  for (auto& [agent, ports] : out) {
    std::sort(ports.begin(), ports.end());
    ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
  }
  return out;
}

}  // namespace vipu::fabric
