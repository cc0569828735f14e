// The layouts and links of the clusters the server works on, built once per
// cluster content and shared: at 16,384 machines a layout costs milliseconds
// and its links hundreds of milliseconds, on every create, health tick and
// console refresh otherwise.
#ifndef VIPU_SERVER_FLEET_CLUSTER_LINKS_CACHE_H_
#define VIPU_SERVER_FLEET_CLUSTER_LINKS_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "fabric/topology.h"
#include "fabric/types.h"
#include "server/fleet/cluster_links.h"

namespace vipu::server {

// Holds, per cluster id, the layout of the cluster as last asked for and its
// links (built on the first LinksOf). Callers read the cluster from the
// database each time and pass it in: an entry is reused only for an
// identical cluster (id, agents in order, ILD count, topologies), so a
// cluster removed and created again with other agents, whoever changed the
// database, gets a new layout. The database stays the source of truth.
//
// The forms taking a std::shared_ptr<const fabric::Cluster> (the store's
// ReadTxn::ClusterRef) first compare the pointer with the one the entry was
// last matched with: the store hands out the same object for as long as the
// cluster is unchanged, so a create on 16,384 machines costs no comparison
// of 16,384 ids. Another pointer falls back to comparing the content, and
// when that matches, the entry remembers the new pointer.
//
// Bound: at most `max_clusters` entries; adding one more evicts the least
// recently used. The health monitor asks for every cluster on each tick, so
// the bound should be at least the number of clusters in the database, or
// their links are rebuilt every tick. Invalidate(cluster_id) drops an entry
// at once (a removed cluster's links need not wait for eviction).
//
// What it hands out is shared and immutable, and stays valid after its
// entry is evicted or replaced. One per server, created in main and passed
// by pointer to every user, which must not outlive it. Thread-safe. Builds
// run outside the lock, so a slow build blocks no other cluster; callers
// asking at once for a cluster not held may each build it, and all get the
// one that is kept.
class ClusterLinksCache {
 public:
  static constexpr size_t kDefaultMaxClusters = 32;

  // `max_clusters` of 0 is taken as 1.
  explicit ClusterLinksCache(size_t max_clusters = kDefaultMaxClusters);
  ClusterLinksCache(const ClusterLinksCache&) = delete;
  ClusterLinksCache& operator=(const ClusterLinksCache&) = delete;

  // The layout of `cluster`: the one handed out before for an identical
  // cluster while it is held, else a new one. The errors of
  // fabric::ClusterLayout::Build (INVALID_ARGUMENT), nothing kept then.
  absl::StatusOr<std::shared_ptr<const fabric::ClusterLayout>> LayoutOf(
      const fabric::Cluster& cluster) ABSL_LOCKS_EXCLUDED(mu_);
  // The same; `cluster` must not be null.
  absl::StatusOr<std::shared_ptr<const fabric::ClusterLayout>> LayoutOf(
      const std::shared_ptr<const fabric::Cluster>& cluster) ABSL_LOCKS_EXCLUDED(mu_);

  // The links of `cluster`, built once per layout LayoutOf hands out: they
  // depend only on the layout. Errors as LayoutOf.
  absl::StatusOr<std::shared_ptr<const ClusterLinks>> LinksOf(const fabric::Cluster& cluster)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The same; `cluster` must not be null.
  absl::StatusOr<std::shared_ptr<const ClusterLinks>> LinksOf(
      const std::shared_ptr<const fabric::Cluster>& cluster) ABSL_LOCKS_EXCLUDED(mu_);

  // Forgets the layout and links of `cluster_id`, if held: the next ask
  // builds them again. Callers holding them keep them.
  void Invalidate(const std::string& cluster_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Clusters held (<= MaxClustersForTesting()).
  size_t SizeForTesting() const ABSL_LOCKS_EXCLUDED(mu_);
  size_t MaxClustersForTesting() const { return max_clusters_; }

 private:
  struct Entry {
    std::shared_ptr<const fabric::ClusterLayout> layout;
    std::shared_ptr<const ClusterLinks> links;  // null until the first LinksOf
    // The shared cluster last found identical to the layout's (may be null).
    std::shared_ptr<const fabric::Cluster> source;
    uint64_t last_used = 0;
  };

  // The entry of `cluster` if it holds an identical cluster, marked used;
  // else null. `source` (may be null) is `cluster` shared: equal to the
  // entry's, no comparison is made; found identical, the entry keeps it.
  Entry* Find(const fabric::Cluster& cluster, const std::shared_ptr<const fabric::Cluster>& source)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::shared_ptr<const fabric::ClusterLayout>> Layout(
      const fabric::Cluster& cluster, const std::shared_ptr<const fabric::Cluster>& source)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::shared_ptr<const ClusterLinks>> Links(
      const fabric::Cluster& cluster, const std::shared_ptr<const fabric::Cluster>& source)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Drops least recently used entries until there is room for one more.
  void MakeRoom() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_clusters_;
  mutable vipu::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);  // by cluster id
  uint64_t clock_ ABSL_GUARDED_BY(mu_) = 0;                    // last_used of the next use
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_CLUSTER_LINKS_CACHE_H_
