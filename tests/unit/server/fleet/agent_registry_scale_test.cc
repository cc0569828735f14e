// What keeps a create on 16,384 machines cheap in the fleet room: the
// registry's Up bitmap of a layout (handed out again until something that
// could change it happens), liveness and faults without the agents'
// reports, the reports packed (Attributes), and the links cache recognising
// the store's shared cluster by pointer.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/attributes.h"
#include "server/fleet/cluster_links_cache.h"
#include "tests/unit/support/fleet_test_util.h"

namespace vipu::server {
namespace {

using test::MakeCluster;
using test::MakeLiveAgent;
using ::testing::ElementsAre;
using ::testing::Pair;

std::shared_ptr<const fabric::ClusterLayout> Layout(const fabric::Cluster& c) {
  auto built = fabric::ClusterLayout::Build(c);
  EXPECT_TRUE(built.ok()) << built.status();
  return std::make_shared<const fabric::ClusterLayout>(*std::move(built));
}

std::vector<bool> Bits(const std::shared_ptr<const std::vector<bool>>& up) { return *up; }

TEST(UpMachinesTest, MarksTheUpMachinesByLayoutIndex) {
  AgentRegistry registry(absl::Seconds(1));  // timeout 3 s
  const absl::Time t0 = absl::Now();
  // a10 sorts before a2: the walk goes by id, the bitmap by cluster position.
  auto layout = Layout(MakeCluster("c", "a", 12));
  registry.RegisterMany({MakeLiveAgent("a10"), MakeLiveAgent("a2"), MakeLiveAgent("zz")}, t0);
  std::vector<bool> want(12, false);
  want[2] = want[10] = true;
  EXPECT_EQ(Bits(registry.UpMachines(layout, t0)), want);
}

TEST(UpMachinesTest, HandedOutAgainUntilSomethingChanges) {
  AgentRegistry registry(absl::Seconds(1));  // timeout 3 s
  const absl::Time t0 = absl::Now();
  auto layout = Layout(MakeCluster("c", "a", 4));
  registry.RegisterMany({MakeLiveAgent("a0"), MakeLiveAgent("a1")}, t0);
  auto first = registry.UpMachines(layout, t0);
  EXPECT_EQ(registry.UpMachines(layout, t0 + absl::Seconds(1)), first);  // nothing changed

  // A heartbeat of an Up agent changes nothing either.
  ASSERT_TRUE(registry.Heartbeat("a0", t0 + absl::Seconds(2)));
  EXPECT_EQ(registry.UpMachines(layout, t0 + absl::Seconds(2)), first);

  // a1 times out at t0 + 3 s: a new bitmap without it.
  auto later = registry.UpMachines(layout, t0 + absl::Seconds(3));
  EXPECT_NE(later, first);
  EXPECT_THAT(Bits(later), ElementsAre(true, false, false, false));

  // a1 comes back (a heartbeat of an agent the bitmap holds Down).
  ASSERT_TRUE(registry.Heartbeat("a1", t0 + absl::Seconds(3)));
  EXPECT_THAT(Bits(registry.UpMachines(layout, t0 + absl::Seconds(3))),
              ElementsAre(true, true, false, false));

  // A new registration.
  registry.Register(MakeLiveAgent("a3"), t0 + absl::Seconds(3));
  EXPECT_THAT(Bits(registry.UpMachines(layout, t0 + absl::Seconds(3))),
              ElementsAre(true, true, false, true));

  // Forgotten.
  registry.ForgetForTesting("a0");
  EXPECT_THAT(Bits(registry.UpMachines(layout, t0 + absl::Seconds(3))),
              ElementsAre(false, true, false, true));
}

// A heartbeat taken with a clock a little behind the bitmap's still counts
// as the agent coming back when the bitmap held it Down.
TEST(UpMachinesTest, LateHeartbeatOfAnAgentHeldDownIsSeen) {
  AgentRegistry registry(absl::Seconds(1));
  const absl::Time t0 = absl::Now();
  auto layout = Layout(MakeCluster("c", "a", 4));
  registry.RegisterMany({MakeLiveAgent("a0")}, t0);
  EXPECT_THAT(Bits(registry.UpMachines(layout, t0 + absl::Seconds(4))),
              ElementsAre(false, false, false, false));
  ASSERT_TRUE(registry.Heartbeat("a0", t0 + absl::Milliseconds(2999)));
  EXPECT_THAT(Bits(registry.UpMachines(layout, t0 + absl::Seconds(4))),
              ElementsAre(true, false, false, false));
}

TEST(AgentStatusTest, LivenessAndFaultsWithoutReports) {
  AgentRegistry registry(absl::Seconds(1));
  const absl::Time t0 = absl::Now();
  LiveAgent b = MakeLiveAgent("b");
  b.details = {{"Platform", "x"}};
  registry.RegisterMany({MakeLiveAgent("a"), b}, t0);
  AgentHealth sick;
  sick.ipu_errors[2] = "injected fault";
  ASSERT_TRUE(registry.Heartbeat("b", t0 + absl::Seconds(1), sick));
  std::optional<AgentStatus> status = registry.StatusOf("b");
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->last_heartbeat, t0 + absl::Seconds(1));
  EXPECT_EQ(status->health.ipu_errors.at(2), "injected fault");
  EXPECT_FALSE(registry.StatusOf("c").has_value());
  std::vector<AgentStatus> all = registry.Statuses();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, "a");
  auto faults = registry.Faults();
  ASSERT_EQ(faults.size(), 1u);
  EXPECT_EQ(faults[0].first, "b");
}

TEST(AttributesTest, KeepsPairsInOrderAndSharesNames) {
  Attributes a{{"board type", "M2000"}, {"clock", "1330MHz"}, {"empty", ""}};
  Attributes b(std::vector<std::pair<std::string, std::string>>{
      {"board type", "Bow-2000"}, {"clock", "1850MHz"}, {"empty", ""}});
  ASSERT_EQ(a.size(), 3u);
  EXPECT_THAT(
      std::vector<Attributes::value_type>(a.begin(), a.end()),
      ElementsAre(Pair("board type", "M2000"), Pair("clock", "1330MHz"), Pair("empty", "")));
  EXPECT_EQ(b[1].second, "1850MHz");
  EXPECT_EQ(a[0].first.data(), b[0].first.data());  // one list of names for both
  EXPECT_NE(a, b);
  EXPECT_EQ(a, (Attributes{{"board type", "M2000"}, {"clock", "1330MHz"}, {"empty", ""}}));
  Attributes none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.begin(), none.end());
  EXPECT_EQ(none, Attributes{});
  std::string seen;
  for (const auto& [name, value] : a) seen += std::string(name) + "=" + std::string(value) + ";";
  EXPECT_EQ(seen, "board type=M2000;clock=1330MHz;empty=;");
}

TEST(ClusterLinksCacheSharedTest, SamePointerIsFoundWithoutComparing) {
  ClusterLinksCache cache;
  auto shared = std::make_shared<const fabric::Cluster>(MakeCluster("c", "a", 8, 2));
  auto layout = cache.LayoutOf(shared);
  ASSERT_TRUE(layout.ok()) << layout.status();
  auto again = cache.LayoutOf(shared);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(layout->get(), again->get());
  auto links = cache.LinksOf(shared);
  ASSERT_TRUE(links.ok());
  EXPECT_EQ((*links)->layout.cluster().agent_ids, shared->agent_ids);

  // Another object with the same content (read again after a change of
  // another cluster): the same layout and links, found by content once.
  auto reread = std::make_shared<const fabric::Cluster>(MakeCluster("c", "a", 8, 2));
  auto by_content = cache.LinksOf(reread);
  ASSERT_TRUE(by_content.ok());
  EXPECT_EQ(by_content->get(), links->get());
  auto layout_by_content = cache.LayoutOf(reread);
  ASSERT_TRUE(layout_by_content.ok());
  EXPECT_EQ(layout_by_content->get(), layout->get());

  // Other content under the same id: new objects.
  auto changed = std::make_shared<const fabric::Cluster>(MakeCluster("c", "b", 8, 2));
  auto changed_layout = cache.LayoutOf(changed);
  ASSERT_TRUE(changed_layout.ok());
  EXPECT_NE(changed_layout->get(), layout->get());
  EXPECT_EQ((*changed_layout)->cluster().agent_ids, changed->agent_ids);
  EXPECT_EQ(cache.SizeForTesting(), 1u);
}

}  // namespace
}  // namespace vipu::server
