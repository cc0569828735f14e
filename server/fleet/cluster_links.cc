// BuildClusterLinks: a cluster's layout with the links between its ports.
#include "server/fleet/cluster_links.h"

#include <utility>

namespace vipu::server {

ClusterLinks BuildClusterLinks(fabric::ClusterLayout layout) {
  ClusterLinks links;
  links.topology = fabric::LinkTopology::Build(layout);
  links.layout = std::move(layout);
  return links;
}

}  // namespace vipu::server
