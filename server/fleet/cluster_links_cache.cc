// ClusterLinksCache: cluster layouts and links by cluster content, least recently used evicted.
#include "server/fleet/cluster_links_cache.h"

#include <algorithm>
#include <utility>

#include "base/status_macros.h"

namespace vipu::server {
namespace {

bool SameCluster(const fabric::Cluster& a, const fabric::Cluster& b) {
  return a.id == b.id && a.num_ilds == b.num_ilds && a.topology == b.topology &&
         a.cluster_topology == b.cluster_topology && a.agent_ids == b.agent_ids;
}

}  // namespace

ClusterLinksCache::ClusterLinksCache(size_t max_clusters)
    : max_clusters_(std::max<size_t>(max_clusters, 1)) {}

ClusterLinksCache::Entry* ClusterLinksCache::Find(
    const fabric::Cluster& cluster, const std::shared_ptr<const fabric::Cluster>& source) {
  auto it = entries_.find(cluster.id);
  if (it == entries_.end()) return nullptr;
  Entry& e = it->second;
  if (source == nullptr || e.source != source) {
    if (!SameCluster(e.layout->cluster(), cluster)) return nullptr;
    if (source != nullptr) e.source = source;  // the next ask is a pointer comparison
  }
  e.last_used = ++clock_;
  return &e;
}

void ClusterLinksCache::MakeRoom() {
  while (entries_.size() >= max_clusters_) {
    auto oldest = std::min_element(
        entries_.begin(), entries_.end(),
        [](const auto& a, const auto& b) { return a.second.last_used < b.second.last_used; });
    entries_.erase(oldest);
  }
}

absl::StatusOr<std::shared_ptr<const fabric::ClusterLayout>> ClusterLinksCache::LayoutOf(
    const fabric::Cluster& cluster) {
  return Layout(cluster, nullptr);
}

absl::StatusOr<std::shared_ptr<const fabric::ClusterLayout>> ClusterLinksCache::LayoutOf(
    const std::shared_ptr<const fabric::Cluster>& cluster) {
  return Layout(*cluster, cluster);
}

absl::StatusOr<std::shared_ptr<const ClusterLinks>> ClusterLinksCache::LinksOf(
    const fabric::Cluster& cluster) {
  return Links(cluster, nullptr);
}

absl::StatusOr<std::shared_ptr<const ClusterLinks>> ClusterLinksCache::LinksOf(
    const std::shared_ptr<const fabric::Cluster>& cluster) {
  return Links(*cluster, cluster);
}

absl::StatusOr<std::shared_ptr<const fabric::ClusterLayout>> ClusterLinksCache::Layout(
    const fabric::Cluster& cluster, const std::shared_ptr<const fabric::Cluster>& source) {
  {
    vipu::MutexLock lock(&mu_);
    if (Entry* e = Find(cluster, source)) return e->layout;
  }
  ASSIGN_OR_RETURN(fabric::ClusterLayout layout, fabric::ClusterLayout::Build(cluster));
  auto built = std::make_shared<const fabric::ClusterLayout>(std::move(layout));
  vipu::MutexLock lock(&mu_);
  if (Entry* e = Find(cluster, source)) return e->layout;  // another caller's build won
  auto it = entries_.find(cluster.id);
  if (it == entries_.end()) {
    MakeRoom();
    it = entries_.emplace(cluster.id, Entry{}).first;
  }
  // A changed cluster replaces its entry, links and all.
  it->second = Entry{built, nullptr, source, ++clock_};
  return built;
}

absl::StatusOr<std::shared_ptr<const ClusterLinks>> ClusterLinksCache::Links(
    const fabric::Cluster& cluster, const std::shared_ptr<const fabric::Cluster>& source) {
  std::shared_ptr<const fabric::ClusterLayout> layout;
  {
    vipu::MutexLock lock(&mu_);
    if (Entry* e = Find(cluster, source)) {
      if (e->links != nullptr) return e->links;
      layout = e->layout;
    }
  }
  if (layout == nullptr) {
    ASSIGN_OR_RETURN(layout, Layout(cluster, source));
  }
  auto built = std::make_shared<const ClusterLinks>(BuildClusterLinks(*layout));
  vipu::MutexLock lock(&mu_);
  auto it = entries_.find(cluster.id);
  // Kept only with the layout it was built from: if the entry changed or
  // went meanwhile, the caller still gets links of the cluster it passed.
  if (it != entries_.end() && it->second.layout == layout) {
    if (it->second.links != nullptr) return it->second.links;  // another caller's build won
    it->second.links = built;
  }
  return built;
}

void ClusterLinksCache::Invalidate(const std::string& cluster_id) {
  vipu::MutexLock lock(&mu_);
  entries_.erase(cluster_id);
}

size_t ClusterLinksCache::SizeForTesting() const {
  vipu::MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace vipu::server
