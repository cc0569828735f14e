// ClusterLinksCache: an identical cluster reuses its layout and links, a
// changed one gets new ones, the bound evicts the least recently used,
// Invalidate drops an entry, and concurrent callers share what is kept.
#include "server/fleet/cluster_links_cache.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/fleet_test_util.h"

namespace vipu::server {
namespace {

using test::MakeCluster;

TEST(ClusterLinksCacheTest, SameContentGivesTheSameObjects) {
  ClusterLinksCache cache;
  auto layout = cache.LayoutOf(MakeCluster("c", "a", 8, 2));
  ASSERT_TRUE(layout.ok()) << layout.status();
  // Another object with the same content, as read from the database again.
  auto again = cache.LayoutOf(MakeCluster("c", "a", 8, 2));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(layout->get(), again->get());

  auto links = cache.LinksOf(MakeCluster("c", "a", 8, 2));
  ASSERT_TRUE(links.ok()) << links.status();
  auto links_again = cache.LinksOf(MakeCluster("c", "a", 8, 2));
  ASSERT_TRUE(links_again.ok()) << links_again.status();
  EXPECT_EQ(links->get(), links_again->get());
  EXPECT_EQ((*links)->layout.cluster().agent_ids, MakeCluster("c", "a", 8, 2).agent_ids);
  // Asking for the links keeps the layout.
  auto layout_after = cache.LayoutOf(MakeCluster("c", "a", 8, 2));
  ASSERT_TRUE(layout_after.ok());
  EXPECT_EQ(layout->get(), layout_after->get());
  EXPECT_EQ(cache.SizeForTesting(), 1u);
}

TEST(ClusterLinksCacheTest, ChangedContentGivesNewObjects) {
  ClusterLinksCache cache;
  const fabric::Cluster base = MakeCluster("c", "a", 8, 2);
  auto layout = cache.LayoutOf(base);
  ASSERT_TRUE(layout.ok());
  auto links = cache.LinksOf(base);
  ASSERT_TRUE(links.ok());

  fabric::Cluster other_agents = MakeCluster("c", "b", 8, 2);
  fabric::Cluster other_order = base;
  std::reverse(other_order.agent_ids.begin(), other_order.agent_ids.end());
  fabric::Cluster other_ilds = MakeCluster("c", "a", 8, 1);
  fabric::Cluster other_topology = base;
  other_topology.topology = fabric::IldTopology::kMesh;
  fabric::Cluster other_cluster_topology = base;
  other_cluster_topology.cluster_topology = fabric::ClusterTopology::kLooped;
  for (const fabric::Cluster& changed :
       {other_agents, other_order, other_ilds, other_topology, other_cluster_topology}) {
    auto changed_layout = cache.LayoutOf(changed);
    ASSERT_TRUE(changed_layout.ok()) << changed_layout.status();
    EXPECT_NE(changed_layout->get(), layout->get());
    EXPECT_EQ((*changed_layout)->cluster().agent_ids, changed.agent_ids);
    EXPECT_EQ((*changed_layout)->num_ilds(), changed.num_ilds);
    EXPECT_EQ((*changed_layout)->cluster().topology, changed.topology);
    EXPECT_EQ((*changed_layout)->cluster().cluster_topology, changed.cluster_topology);
    auto changed_links = cache.LinksOf(changed);
    ASSERT_TRUE(changed_links.ok()) << changed_links.status();
    EXPECT_NE(changed_links->get(), links->get());
    EXPECT_EQ((*changed_links)->layout.cluster().agent_ids, changed.agent_ids);
    // One entry per cluster id: the changed cluster replaced the old one.
    EXPECT_EQ(cache.SizeForTesting(), 1u);
  }
  // What was handed out before stays valid.
  EXPECT_EQ((*layout)->cluster().agent_ids, base.agent_ids);
  EXPECT_EQ((*links)->layout.cluster().agent_ids, base.agent_ids);
  // Back to the first content: built again, the old objects are not kept.
  auto back = cache.LinksOf(base);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)->layout.cluster().agent_ids, base.agent_ids);
}

TEST(ClusterLinksCacheTest, TheBoundEvictsTheLeastRecentlyUsed) {
  ClusterLinksCache cache(/*max_clusters=*/2);
  EXPECT_EQ(cache.MaxClustersForTesting(), 2u);
  auto a = cache.LinksOf(MakeCluster("a", "a", 4));
  auto b = cache.LinksOf(MakeCluster("b", "b", 4));
  ASSERT_TRUE(a.ok() && b.ok());
  // "a" used after "b": "b" is the least recently used.
  auto a_again = cache.LinksOf(MakeCluster("a", "a", 4));
  ASSERT_TRUE(a_again.ok());
  EXPECT_EQ(a->get(), a_again->get());

  auto c = cache.LinksOf(MakeCluster("c", "c", 4));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(cache.SizeForTesting(), 2u);
  auto a_kept = cache.LinksOf(MakeCluster("a", "a", 4));
  ASSERT_TRUE(a_kept.ok());
  EXPECT_EQ(a->get(), a_kept->get());
  auto c_kept = cache.LinksOf(MakeCluster("c", "c", 4));
  ASSERT_TRUE(c_kept.ok());
  EXPECT_EQ(c->get(), c_kept->get());
  // "b" was evicted: built again (and now "a" goes, used before "c").
  auto b_rebuilt = cache.LinksOf(MakeCluster("b", "b", 4));
  ASSERT_TRUE(b_rebuilt.ok());
  EXPECT_NE(b->get(), b_rebuilt->get());
  EXPECT_EQ((*b)->layout.cluster().id, "b");  // the evicted links stay valid
  EXPECT_EQ(cache.SizeForTesting(), 2u);
  auto a_rebuilt = cache.LinksOf(MakeCluster("a", "a", 4));
  ASSERT_TRUE(a_rebuilt.ok());
  EXPECT_NE(a->get(), a_rebuilt->get());
}

TEST(ClusterLinksCacheTest, ABoundOfZeroHoldsOne) {
  ClusterLinksCache cache(/*max_clusters=*/0);
  EXPECT_EQ(cache.MaxClustersForTesting(), 1u);
  auto a = cache.LayoutOf(MakeCluster("a", "a", 4));
  ASSERT_TRUE(a.ok());
  auto a_again = cache.LayoutOf(MakeCluster("a", "a", 4));
  ASSERT_TRUE(a_again.ok());
  EXPECT_EQ(a->get(), a_again->get());
  ASSERT_TRUE(cache.LayoutOf(MakeCluster("b", "b", 4)).ok());
  EXPECT_EQ(cache.SizeForTesting(), 1u);
}

TEST(ClusterLinksCacheTest, InvalidateDropsTheCluster) {
  ClusterLinksCache cache;
  auto a = cache.LinksOf(MakeCluster("a", "a", 4));
  auto a_layout = cache.LayoutOf(MakeCluster("a", "a", 4));
  auto b = cache.LinksOf(MakeCluster("b", "b", 4));
  ASSERT_TRUE(a.ok() && a_layout.ok() && b.ok());
  EXPECT_EQ(cache.SizeForTesting(), 2u);

  cache.Invalidate("a");
  EXPECT_EQ(cache.SizeForTesting(), 1u);
  auto a_layout_again = cache.LayoutOf(MakeCluster("a", "a", 4));
  ASSERT_TRUE(a_layout_again.ok());
  EXPECT_NE(a_layout->get(), a_layout_again->get());
  auto a_again = cache.LinksOf(MakeCluster("a", "a", 4));
  ASSERT_TRUE(a_again.ok());
  EXPECT_NE(a->get(), a_again->get());
  EXPECT_EQ((*a)->layout.cluster().id, "a");  // still valid for its holder
  // Other clusters are untouched; an unknown id is no error.
  cache.Invalidate("nope");
  auto b_again = cache.LinksOf(MakeCluster("b", "b", 4));
  ASSERT_TRUE(b_again.ok());
  EXPECT_EQ(b->get(), b_again->get());
  EXPECT_EQ(cache.SizeForTesting(), 2u);
}

TEST(ClusterLinksCacheTest, AClusterThatDoesNotBuildIsAnErrorAndNotKept) {
  ClusterLinksCache cache;
  fabric::Cluster bad = MakeCluster("c", "a", 3, 2);  // 3 machines in 2 ILDs
  EXPECT_EQ(cache.LayoutOf(bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.LinksOf(bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.SizeForTesting(), 0u);
}

TEST(ClusterLinksCacheTest, ConcurrentCallersShareWhatIsKept) {
  ClusterLinksCache cache;
  const std::vector<fabric::Cluster> clusters = {
      MakeCluster("a", "a", 8, 2), MakeCluster("b", "b", 4), MakeCluster("c", "c", 16, 4)};
  constexpr int kThreads = 8;
  // Each thread's links and layout per cluster, then compared.
  std::vector<std::vector<std::shared_ptr<const ClusterLinks>>> links(kThreads);
  std::vector<std::vector<std::shared_ptr<const fabric::ClusterLayout>>> layouts(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int round = 0; round < 20; ++round) {
        for (size_t i = 0; i < clusters.size(); ++i) {
          // Half the threads ask for the links first, half for the layout.
          const size_t c = (i + static_cast<size_t>(t)) % clusters.size();
          absl::StatusOr<std::shared_ptr<const ClusterLinks>> l;
          absl::StatusOr<std::shared_ptr<const fabric::ClusterLayout>> y;
          if (t % 2 == 0) {
            l = cache.LinksOf(clusters[c]);
            y = cache.LayoutOf(clusters[c]);
          } else {
            y = cache.LayoutOf(clusters[c]);
            l = cache.LinksOf(clusters[c]);
          }
          ASSERT_TRUE(l.ok() && y.ok());
          if (round == 0) {
            links[t].resize(clusters.size());
            layouts[t].resize(clusters.size());
            links[t][c] = *l;
            layouts[t][c] = *y;
          } else {
            EXPECT_EQ(links[t][c], *l);
            EXPECT_EQ(layouts[t][c], *y);
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t c = 0; c < clusters.size(); ++c) {
    for (int t = 0; t < kThreads; ++t) {
      ASSERT_NE(links[t][c], nullptr);
      EXPECT_EQ(links[t][c], links[0][c]) << "thread " << t << " cluster " << c;
      EXPECT_EQ(layouts[t][c], layouts[0][c]) << "thread " << t << " cluster " << c;
      EXPECT_EQ(links[t][c]->layout.cluster().id, clusters[c].id);
    }
  }
  EXPECT_EQ(cache.SizeForTesting(), clusters.size());
}

TEST(ClusterLinksCacheTest, ConcurrentEvictionAndInvalidationHandOutTheAskedCluster) {
  ClusterLinksCache cache(/*max_clusters=*/2);
  std::vector<fabric::Cluster> clusters;
  for (const char* id : {"a", "b", "c", "d"}) clusters.push_back(MakeCluster(id, id, 4));
  // Cluster "a" is also asked for with another content, as if recreated.
  clusters.push_back(MakeCluster("a", "z", 8, 2));
  constexpr int kThreads = 6;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        const fabric::Cluster& c = clusters[static_cast<size_t>(round + t) % clusters.size()];
        auto l = cache.LinksOf(c);
        ASSERT_TRUE(l.ok()) << l.status();
        EXPECT_EQ((*l)->layout.cluster().agent_ids, c.agent_ids);
        auto y = cache.LayoutOf(c);
        ASSERT_TRUE(y.ok()) << y.status();
        EXPECT_EQ((*y)->cluster().agent_ids, c.agent_ids);
        if (round % 7 == t) cache.Invalidate(c.id);
        EXPECT_LE(cache.SizeForTesting(), 2u);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(cache.SizeForTesting(), 2u);
}

}  // namespace
}  // namespace vipu::server
