// A highly available control plane as operators run it: three real etcd
// members, two vipu-server members and one vipu-agent process serving four
// machines; clients and the agent given both members. The leader is killed
// (SIGKILL) and paused (SIGSTOP) under concurrent creates and removes, and
// after every round nothing acknowledged is lost and no IPU is held twice.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "tests/etcd_harness.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/ha_members.h"
#include "tests/integration/harness.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::testing {
namespace {

constexpr int kMembers = 2;
constexpr int kKillRounds = 5;

class HaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdCluster::Available()) GTEST_SKIP() << "no etcd binary";
    ha_ = std::make_unique<HaMembers>(kMembers);
    absl::Status etcd = ha_->LaunchEtcd(3);
    ASSERT_TRUE(etcd.ok()) << etcd;
    for (int i = 0; i < kMembers; ++i) StartMember(i);
    agent_ = std::make_unique<Daemon>(
        std::vector<std::string>{VIPU_AGENT_BIN, "--server",
                                 absl::StrCat(ha_->address(0), ",", ha_->address(1)), "--agent-ids",
                                 "ag1,ag2,ag3,ag4", "--host", "127.0.0.1"},
        ha_->dir() + "/agent.log");
    const int leader = ha_->AwaitAgreedLeader(absl::Seconds(60));
    ASSERT_GE(leader, 0);
    // The pod's cluster and allocation, through a standby where there is one.
    const std::string standby = ha_->address(1 - leader);
    // The agents register with the leader in their own time.
    CommandResult cluster;
    ASSERT_TRUE(WaitFor(
        [&] {
          cluster = RunCommand({VIPU_ADMIN_BIN, "--api-host", standby, "create", "cluster", "pod16",
                                "--agents", "ag1,ag2,ag3,ag4"});
          return cluster.exit_code == 0;
        },
        absl::Seconds(30)))
        << cluster.out << cluster.err;
    CommandResult allocation = RunCommand({VIPU_ADMIN_BIN, "--api-host", standby, "create",
                                           "allocation", "default", "--cluster", "pod16"});
    ASSERT_EQ(allocation.exit_code, 0) << allocation.out << allocation.err;
  }

  void TearDown() override {
    stop_ = true;
    for (std::thread& t : workers_) t.join();
    agent_.reset();
    ha_.reset();
  }

  void StartMember(int i) {
    ha_->StartMember(
        i, {"--auto-add-agents", "--heartbeat-ms", "200", "--reconcile-window-ms", "1000"});
  }

  // Runs `call` on each member in turn until one answers other than
  // UNAVAILABLE: what a client given the list does.
  template <typename Call>
  grpc::Status OnAnyMember(Call call) {
    grpc::Status status;
    for (const std::string& address : ha_->addresses()) {
      auto stub = virmgrpc::UserService::NewStub(
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      status = call(*stub, ctx);
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return status;
    }
    return status;
  }

  grpc::Status Create(const std::string& id) {
    return OnAnyMember([&](virmgrpc::UserService::Stub& stub, grpc::ClientContext& ctx) {
      virmgrpc::CreatePartitionRequest req;
      req.mutable_requirements()->set_id(id);
      req.mutable_requirements()->set_size(1);
      virmgrpc::CreatePartitionReply reply;
      return stub.CreatePartition(&ctx, req, &reply);
    });
  }

  grpc::Status Remove(const std::string& id) {
    return OnAnyMember([&](virmgrpc::UserService::Stub& stub, grpc::ClientContext& ctx) {
      virmgrpc::RemovePartitionRequest req;
      req.set_partition_id(id);
      req.set_force(true);
      virmgrpc::RemovePartitionReply reply;
      return stub.RemovePartition(&ctx, req, &reply);
    });
  }

  // Removes `id` until a member says it is gone (a remove whose answer was
  // lost in a failover may or may not have happened).
  bool RemoveUntilGone(const std::string& id) {
    while (!stop_) {
      grpc::Status s = Remove(id);
      if (s.ok() || s.error_code() == grpc::StatusCode::NOT_FOUND) return true;
    }
    return false;
  }

  // Creates and removes one-IPU partitions in a loop, recording what was
  // acknowledged. A create whose answer was lost is removed again, so the
  // pod does not fill up with partitions nobody knows of.
  void StartWorkers(int n) {
    for (int w = 0; w < n; ++w) {
      workers_.emplace_back([this, w] {
        for (int k = 0; !stop_; ++k) {
          const std::string id = absl::StrCat("w", w, "-", k);
          grpc::Status created = Create(id);
          if (!created.ok()) {
            if (created.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED &&
                created.error_code() != grpc::StatusCode::ALREADY_EXISTS) {
              RemoveUntilGone(id);
            }
            continue;
          }
          {
            MutexLock lock(&mu_);
            created_.insert(id);
            remove_started_.insert(id);
          }
          if (RemoveUntilGone(id)) {
            MutexLock lock(&mu_);
            removed_.insert(id);
          }
        }
      });
    }
  }

  // The invariants, through whichever member answers.
  void CheckInvariants() {
    std::set<std::string> must_exist, must_not_exist;
    {
      MutexLock lock(&mu_);
      for (const std::string& id : created_) {
        if (remove_started_.count(id) == 0) must_exist.insert(id);
      }
      must_not_exist = removed_;
    }
    virmgrpc::ListPartitionsReply reply;
    grpc::Status s = OnAnyMember([&](virmgrpc::UserService::Stub& stub, grpc::ClientContext& ctx) {
      reply.Clear();
      virmgrpc::ListPartitionsRequest req;
      return stub.ListPartitions(&ctx, req, &reply);
    });
    ASSERT_TRUE(s.ok()) << s.error_message();
    std::set<std::string> listed;
    std::set<std::pair<uint32_t, uint32_t>> held;
    for (const virmgrpc::Partition& p : reply.partitions()) {
      listed.insert(p.id());
      for (const virmgrpc::PartitionIpu& ipu : p.spec().ipus()) {
        EXPECT_TRUE(held.insert({ipu.ipulink_domain_topology_id(), ipu.topology_id()}).second)
            << "an IPU in two partitions, one of them " << p.id();
      }
    }
    for (const std::string& id : must_exist) EXPECT_EQ(listed.count(id), 1u) << "lost " << id;
    for (const std::string& id : must_not_exist) EXPECT_EQ(listed.count(id), 0u) << "back: " << id;
  }

  std::unique_ptr<HaMembers> ha_;
  std::unique_ptr<Daemon> agent_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
  Mutex mu_;
  std::set<std::string> created_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> remove_started_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> removed_ ABSL_GUARDED_BY(mu_);
};

TEST_F(HaTest, EveryMemberAnswersAndStatesItsRole) {
  const int leader = ha_->AwaitAgreedLeader(absl::Seconds(60));
  ASSERT_GE(leader, 0);
  EXPECT_EQ(ha_->RoleOf(1 - leader), "standby");
  // What scripts read: the usual lines, then the member's role and the leader.
  CommandResult version =
      RunCommand({VIPU_CLI_BIN, "--api-host", ha_->address(1 - leader), "--server-version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find(absl::StrCat("host: ", ha_->address(1 - leader),
                                          "\nrole: standby\n"
                                          "leader: ",
                                          ha_->address(leader), "\n")),
            std::string::npos)
      << version.out;
  // A partition created through the standby is the leader's.
  ASSERT_TRUE(Create("first").ok());
  // The create answers at once; the partition turns ACTIVE once the
  // machines are configured.
  CommandResult list;
  EXPECT_TRUE(WaitFor(
      [&] {
        list = RunCommand(
            {VIPU_CLI_BIN, "--api-host", ha_->address(1 - leader), "list", "partitions"});
        return list.exit_code == 0 && list.out.find("first") != std::string::npos &&
               list.out.find("ACTIVE") != std::string::npos;
      },
      absl::Seconds(30)))
      << list.out << list.err;
}

TEST_F(HaTest, KilledAndPausedLeadersLoseNothingAcknowledged) {
  ASSERT_TRUE(Create("kept").ok());
  {
    MutexLock lock(&mu_);
    created_.insert("kept");
  }
  StartWorkers(2);
  for (int round = 0; round < kKillRounds; ++round) {
    const int leader = ha_->AwaitLeader(absl::Seconds(60));
    ASSERT_GE(leader, 0) << "round " << round;
    ha_->Kill(leader);
    // A client retrying through the list gets its calls through again.
    const std::string probe = absl::StrCat("probe", round);
    ASSERT_TRUE(WaitFor([&] { return Create(probe).ok(); }, absl::Seconds(60)))
        << "round " << round;
    {
      MutexLock lock(&mu_);
      created_.insert(probe);
    }
    StartMember(leader);
    CheckInvariants();
    if (HasFailure()) return;
    {
      MutexLock lock(&mu_);
      remove_started_.insert(probe);
    }
    ASSERT_TRUE(RemoveUntilGone(probe));
    {
      MutexLock lock(&mu_);
      removed_.insert(probe);
    }
  }
  // A leader paused past its lease is deposed; continued, its writes are
  // fenced off and it starts again as a standby.
  const int paused = ha_->AwaitLeader(absl::Seconds(60));
  ASSERT_GE(paused, 0);
  kill(ha_->Pid(paused), SIGSTOP);
  ASSERT_TRUE(WaitFor([&] { return ha_->RoleOf(1 - paused) == "leader"; }, absl::Seconds(60)));
  kill(ha_->Pid(paused), SIGCONT);
  ASSERT_TRUE(WaitFor([&] { return ha_->RoleOf(paused) == "standby"; }, absl::Seconds(60)));
  EXPECT_NE(ReadFile(ha_->Log(paused)).find("stepping down"), std::string::npos);
  CheckInvariants();
  stop_ = true;
  for (std::thread& t : workers_) t.join();
  workers_.clear();
  CheckInvariants();
  MutexLock lock(&mu_);
  // The rounds ran under load: creates were acknowledged between the kills.
  EXPECT_GT(created_.size(), static_cast<size_t>(2 * kKillRounds));
}

TEST(HaFlags, WhatDoesNotApplyToAMemberIsRefused) {
  const std::vector<std::vector<std::string>> cases = {
      {"--etcd-endpoints", "http://127.0.0.1:1", "--db", "/tmp/x.db"},
      {"--etcd-endpoints", "http://127.0.0.1:1", "--simulate", "pod4"},
      {"--etcd-endpoints", "http://127.0.0.1:1", "--init", "--secure"},
      {"--etcd-endpoints", "http://127.0.0.1:1", "--http-listen", "127.0.0.1:99999"},
      {"--etcd-endpoints", "127.0.0.1:2379"},
      {"--etcd-endpoints", "http://127.0.0.1:2379,,http://127.0.0.1:2380"},
      {"--etcd-endpoints", "http://127.0.0.1:2379", "--etcd-prefix", "vipu"},
      {"--etcd-endpoints", "http://127.0.0.1:2379", "--etcd-lease-ms", "10"},
      {"--etcd-endpoints", "http://127.0.0.1:2379", "--listen", "0.0.0.0:8090"},
  };
  for (std::vector<std::string> args : cases) {
    args.insert(args.begin(), VIPU_SERVER_BIN);
    args.push_back("--config");
    args.push_back("/dev/null");
    CommandResult r = RunCommand(args);
    EXPECT_EQ(r.exit_code, 2) << args[2] << " " << args.back() << ": " << r.err;
    EXPECT_NE(r.err.find("vipu-server: "), std::string::npos) << r.err;
  }
}

// A member never exits because etcd is away: it serves as a standby that
// knows no leader, says why in every refusal, and leads once etcd answers,
// without being restarted.
TEST(HaEtcdAway, AMemberStartedWithoutEtcdServesRefusalsAndLeadsOnceEtcdAnswers) {
  if (!EtcdCluster::Available()) GTEST_SKIP() << "no etcd binary";
  HaMembers ha(1);
  absl::Status etcd = ha.LaunchEtcd(1);
  ASSERT_TRUE(etcd.ok()) << etcd;
  ha.etcd()->Stop(0);
  const std::string ready = ha.dir() + "/ready";
  ha.StartMember(0, {"--ready-file", ready});
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(ready); }, absl::Seconds(30)))
      << ReadFile(ha.Log(0));

  // Up and answering, in words: no leader, because etcd does not answer.
  CommandResult version =
      RunCommand({VIPU_CLI_BIN, "--api-host", ha.address(0), "--server-version"});
  EXPECT_EQ(version.exit_code, 0) << version.err;
  EXPECT_NE(version.out.find("role: standby\nleader: none\n"), std::string::npos) << version.out;
  CommandResult refused =
      RunCommand({VIPU_CLI_BIN, "--api-host", ha.address(0), "list", "partitions"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("no leader known"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("etcd"), std::string::npos) << refused.err;
  EXPECT_TRUE(ha.Running(0));

  // etcd back on the same address: the same process leads and serves.
  etcd = ha.etcd()->Start(0);
  ASSERT_TRUE(etcd.ok()) << etcd;
  ASSERT_GE(ha.AwaitLeader(absl::Seconds(60)), 0) << ReadFile(ha.Log(0));
  EXPECT_TRUE(ha.Running(0));
  CommandResult list;
  EXPECT_TRUE(WaitFor(
      [&] {
        list = RunCommand({VIPU_CLI_BIN, "--api-host", ha.address(0), "list", "partitions"});
        return list.exit_code == 0;
      },
      absl::Seconds(30)))
      << list.out << list.err;
}

TEST(HaMigrate, AStoppedServersStateMovesIntoEtcdOnceAndAMemberServesIt) {
  if (!EtcdCluster::Available()) GTEST_SKIP() << "no etcd binary";
  absl::StatusOr<std::unique_ptr<EtcdCluster>> etcd = EtcdCluster::Launch({});
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  std::unique_ptr<ServerProcess> server = ServerProcess::Start("pod4");
  ASSERT_NE(server, nullptr);
  CommandResult created = RunCommand({VIPU_CLI_BIN, "--api-host", server->address(), "create",
                                      "partition", "moved", "--size", "2"},
                                     {{"HOME", server->home()}});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::vector<std::string> migrate = {VIPU_ADMIN_BIN,     "migrate",
                                            "--from-db",        server->db_path(),
                                            "--etcd-endpoints", (*etcd)->endpoints()};
  // Not while a server has the file.
  CommandResult busy = RunCommand(migrate);
  EXPECT_NE(busy.exit_code, 0);
  EXPECT_NE(busy.err.find("vipu-server"), std::string::npos) << busy.err;
  ASSERT_EQ(server->Stop(), 0);

  CommandResult moved = RunCommand(migrate);
  ASSERT_EQ(moved.exit_code, 0) << moved.err;
  EXPECT_NE(moved.out.find("1 partitions"), std::string::npos) << moved.out;
  // Once only: the prefix now holds state.
  CommandResult again = RunCommand(migrate);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("already holds state"), std::string::npos) << again.err;

  // A member serves what the file held.
  const std::string address = absl::StrCat("127.0.0.1:", FreePort());
  Daemon member({VIPU_SERVER_BIN, "--etcd-endpoints", (*etcd)->endpoints(), "--listen", address,
                 "--config", "/dev/null", "--reconcile-window-ms", "0"},
                server->dir() + "/member.log");
  CommandResult list;
  ASSERT_TRUE(WaitFor(
      [&] {
        list = RunCommand({VIPU_CLI_BIN, "--api-host", address, "list", "partitions"});
        return list.exit_code == 0 && list.out.find("moved") != std::string::npos;
      },
      absl::Seconds(30)))
      << list.out << list.err;
}

TEST(HaMigrate, BadRequestsChangeNothing) {
  const std::vector<std::vector<std::string>> cases = {
      {"migrate", "--etcd-endpoints", "http://127.0.0.1:1"},
      {"migrate", "--from-db", "/tmp/x.db"},
      {"migrate", "--from-db", "/tmp/x.db", "--etcd-endpoints", "127.0.0.1:2379"},
      {"migrate", "--from-db", "/tmp/x.db", "--etcd-endpoints", "http://127.0.0.1:2379",
       "--etcd-prefix", "vipu"},
  };
  for (std::vector<std::string> args : cases) {
    args.insert(args.begin(), VIPU_ADMIN_BIN);
    CommandResult r = RunCommand(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
  }
  const std::string dir = MakeTempDir();
  CommandResult missing = RunCommand({VIPU_ADMIN_BIN, "migrate", "--from-db", dir + "/none.db",
                                      "--etcd-endpoints", "http://127.0.0.1:1"});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("no such file"), std::string::npos) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(dir + "/none.db"));
  RemoveTree(dir);
}

}  // namespace
}  // namespace vipu::testing
