// LoadClusterLinks: cluster links read through the database.
#include "server/fleet/cluster_links_loader.h"

#include <utility>

#include "base/status_macros.h"

namespace vipu::server {

absl::StatusOr<std::shared_ptr<const ClusterLinks>> LoadClusterLinks(
    ClusterLinksCache* cache, storage::Store* store, const std::string& cluster_id) {
  // The store's shared cluster: after the first read, no row of its
  // members is read and the cache recognises it by pointer.
  std::shared_ptr<const fabric::Cluster> cluster;
  absl::Status s = store->Read([&](storage::ReadTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(cluster, txn.ClusterRef(cluster_id));
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  return cache->LinksOf(cluster);
}

}  // namespace vipu::server
