// The links of a cluster as the database has it now, and from them the
// ports each partition owns (sent with ConfigurePartition).
#ifndef VIPU_SERVER_FLEET_CLUSTER_LINKS_LOADER_H_
#define VIPU_SERVER_FLEET_CLUSTER_LINKS_LOADER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fabric/types.h"
#include "server/fleet/cluster_links.h"
#include "server/fleet/cluster_links_cache.h"
#include "storage/store.h"

namespace vipu::server {

// cache->LinksOf the cluster `cluster_id` as the database has it now. The
// store's errors (NOT_FOUND for an unknown cluster) or LinksOf's.
absl::StatusOr<std::shared_ptr<const ClusterLinks>> LoadClusterLinks(ClusterLinksCache* cache,
                                                                     storage::Store* store,
                                                                     const std::string& cluster_id);

// fabric::PartitionPorts of the partition's cluster. Errors as
// LoadClusterLinks.
absl::StatusOr<std::map<std::string, std::vector<uint32_t>>> PartitionLinkPorts(
    ClusterLinksCache* cache, storage::Store* store, const fabric::Partition& partition);

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_CLUSTER_LINKS_LOADER_H_
