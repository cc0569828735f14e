// The links of a cluster: IPU-Links (rungs and rails of each ILD's ladder,
// torus wrap rails), Sync-Links between neighbouring machines, and GW-Links
// between the ILDs. Pure: the server uses it to tell agents their ports, to
// name faults, to count the cables `test cluster` checks, and to work out which
// links a partition owns.
//
// Each machine has kPortsPerMachine numbered ports (the `--link N` of
// `vipu-admin inject fault`). One "IPU-Link" here is the logical connection
// between two neighbouring IPUs of the ladder; a rail between two machines is
// carried by 2 cables, a rung or a rail inside a machine by none.
#ifndef VIPU_FABRIC_LINK_TOPOLOGY_H_
#define VIPU_FABRIC_LINK_TOPOLOGY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fabric/topology.h"
#include "fabric/types.h"

namespace vipu::fabric {

enum class LinkKind : int { kUndefined = 0, kIpuLink = 1, kSyncLink = 2, kGwLink = 3 };

// Port numbers on one machine. Slots are ladder positions 0..3 (topology id
// 4*m+slot); slots 0,1 form the lower rung, 2,3 the upper one.
inline constexpr uint32_t kPortRungLower = 0;   // slot 0 - slot 1
inline constexpr uint32_t kPortRungUpper = 1;   // slot 2 - slot 3
inline constexpr uint32_t kPortRailInner0 = 2;  // slot 0 - slot 2
inline constexpr uint32_t kPortRailInner1 = 3;  // slot 1 - slot 3
inline constexpr uint32_t kPortRailNext0 = 4;   // slot 2 - next machine's slot 0
inline constexpr uint32_t kPortRailNext1 = 5;   // slot 3 - next machine's slot 1
inline constexpr uint32_t kPortRailPrev0 = 6;   // slot 0 - previous machine's slot 2
inline constexpr uint32_t kPortRailPrev1 = 7;   // slot 1 - previous machine's slot 3
inline constexpr uint32_t kPortSyncNext0 = 8;   // sync port 0 - next machine's sync port 2
inline constexpr uint32_t kPortSyncNext1 = 9;   // sync port 1 - next machine's sync port 3
inline constexpr uint32_t kPortSyncPrev0 = 10;  // sync port 2
inline constexpr uint32_t kPortSyncPrev1 = 11;  // sync port 3
inline constexpr uint32_t kPortGw0 = 12;        // GW-Link to the same machine of the next ILD
inline constexpr uint32_t kPortGw1 = 13;        // GW-Link from the previous ILD
inline constexpr uint32_t kPortsPerMachine = 14;

// Cables that carry one rail between two machines.
inline constexpr uint32_t kCablesPerRail = 2;

struct LinkEnd {
  std::string agent_id;
  uint32_t port = 0;
  uint32_t ipu = 0;  // IPU# on the machine for IPU-Link ends, 0 otherwise
};

struct Link {
  LinkKind kind = LinkKind::kUndefined;
  LinkEnd a;  // the end lower in the ladder (or in the lower ILD)
  LinkEnd b;
  uint32_t ild = 0;       // ILD of `a`
  bool internal = false;  // both ends on one machine: no cable
  bool wrap = false;      // torus wrap between the last and first machine
  uint32_t cables = 0;    // physical cables carrying it
  // "ag3.ipu1-ag4.ipu0", "ag3.sync0-ag4.sync2", "ag1.gw0-ag17.gw1".
  std::string name;
};

// "IPU-Link", "Sync-Link", "GW-Link".
std::string LinkKindName(LinkKind kind);
// Name of a port on its machine: "rung-lower", "rail-next-0", "sync-prev-1",
// "gw0", ...; "port N" for an unknown number.
std::string PortName(uint32_t port);

// What `vipu-admin test cluster` counts (docs/cli.md).
struct LinkCounts {
  uint32_t agents = 0;
  uint32_t ipu_link_cables = 0;  // Cabling
  uint32_t sync_cables = 0;      // Sync-Link
  uint32_t ipu_links = 0;        // Link-Training: IPU-Links in the ILDs
  uint32_t ilds = 0;             // Traffic
  uint32_t gw_links = 0;         // GW-Link pairs; 0 for a single ILD
};

// Owns its links. Immutable once built, so any number of threads may read
// one at once: the server shares one per cluster.
class LinkTopology {
 public:
  // Every link of the cluster. Mesh ILDs have no wrap links; a torus ILD of
  // one machine has none either (nothing to loop round). Sync-Links follow
  // the rails between machines. GW-Links exist only with 2+ ILDs: gw0 of
  // machine m of ILD i goes to gw1 of machine m of ILD i+1 (mod num_ilds).
  static LinkTopology Build(const ClusterLayout& layout);

  const std::vector<Link>& links() const { return links_; }
  // The links with an end on `agent_id`, by port number.
  std::map<uint32_t, const Link*> PortsOf(const std::string& agent_id) const;
  // nullptr when the machine has nothing on that port (e.g. the rail to the
  // previous machine of the first machine of a mesh ILD).
  const Link* Find(const std::string& agent_id, uint32_t port) const;
  LinkCounts Counts() const;

 private:
  static constexpr uint32_t kNoLink = ~uint32_t{0};

  std::vector<Link> links_;
  // The machines with a link end, numbered in the order they were met, and
  // for machine m and port p the index in links_ of the link on that port at
  // port_link_[m * kPortsPerMachine + p] (kNoLink: none). A few bytes per
  // port instead of a tree node holding a copy of the agent id per link end:
  // at 16,384 machines a map by (agent, port) cost about 28 MB.
  std::unordered_map<std::string, uint32_t> machine_of_;
  std::vector<uint32_t> port_link_;
  uint32_t agents_ = 0;
  uint32_t ilds_ = 0;
};

// The links a partition's traffic uses, and so owns: IPU-Links and
// Sync-Links with both ends on the partition's IPUs / machines (wrap links
// only with RINGSWNC routing, i.e. the whole torus ILD), and GW-Links between
// its machines. Two partitions never share one: their IPUs are disjoint.
std::vector<const Link*> PartitionLinks(const LinkTopology& topology, const Partition& partition);

// The ports a partition owns on each of its machines, sorted.
std::map<std::string, std::vector<uint32_t>> PartitionPorts(const LinkTopology& topology,
                                                            const Partition& partition);

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_LINK_TOPOLOGY_H_
