// The pod console of a highly available control plane: two real vipu-server
// members on one etcd, each given --http-listen. Only the leader serves it,
// and its state and header name the member as leader; after the leader is
// killed, the new leader's console says so.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/etcd_harness.h"
#include "tests/integration/chromium.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

constexpr int kMembers = 2;

class HaConsoleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdCluster::Available()) GTEST_SKIP() << "no etcd binary";
    dir_ = MakeTempDir();
    EtcdClusterOptions options;
    options.dir = dir_;
    absl::StatusOr<std::unique_ptr<EtcdCluster>> etcd = EtcdCluster::Launch(options);
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = std::move(*etcd);
    // An empty configuration file: the machine's own never applies.
    config_ = dir_ + "/member.hcl";
    std::ofstream(config_) << "# test member\n";
    for (int i = 0; i < kMembers; ++i) {
      addresses_.push_back(absl::StrCat("127.0.0.1:", FreePort()));
      http_ports_.push_back(FreePort());
      StartMember(i);
    }
  }

  void TearDown() override {
    members_.clear();
    etcd_.reset();
    if (!dir_.empty() && !HasFailure()) RemoveTree(dir_);
    if (HasFailure()) std::fprintf(stderr, "logs kept in %s\n", dir_.c_str());
  }

  void StartMember(int i) {
    members_.resize(kMembers);
    members_[i] = std::make_unique<Daemon>(
        std::vector<std::string>{VIPU_SERVER_BIN, "--etcd-endpoints", etcd_->endpoints(),
                                 "--listen", addresses_[i], "--http-listen",
                                 absl::StrCat("127.0.0.1:", http_ports_[i]), "--config", config_,
                                 "--etcd-lease-ms", "2000", "--reconcile-window-ms", "0"},
        absl::StrCat(dir_, "/member", i, ".log"));
  }

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
          for (int i = 0; i < kMembers; ++i) {
            if (members_[i] && !ControlPlaneOf(i).is_null()) serving = i;
          }
          return serving >= 0;
        },
        absl::Seconds(60));
    return serving;
  }

  nlohmann::json LeaderView(int i) {
    return {
        {"mode", "ha"}, {"role", "leader"}, {"leader", addresses_[i]}, {"member", addresses_[i]}};
  }

  std::string dir_, config_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::vector<std::string> addresses_;
  std::vector<int> http_ports_;
  std::vector<std::unique_ptr<Daemon>> members_;
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
        return standby_metrics.find(absl::StrCat("vipu_leader_info{leader=\"", addresses_[leader],
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
                                           addresses_[leader])),
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
    const std::string expected =
        absl::StrCat("control plane: leader ", addresses_[leader], " (this member); state in etcd");
    EXPECT_TRUE(browser->WaitUntil(
        absl::StrCat("document.getElementById('control-plane').textContent === '", expected, "'"),
        absl::Seconds(30)))
        << browser->String("document.getElementById('control-plane').textContent") << "\n"
        << browser->log();
  }

  // The next leader's console, on the address its standby listener held,
  // names the next leader.
  members_[leader]->Kill();
  members_[leader].reset();
  const int next = AwaitConsole();
  ASSERT_EQ(next, 1 - leader);
  EXPECT_EQ(ControlPlaneOf(next), LeaderView(next));
}

}  // namespace
}  // namespace vipu::testing
