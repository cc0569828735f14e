// The links of a cluster as the database has it now, for the fleet's own
// jobs (fault injection, cluster tests).
#ifndef VIPU_SERVER_FLEET_CLUSTER_LINKS_LOADER_H_
#define VIPU_SERVER_FLEET_CLUSTER_LINKS_LOADER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/fleet/cluster_links.h"
#include "server/fleet/cluster_links_cache.h"
#include "storage/store.h"

namespace vipu::server {

// cache->LinksOf the cluster `cluster_id` as the database has it now. The
// store's errors (NOT_FOUND for an unknown cluster) or LinksOf's.
absl::StatusOr<std::shared_ptr<const ClusterLinks>> LoadClusterLinks(ClusterLinksCache* cache,
                                                                     storage::Store* store,
                                                                     const std::string& cluster_id);

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_CLUSTER_LINKS_LOADER_H_
