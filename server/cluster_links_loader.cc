// LoadClusterLinks and PartitionLinkPorts: cluster links read through the database.
#include "server/cluster_links_loader.h"

#include <utility>

#include "fabric/link_topology.h"

namespace vipu::server {

absl::StatusOr<std::shared_ptr<const ClusterLinks>> LoadClusterLinks(
    ClusterLinksCache* cache, storage::Store* store, const std::string& cluster_id) {
  fabric::Cluster cluster;
  absl::Status s = store->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto c = txn.GetCluster(cluster_id);
    if (!c.ok()) return c.status();
    cluster = std::move(*c);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return cache->LinksOf(cluster);
}

absl::StatusOr<std::map<std::string, std::vector<uint32_t>>> PartitionLinkPorts(
    ClusterLinksCache* cache, storage::Store* store, const fabric::Partition& partition) {
  auto links = LoadClusterLinks(cache, store, partition.cluster_id);
  if (!links.ok()) return links.status();
  return fabric::PartitionPorts((*links)->topology, partition);
}

}  // namespace vipu::server
