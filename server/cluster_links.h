// The links of the clusters in the database, as the server needs them: the
// ports each partition owns (sent with ConfigurePartition), what SetTopology
// tells each agent, and the faults that touch a partition.
#ifndef VIPU_SERVER_CLUSTER_LINKS_H_
#define VIPU_SERVER_CLUSTER_LINKS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "fabric/link_topology.h"
#include "fabric/topology.h"
#include "server/agent_registry.h"
#include "storage/store.h"
#include "vipu_agent.pb.h"

namespace vipu::server {

struct ClusterLinks {
  fabric::ClusterLayout layout;
  fabric::LinkTopology topology;
};

// The layout of `cluster`, built once per cluster content and shared: at
// 16,384 machines building it costs milliseconds, on every create. Callers
// read the cluster from the database each time, and only an identical
// cluster (id, agents in order, ILD count, topologies) reuses the layout, so
// a cluster removed and created again with other agents gets a new one.
// Thread-safe.
absl::StatusOr<std::shared_ptr<const fabric::ClusterLayout>> LayoutOf(
    const fabric::Cluster& cluster);
// The links of `cluster`, built once per layout LayoutOf hands out: they
// depend only on the layout, and building them costs more than the rest of a
// configure (hundreds of milliseconds at 16,384 machines). Thread-safe.
absl::StatusOr<std::shared_ptr<const ClusterLinks>> LinksOf(const fabric::Cluster& cluster);
// LinksOf the cluster as the database has it now.
absl::StatusOr<std::shared_ptr<const ClusterLinks>> LoadClusterLinks(storage::Store* store,
                                                                     const std::string& cluster_id);
ClusterLinks BuildClusterLinks(fabric::ClusterLayout layout);

// fabric::PartitionPorts of the partition's cluster.
absl::StatusOr<std::map<std::string, std::vector<uint32_t>>> PartitionLinkPorts(
    storage::Store* store, const fabric::Partition& partition);

// What SetTopology tells `agent_id` (which must be in the cluster).
vipuagent::SetTopologyRequest TopologyRequest(const ClusterLinks& links,
                                              const std::string& agent_id);
// Changes whenever the request would (cluster, position or ports).
std::string TopologyFingerprint(const vipuagent::SetTopologyRequest& request);

// Why a partition cannot work right now, one message per fault naming the
// machine and the IPU or link: "agent ag3: down (no heartbeat for 3.2 s)",
// "agent ag3: IPU 2 error (injected fault)", "agent ag3: IPU-Link
// ag3.ipu1-ag4.ipu3 down". Empty when healthy. Only the partition's own
// IPUs and owned links count.
std::vector<std::string> PartitionProblems(const fabric::Partition& partition,
                                           const ClusterLinks& links, const AgentRegistry& registry,
                                           absl::Time now);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CLUSTER_LINKS_H_
