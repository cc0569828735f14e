// TopologyPusher and EnsureTopology on a FakeAgentClient: what each agent is
// told, and that failures and answers in any order leave the registry
// recording exactly the agents that took their topology.
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/fleet/topology_push.h"
#include "tests/unit/support/fake_agent_client.h"
#include "tests/unit/support/fleet_test_util.h"

namespace vipu::server {
namespace {

using Op = FakeAgentClient::Op;
using test::kPushWait;

class TopologyPushFakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    links_ = std::make_shared<const ClusterLinks>(BuildClusterLinks(
        *fabric::ClusterLayout::Build(fabric::PodCluster(*fabric::PodPreset("pod64"), "pod64"))));
    ids_ = links_->layout.cluster().agent_ids;
    ASSERT_EQ(ids_.size(), 16u);
    for (size_t i = 0; i < ids_.size(); ++i) {
      LiveAgent a;
      a.id = ids_[i];
      a.host = "127.0.0.1";
      a.port = static_cast<uint32_t>(7000 + i);
      registry_.Register(a, absl::Now());
    }
    pusher_ = std::make_unique<TopologyPusher>(&agents_, &registry_,
                                               TopologyPusher::Options{absl::Seconds(5), 4});
  }
  void TearDown() override {
    agents_.CompleteAllHeld();
    pusher_.reset();
  }

  AgentRegistry registry_{absl::Seconds(10)};
  FakeAgentClient agents_;
  std::shared_ptr<const ClusterLinks> links_;
  std::vector<std::string> ids_;
  std::unique_ptr<TopologyPusher> pusher_;
};

TEST_F(TopologyPushFakeTest, TellsEveryAgentItsOwnPlace) {
  pusher_->Push({links_});
  ASSERT_TRUE(pusher_->AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(pusher_->ToldForTesting(), 16u);
  std::vector<FakeAgentClient::Call> calls = agents_.calls(Op::kSetTopology);
  ASSERT_EQ(calls.size(), 16u);
  for (const auto& c : calls) {
    SCOPED_TRACE(c.agent.agent_id);
    AgentTopology want = TopologyFor(*links_, c.agent.agent_id);
    EXPECT_EQ(c.topology.cluster_id, "pod64");
    EXPECT_EQ(TopologyFingerprint(c.topology), TopologyFingerprint(want));
    EXPECT_EQ(registry_.Get(c.agent.agent_id)->topology_sent, TopologyHash(want));
  }
  // Told once: a second push sends nothing.
  pusher_->Push({links_});
  ASSERT_TRUE(pusher_->AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(agents_.calls(Op::kSetTopology).size(), 16u);
}

TEST_F(TopologyPushFakeTest, AFailedAgentIsNotRecordedAndIsAskedAgain) {
  agents_.Fail(ids_[3], Op::kSetTopology, absl::UnavailableError("down"));
  pusher_->Push({links_});
  ASSERT_TRUE(pusher_->AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(pusher_->ToldForTesting(), 15u);
  EXPECT_EQ(pusher_->FailedForTesting(), 1u);
  EXPECT_EQ(registry_.Get(ids_[3])->topology_sent, 0u);
  agents_.Succeed(ids_[3], Op::kSetTopology);
  pusher_->Push({links_});
  ASSERT_TRUE(pusher_->AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(pusher_->ToldForTesting(), 16u);
  EXPECT_NE(registry_.Get(ids_[3])->topology_sent, 0u);
}

TEST_F(TopologyPushFakeTest, HeldCallsAnsweredInReverseOrderKeepTheLimit) {
  agents_.Hang("", Op::kSetTopology);
  pusher_->Push({links_});
  // At most max_in_flight (4) calls at once, whatever order they end in.
  size_t answered = 0;
  while (answered < 16) {
    ASSERT_TRUE(agents_.AwaitHeld(1));
    std::vector<FakeAgentClient::Call> calls = agents_.calls(Op::kSetTopology);
    ASSERT_LE(calls.size() - answered, 4u);
    // The newest held call first.
    bool done = false;
    for (auto it = calls.rbegin(); it != calls.rend() && !done; ++it) {
      done = agents_.CompleteHeld(it->agent.agent_id, Op::kSetTopology);
    }
    ASSERT_TRUE(done);
    ++answered;
  }
  ASSERT_TRUE(pusher_->AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(pusher_->ToldForTesting(), 16u);
  EXPECT_EQ(agents_.held(), 0u);
}

TEST_F(TopologyPushFakeTest, EnsureTopologyTellsOnceAndReportsFailures) {
  ASSERT_TRUE(EnsureTopology(&agents_, &registry_, *links_, ids_[0], kPushWait).ok());
  ASSERT_TRUE(EnsureTopology(&agents_, &registry_, *links_, ids_[0], kPushWait).ok());
  EXPECT_EQ(agents_.calls(Op::kSetTopology).size(), 1u);

  agents_.Fail(ids_[1], Op::kSetTopology, absl::DeadlineExceededError("Deadline Exceeded"));
  absl::Status s = EnsureTopology(&agents_, &registry_, *links_, ids_[1], kPushWait);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_EQ(s.message(), "agent " + ids_[1] + ": SetTopology failed: Deadline Exceeded");
  absl::Status unknown = EnsureTopology(&agents_, &registry_, *links_, "nobody", kPushWait);
  EXPECT_EQ(unknown.message(), "agent nobody: not connected");
}

}  // namespace
}  // namespace vipu::server
