// The pod console of a highly available control plane: two real vipu-server
// members on one etcd, each given --http-listen. Only the leader serves it,
// and its state and header name the member as leader; after the leader is
// killed, the new leader's console says so.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/etcd_harness.h"
#include "tests/integration/cannot_run.h"
#include "tests/integration/chromium.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/ha_members.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

class HaConsoleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdCluster::Available()) VIPU_CANNOT_RUN_HERE() << "no etcd binary";
    ha_ = std::make_unique<HaMembers>(kHaMembers);
    absl::Status etcd = ha_->LaunchEtcd(1);
    ASSERT_TRUE(etcd.ok()) << etcd;
    for (int i = 0; i < kHaMembers; ++i) {
      http_ports_.push_back(FreePort());
      ha_->StartMember(i, {"--http-listen", absl::StrCat("127.0.0.1:", http_ports_[i]),
                           "--reconcile-window-ms", "0"});
    }
  }

  void TearDown() override { ha_.reset(); }

  // The control plane member i's console shows, or null while it serves no
  // console.
  nlohmann::json ControlPlaneOf(int i) {
    const std::string body = HttpGet(http_ports_[i], "/api/state");
    if (body.empty()) return nullptr;
    return nlohmann::json::parse(body)["control_plane"];
  }

  // The member whose console answers, once one does, or -1 after a minute.
  int AwaitConsole() {
    int serving = -1;
    WaitFor(
        [&] {
          for (int i = 0; i < kHaMembers; ++i) {
            if (ha_->Started(i) && !ControlPlaneOf(i).is_null()) serving = i;
          }
          return serving >= 0;
        },
        absl::Seconds(60));
    return serving;
  }

  nlohmann::json LeaderView(int i) {
    return {{"mode", "ha"},
            {"role", "leader"},
            {"leader", ha_->address(i)},
            {"member", ha_->address(i)}};
  }

  std::unique_ptr<HaMembers> ha_;
  std::vector<int> http_ports_;
};

TEST_F(HaConsoleTest, OnlyTheLeaderServesTheConsoleAndEveryMemberItsRoleMetrics) {
  const int leader = AwaitConsole();
  ASSERT_GE(leader, 0);
  EXPECT_EQ(ControlPlaneOf(leader), LeaderView(leader));
  // Every member can be scraped and says its role and the leader.
  std::string standby_metrics;
  EXPECT_TRUE(WaitFor(
      [&] {
        standby_metrics = HttpGet(http_ports_[1 - leader], "/metrics");
        return standby_metrics.find(absl::StrCat("vipu_leader_info{leader=\"", ha_->address(leader),
                                                 "\"} 1")) != std::string::npos;
      },
      absl::Seconds(30)))
      << standby_metrics;
  EXPECT_NE(standby_metrics.find("vipu_server_role{role=\"standby\"} 1"), std::string::npos)
      << standby_metrics;
  // Once it knows the leader, a standby points at it instead of serving a
  // console.
  const std::string standby_page = HttpGetRaw(http_ports_[1 - leader], "/api/state");
  EXPECT_EQ(standby_page.rfind("HTTP/1.1 503", 0), 0u) << standby_page;
  EXPECT_NE(standby_page.find(absl::StrCat("is a standby; the pod console is the leader's (",
                                           ha_->address(leader))),
            std::string::npos)
      << standby_page;
  const std::string leader_metrics = HttpGet(http_ports_[leader], "/metrics");
  EXPECT_NE(leader_metrics.find("vipu_server_role{role=\"leader\"} 1"), std::string::npos)
      << leader_metrics;

  if (!ChromiumBinary().empty()) {
    std::string error;
    auto browser =
        Chromium::Start(absl::StrCat("http://127.0.0.1:", http_ports_[leader], "/"), {}, &error);
    ASSERT_NE(browser, nullptr) << error;
    const std::string expected = absl::StrCat("control plane: leader ", ha_->address(leader),
                                              " (this member); state in etcd");
    EXPECT_TRUE(browser->WaitUntil(
        absl::StrCat("document.getElementById('control-plane').textContent === '", expected, "'"),
        absl::Seconds(30)))
        << browser->String("document.getElementById('control-plane').textContent") << "\n"
        << browser->log();
  }

  // The next leader's console, on the address its standby listener held,
  // names the next leader.
  ha_->Kill(leader);
  const int next = AwaitConsole();
  ASSERT_EQ(next, 1 - leader);
  EXPECT_EQ(ControlPlaneOf(next), LeaderView(next));
}

}  // namespace
}  // namespace vipu::testing
