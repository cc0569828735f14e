// TopologyPusher and EnsureTopology against an in-process fake agent that
// serves every machine on one port (as a shared-port vipu-agent does): who
// is told, how many calls run at once, that Push never waits for agents,
// and that a late answer for an older registration is not recorded.
#include "server/fleet/topology_push.h"

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "absl/base/internal/sysinfo.h"
#include "absl/time/clock.h"
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/fleet/grpc_agent_client.h"
#include "tests/unit/support/fleet_test_util.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::server {
namespace {

using test::kPushWait;
using ::testing::Each;
using ::testing::Eq;

// Answers SetTopology for any agent id; can hold calls until opened, and
// fail the agents named in `failing`.
class FakeAgents final : public vipuagent::Agent::Service {
 public:
  grpc::Status SetTopology(grpc::ServerContext*, const vipuagent::SetTopologyRequest* request,
                           vipuagent::SetTopologyReply*) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++running_;
    ++started_;
    max_running_ = std::max(max_running_, running_);
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    --running_;
    cv_.notify_all();
    if (failing_.count(request->agent_id()) != 0) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent is failing");
    }
    ++calls_[request->agent_id()];
    last_[request->agent_id()] = *request;
    return grpc::Status::OK;
  }

  void Hold() {
    Set([this] { open_ = false; });
  }
  void Open() {
    Set([this] { open_ = true; });
  }
  void Fail(const std::string& id, bool fail) {
    Set([&] { fail ? (void)failing_.insert(id) : (void)failing_.erase(id); });
  }
  // Waits until `n` calls have arrived in all (held or not).
  bool AwaitStarted(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, absl::ToChronoMilliseconds(kPushWait), [&] { return started_ >= n; });
  }
  int calls(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_.count(id) ? calls_[id] : 0;
  }
  int started() {
    std::lock_guard<std::mutex> lock(mu_);
    return started_;
  }
  int max_running() {
    std::lock_guard<std::mutex> lock(mu_);
    return max_running_;
  }
  vipuagent::SetTopologyRequest last(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return last_[id];
  }

 private:
  template <typename F>
  void Set(F f) {
    std::lock_guard<std::mutex> lock(mu_);
    f();
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int running_ = 0, max_running_ = 0, started_ = 0;
  std::set<std::string> failing_;
  std::map<std::string, int> calls_;
  std::map<std::string, vipuagent::SetTopologyRequest> last_;
};

// What an agent read off the wire, as the server's type, to compare with
// what the server meant to send.
AgentTopology FromWire(const vipuagent::SetTopologyRequest& r) {
  AgentTopology t;
  t.cluster_id = r.cluster_id();
  t.ild = r.ild();
  t.num_ilds = r.num_ilds();
  t.machine_index = r.machine_index();
  t.machines_per_ild = r.machines_per_ild();
  t.torus = r.torus();
  for (const vipuagent::LinkPort& p : r.ports()) {
    t.ports.push_back({p.port(), static_cast<fabric::LinkKind>(p.kind()), p.name(), p.local_ipu(),
                       p.peer_agent_id(), p.peer_port(), p.internal()});
  }
  return t;
}

class TopologyPushTest : public ::testing::Test {
 protected:
  // gRPC's TCP client (1.51) looks at errno for EINPROGRESS after connect()
  // only once grpc_fd_create has taken a lock (an absl::Mutex). The first
  // absl::Mutex to be contended in a process runs Abseil's one-time CPU
  // probes, which open files under /sys/devices/system/cpu and leave errno
  // at ENOENT where one is missing (a root without a full /sys). Run on the
  // connecting thread, they make the connect count as failed ("No such file
  // or directory"); the channel's one subchannel then backs off for a
  // second or more and every call of a Push fails at once. Probing here,
  // before any connect, leaves nothing to change errno in between.
  static void SetUpTestSuite() {
    absl::base_internal::NumCPUs();
    absl::base_internal::NominalCPUFrequency();
  }

  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&agents_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    links_ = std::make_shared<const ClusterLinks>(BuildClusterLinks(
        *fabric::ClusterLayout::Build(fabric::PodCluster(*fabric::PodPreset("pod64"), "pod64"))));
    ids_ = links_->layout.cluster().agent_ids;
    ASSERT_EQ(ids_.size(), 16u);
    for (const std::string& id : ids_) Register(id);
  }
  void TearDown() override {
    agents_.Open();
    pusher_.reset();
    server_->Shutdown();
  }

  void Register(const std::string& id, absl::Time at = absl::Now()) {
    LiveAgent a;
    a.id = id;
    a.host = "127.0.0.1";
    a.port = static_cast<uint32_t>(port_);
    registry_.Register(a, at);
  }
  TopologyPusher& Pusher(size_t max_in_flight = 256) {
    pusher_ = std::make_unique<TopologyPusher>(
        &client_, &registry_, TopologyPusher::Options{absl::Seconds(5), max_in_flight});
    return *pusher_;
  }
  std::vector<int> Calls() {
    std::vector<int> out;
    for (const std::string& id : ids_) out.push_back(agents_.calls(id));
    return out;
  }

  FakeAgents agents_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  AgentRegistry registry_{absl::Seconds(10)};
  GrpcAgentClient client_{absl::Seconds(5), /*credentials=*/nullptr};
  std::shared_ptr<const ClusterLinks> links_;
  std::vector<std::string> ids_;
  std::unique_ptr<TopologyPusher> pusher_;
};

TEST_F(TopologyPushTest, TellsEveryUpAgentItsOwnTopologyOnce) {
  TopologyPusher& pusher = Pusher();
  pusher.Push({links_});
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_THAT(Calls(), Each(Eq(1)));
  EXPECT_EQ(pusher.ToldForTesting(), 16u);
  for (const std::string& id : ids_) {
    EXPECT_EQ(agents_.last(id).agent_id(), id);
    EXPECT_EQ(TopologyFingerprint(FromWire(agents_.last(id))),
              TopologyFingerprint(TopologyFor(*links_, id)))
        << id;
    EXPECT_EQ(registry_.Get(id)->topology_sent, TopologyHash(TopologyFor(*links_, id)));
  }
  // Remembered: the next passes call nobody.
  pusher.Push({links_});
  pusher.Push({links_});
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_THAT(Calls(), Each(Eq(1)));
  EXPECT_EQ(pusher.ToldForTesting(), 16u);
}

TEST_F(TopologyPushTest, PushReturnsBeforeTheAgentsAnswerAndBoundsCallsInFlight) {
  TopologyPusher& pusher = Pusher(/*max_in_flight=*/4);
  agents_.Hold();
  pusher.Push({links_});  // returns although no agent has answered
  ASSERT_TRUE(agents_.AwaitStarted(4));
  EXPECT_EQ(pusher.ToldForTesting(), 0u);
  EXPECT_FALSE(pusher.AwaitIdleForTesting(absl::Now() + absl::Milliseconds(50)));
  EXPECT_EQ(agents_.started(), 4);  // the rest wait for a free slot
  agents_.Open();
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_THAT(Calls(), Each(Eq(1)));
  EXPECT_EQ(agents_.max_running(), 4);
}

TEST_F(TopologyPushTest, AnAgentThatRegistersAgainIsToldAgain) {
  TopologyPusher& pusher = Pusher();
  pusher.Push({links_});
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  Register("ag3");  // a restarted machine knows nothing
  EXPECT_EQ(registry_.Get("ag3")->topology_sent, 0u);
  pusher.Push({links_});
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(agents_.calls("ag3"), 2);
  EXPECT_EQ(agents_.calls("ag4"), 1);
  EXPECT_EQ(pusher.ToldForTesting(), 17u);
}

TEST_F(TopologyPushTest, DownAgentsAreToldOnceTheyBeatAgain) {
  const absl::Time long_ago = absl::Now() - absl::Minutes(5);
  Register("ag1", long_ago);
  Register("ag2", long_ago);
  TopologyPusher& pusher = Pusher();
  pusher.Push({links_});
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(agents_.calls("ag1"), 0);
  EXPECT_EQ(agents_.calls("ag2"), 0);
  EXPECT_EQ(pusher.ToldForTesting(), 14u);
  ASSERT_TRUE(registry_.Heartbeat("ag1", absl::Now()));
  pusher.Push({links_});
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(agents_.calls("ag1"), 1);
  EXPECT_EQ(agents_.calls("ag2"), 0);
}

TEST_F(TopologyPushTest, AFailedCallIsNotRecordedAndIsRetriedByTheNextPush) {
  agents_.Fail("ag2", true);
  TopologyPusher& pusher = Pusher();
  pusher.Push({links_});
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(pusher.FailedForTesting(), 1u);
  EXPECT_EQ(pusher.ToldForTesting(), 15u);
  EXPECT_EQ(registry_.Get("ag2")->topology_sent, 0u);
  agents_.Fail("ag2", false);
  pusher.Push({links_});
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(agents_.calls("ag2"), 1);
  EXPECT_EQ(pusher.ToldForTesting(), 16u);
}

TEST_F(TopologyPushTest, AnUnreachableAgentFailsWithinTheDeadline) {
  LiveAgent gone;
  gone.id = "ag5";
  gone.host = "127.0.0.1";
  gone.port = 1;  // nobody listens
  registry_.Register(gone, absl::Now());
  pusher_ = std::make_unique<TopologyPusher>(&client_, &registry_,
                                             TopologyPusher::Options{absl::Milliseconds(300), 256});
  pusher_->Push({links_});
  ASSERT_TRUE(pusher_->AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(pusher_->FailedForTesting(), 1u);
  EXPECT_EQ(agents_.calls("ag5"), 0);
  EXPECT_EQ(registry_.Get("ag5")->topology_sent, 0u);
}

TEST_F(TopologyPushTest, ALateAnswerForAnOlderRegistrationIsNotRecorded) {
  TopologyPusher& pusher = Pusher(/*max_in_flight=*/1);
  agents_.Hold();
  // Only ag1 is Up, so the one call in flight is ag1's.
  for (const std::string& id : ids_) {
    if (id != "ag1") Register(id, absl::Now() - absl::Minutes(5));
  }
  pusher.Push({links_});
  ASSERT_TRUE(agents_.AwaitStarted(1));
  Register("ag1");  // restarted while its call was in flight
  agents_.Open();
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(agents_.calls("ag1"), 1);
  EXPECT_EQ(registry_.Get("ag1")->topology_sent, 0u) << "told before the new registration";
  pusher.Push({links_});
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(agents_.calls("ag1"), 2);
  EXPECT_NE(registry_.Get("ag1")->topology_sent, 0u);
}

TEST_F(TopologyPushTest, QueuedCallsOfAClusterNoLongerPushedAreDropped) {
  TopologyPusher& pusher = Pusher(/*max_in_flight=*/1);
  agents_.Hold();
  pusher.Push({links_});
  ASSERT_TRUE(agents_.AwaitStarted(1));
  pusher.Push({});  // the cluster is gone
  agents_.Open();
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(agents_.started(), 1);
}

TEST_F(TopologyPushTest, EnsureTopologyTellsOneAgentAndWaitsForItsAnswer) {
  ASSERT_TRUE(EnsureTopology(&client_, &registry_, *links_, "ag7", absl::Seconds(5)).ok());
  EXPECT_EQ(agents_.calls("ag7"), 1);
  EXPECT_EQ(registry_.Get("ag7")->topology_sent, TopologyHash(TopologyFor(*links_, "ag7")));
  // Known already: no call.
  ASSERT_TRUE(EnsureTopology(&client_, &registry_, *links_, "ag7", absl::Seconds(5)).ok());
  EXPECT_EQ(agents_.calls("ag7"), 1);
  // What the pusher would send is remembered the same way.
  TopologyPusher& pusher = Pusher();
  pusher.Push({links_});
  ASSERT_TRUE(pusher.AwaitIdleForTesting(absl::Now() + kPushWait));
  EXPECT_EQ(agents_.calls("ag7"), 1);

  absl::Status unknown = EnsureTopology(&client_, &registry_, *links_, "ag99", absl::Seconds(1));
  EXPECT_TRUE(absl::IsUnavailable(unknown)) << unknown;
  Register("ag8");  // restarted: the pusher's earlier answer no longer counts
  agents_.Fail("ag8", true);
  absl::Status failed = EnsureTopology(&client_, &registry_, *links_, "ag8", absl::Seconds(5));
  EXPECT_TRUE(absl::IsUnavailable(failed)) << failed;
  EXPECT_THAT(std::string(failed.message()), ::testing::HasSubstr("agent ag8: SetTopology failed"));
}

TEST(TopologyHashTest, DiffersByAgentAndIsNeverZero) {
  ClusterLinks links = BuildClusterLinks(
      *fabric::ClusterLayout::Build(fabric::PodCluster(*fabric::PodPreset("pod16"), "pod16")));
  const uint64_t ag1 = TopologyHash(TopologyFor(links, "ag1"));
  EXPECT_NE(ag1, 0u);
  EXPECT_EQ(ag1, TopologyHash(TopologyFor(links, "ag1")));
  EXPECT_NE(ag1, TopologyHash(TopologyFor(links, "ag2")));
}

}  // namespace
}  // namespace vipu::server
