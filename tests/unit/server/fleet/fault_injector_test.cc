// FaultInjector on a FakeAgentClient: a fault reaches the agent the
// database and the registry know, and the agent's refusals come back with
// the codes and messages vipu-admin shows.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "server/fleet/fault_injector.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "tests/unit/support/fake_agent_client.h"

namespace vipu::server {
namespace {

using Op = FakeAgentClient::Op;

class FaultInjectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fault_injector_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto store = storage::SqliteStore::Open(dir_ + "/vipu.db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
      if (absl::Status s = txn.InsertAgent({"m0", "127.0.0.1", 7000}); !s.ok()) return s;
      return txn.InsertAgent({"m1", "127.0.0.1", 7001});
    });
    ASSERT_TRUE(s.ok()) << s;
    LiveAgent a;
    a.id = "m0";
    a.host = "127.0.0.1";
    a.port = 7000;
    registry_.Register(a, absl::Now());
    injector_ =
        std::make_unique<FaultInjector>(store_.get(), &cluster_links_, &registry_, &agents_);
  }
  void TearDown() override {
    injector_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  static fabric::FaultRequest IpuError(const std::string& agent, uint32_t ipu) {
    fabric::FaultRequest r;
    r.agent_id = agent;
    r.kind = fabric::FaultKind::kIpuError;
    r.ipu = ipu;
    return r;
  }

  std::string dir_;
  std::unique_ptr<storage::Store> store_;
  ClusterLinksCache cluster_links_;
  AgentRegistry registry_{absl::Hours(1)};
  FakeAgentClient agents_;
  std::unique_ptr<FaultInjector> injector_;
};

TEST_F(FaultInjectorTest, TheFaultReachesTheAgentAtItsAddress) {
  auto description = injector_->Inject(IpuError("m0", 2));
  ASSERT_TRUE(description.ok()) << description.status();
  EXPECT_EQ(*description, "agent m0: fault injected");
  auto calls = agents_.calls(Op::kInjectFault);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].agent.port, 7000u);
  EXPECT_EQ(calls[0].fault.kind, fabric::FaultKind::kIpuError);
  EXPECT_EQ(calls[0].fault.ipu, 2u);
}

TEST_F(FaultInjectorTest, UnknownAndUnconnectedAgentsAreRefusedWithoutACall) {
  auto unknown = injector_->Inject(IpuError("m9", 0));
  EXPECT_TRUE(absl::IsNotFound(unknown.status())) << unknown.status();
  auto unconnected = injector_->Inject(IpuError("m1", 0));
  EXPECT_TRUE(absl::IsUnavailable(unconnected.status())) << unconnected.status();
  EXPECT_EQ(unconnected.status().message(), "agent_id: agent 'm1' is not connected");
  EXPECT_TRUE(agents_.calls().empty());
}

TEST_F(FaultInjectorTest, TheAgentsRefusalsKeepTheirCodeAndOtherFailuresAreUnavailable) {
  agents_.Fail("m0", Op::kInjectFault, absl::FailedPreconditionError("machine crashed"));
  auto refused = injector_->Inject(IpuError("m0", 1));
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_EQ(refused.status().message(), "machine crashed");

  agents_.Fail("m0", Op::kInjectFault, absl::DeadlineExceededError("Deadline Exceeded"));
  auto late = injector_->Inject(IpuError("m0", 1));
  EXPECT_TRUE(absl::IsUnavailable(late.status())) << late.status();
  EXPECT_EQ(late.status().message(),
            "agent_id: agent 'm0' did not take the fault: Deadline Exceeded");
}

}  // namespace
}  // namespace vipu::server
