// RegistrationClient against an in-process fake AgentRegistry.
#include "agents/registration.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "wire/metadata_keys.h"

namespace vipu::agents {
namespace {

using namespace std::chrono_literals;

constexpr auto kDeadline = 10s;

// Records what reaches it; can be told to refuse or to ask for re-registration.
class FakeRegistry final : public vipuagent::AgentRegistry::Service {
 public:
  grpc::Status Register(grpc::ServerContext* context, const vipuagent::RegisterRequest* request,
                        vipuagent::RegisterReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (refuse_registers_ > 0) {
      --refuse_registers_;
      ++refused_;
      refusal_times_.push_back(std::chrono::steady_clock::now());
      if (!retry_after_ms_.empty()) {
        context->AddTrailingMetadata(wire::kRetryAfterMetadata, retry_after_ms_);
      }
      cv_.notify_all();
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "not ready");
    }
    registers_.push_back(*request);
    reply->set_heartbeat_interval_ms(interval_ms_);
    cv_.notify_all();
    return grpc::Status::OK;
  }
  grpc::Status Heartbeat(grpc::ServerContext*, const vipuagent::HeartbeatRequest* request,
                         vipuagent::HeartbeatReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    heartbeats_.push_back(*request);
    heartbeat_times_.push_back(std::chrono::steady_clock::now());
    cv_.notify_all();
    if (reregister_next_) {
      reregister_next_ = false;
      reply->set_reregister(true);
    }
    if (not_found_next_) {
      not_found_next_ = false;
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "agent unknown");
    }
    return grpc::Status::OK;
  }

  // Waits until `done` holds (called under the lock) or the deadline passes.
  bool WaitFor(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kDeadline, done);
  }

  size_t CountRegisters(const std::string& agent_id) const {
    size_t n = 0;
    for (const auto& r : registers_) n += r.agent_id() == agent_id;
    return n;
  }
  size_t CountHeartbeats(const std::string& agent_id) const {
    size_t n = 0;
    for (const auto& h : heartbeats_) n += h.agent_id() == agent_id;
    return n;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<vipuagent::RegisterRequest> registers_;
  std::vector<vipuagent::HeartbeatRequest> heartbeats_;
  std::vector<std::chrono::steady_clock::time_point> heartbeat_times_;
  uint32_t interval_ms_ = 20;
  int refuse_registers_ = 0;
  int refused_ = 0;
  std::vector<std::chrono::steady_clock::time_point> refusal_times_;
  std::string retry_after_ms_;  // sent with each refusal when not empty
  bool reregister_next_ = false;
  bool not_found_next_ = false;
};

// A registry on a unix socket, so the address is known before it listens.
class RegistryServer {
 public:
  RegistryServer() {
    static std::atomic<int> counter{0};
    address_ = "unix:/tmp/vipu-agent-test-" + std::to_string(getpid()) + "-" +
               std::to_string(counter++) + ".sock";
  }
  ~RegistryServer() { Stop(); }
  void Start() {
    grpc::ServerBuilder builder;
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddListeningPort(address_, grpc::InsecureServerCredentials());
    builder.RegisterService(&registry);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void Stop() {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    server_.reset();
    unlink(address_.substr(5).c_str());
  }
  const std::string& address() const { return address_; }

  FakeRegistry registry;

 private:
  std::string address_;
  std::unique_ptr<grpc::Server> server_;
};

RegistrationOptions Options(const std::string& address) {
  RegistrationOptions options;
  options.server_addresses = {address};
  options.advertised_host = "127.0.0.9";
  return options;
}

// Polls a condition the client exposes (no notification to wait on), with a deadline.
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

class RegistrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ag1_.set_ipuof_port(50001);
    ag2_.set_ipuof_port(50002);
    PartitionConfig config;
    config.partition_id = "p1";
    config.generation = 7;
    config.ipus = {2, 3};
    ASSERT_TRUE(ag1_.Configure(config).ok());
  }

  SimulatedMachine ag1_{"ag1", fabric::MachineType::kM2000};
  SimulatedMachine ag2_{"ag2", fabric::MachineType::kBow};
  RegistryServer server_;
  FakeRegistry& registry_ = server_.registry;
};

TEST_F(RegistrationTest, RegistersEveryMachineThenHeartbeatsWithHeld) {
  server_.Start();
  RegistrationClient client(Options(server_.address()), {&ag1_, &ag2_});
  client.Start();
  ASSERT_TRUE(registry_.WaitFor([&] {
    return registry_.CountHeartbeats("ag1") >= 3 && registry_.CountHeartbeats("ag2") >= 3;
  }));
  client.Stop();

  std::lock_guard<std::mutex> lock(registry_.mu_);
  ASSERT_EQ(registry_.registers_.size(), 2u);
  const vipuagent::RegisterRequest& r1 = registry_.registers_[0].agent_id() == "ag1"
                                             ? registry_.registers_[0]
                                             : registry_.registers_[1];
  EXPECT_EQ(r1.agent_id(), "ag1");
  EXPECT_EQ(r1.host(), "127.0.0.9");
  EXPECT_EQ(r1.port(), 50001u);
  EXPECT_EQ(r1.machine().agent_id(), "ag1");
  EXPECT_EQ(r1.machine().machine_type(), "m2000");
  EXPECT_EQ(r1.machine().ipuof_port(), 50001u);
  EXPECT_EQ(r1.machine().ipus_size(), 4);
  EXPECT_EQ(r1.machine().details_size(), 12);
  ASSERT_EQ(r1.held_size(), 1);
  EXPECT_EQ(r1.held(0).partition_id(), "p1");
  EXPECT_EQ(r1.held(0).generation(), 7u);
  EXPECT_THAT(r1.held(0).ipus(), ::testing::ElementsAre(2u, 3u));

  for (const auto& h : registry_.heartbeats_) {
    if (h.agent_id() == "ag1") {
      ASSERT_EQ(h.held_size(), 1);
      EXPECT_EQ(h.held(0).partition_id(), "p1");
    } else {
      EXPECT_EQ(h.agent_id(), "ag2");
      EXPECT_EQ(h.held_size(), 0);
    }
  }
}

TEST_F(RegistrationTest, HeartbeatCarriesCurrentHeld) {
  server_.Start();
  RegistrationClient client(Options(server_.address()), {&ag1_});
  client.Start();
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.CountHeartbeats("ag1") >= 1; }));
  ASSERT_TRUE(ag1_.Release("p1", 7).ok());
  ASSERT_TRUE(registry_.WaitFor([&] {
    return !registry_.heartbeats_.empty() && registry_.heartbeats_.back().held_size() == 0;
  }));
}

TEST_F(RegistrationTest, ReportsRegisteredAndCounts) {
  server_.Start();
  RegistrationClient client(Options(server_.address()), {&ag1_});
  EXPECT_FALSE(client.RegisteredForTesting("ag1"));
  client.Start();
  ASSERT_TRUE(Eventually([&] { return client.RegisteredForTesting("ag1"); }));
  EXPECT_FALSE(client.RegisteredForTesting("nobody"));
  ASSERT_TRUE(Eventually([&] { return client.StatsForTesting().heartbeats >= 2; }));
  EXPECT_EQ(client.StatsForTesting().registrations, 1u);
  EXPECT_EQ(client.StatsForTesting().failures, 0u);
}

TEST_F(RegistrationTest, ReregistersWhenTheServerSaysSo) {
  server_.Start();
  RegistrationClient client(Options(server_.address()), {&ag1_});
  client.Start();
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.CountHeartbeats("ag1") >= 1; }));
  {
    std::lock_guard<std::mutex> lock(registry_.mu_);
    EXPECT_EQ(registry_.CountRegisters("ag1"), 1u);
    registry_.reregister_next_ = true;
  }
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.CountRegisters("ag1") == 2; }));
  // And heartbeats resume after the new registration.
  size_t before = 0;
  {
    std::lock_guard<std::mutex> lock(registry_.mu_);
    before = registry_.CountHeartbeats("ag1");
  }
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.CountHeartbeats("ag1") > before; }));
}

TEST_F(RegistrationTest, ReregistersWhenHeartbeatIsNotFound) {
  server_.Start();
  RegistrationClient client(Options(server_.address()), {&ag1_});
  client.Start();
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.CountHeartbeats("ag1") >= 1; }));
  {
    std::lock_guard<std::mutex> lock(registry_.mu_);
    registry_.not_found_next_ = true;
  }
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.CountRegisters("ag1") == 2; }));
}

TEST_F(RegistrationTest, RetriesUntilTheRegistryIsUp) {
  RegistrationClient client(Options(server_.address()), {&ag1_, &ag2_});
  client.Start();
  // The client has tried and failed for both machines before the registry exists.
  ASSERT_TRUE(Eventually([&] { return client.StatsForTesting().failures >= 4; }));
  EXPECT_FALSE(client.RegisteredForTesting("ag1"));
  server_.Start();
  ASSERT_TRUE(registry_.WaitFor([&] {
    return registry_.CountRegisters("ag1") == 1 && registry_.CountRegisters("ag2") == 1;
  }));
  ASSERT_TRUE(Eventually(
      [&] { return client.RegisteredForTesting("ag1") && client.RegisteredForTesting("ag2"); }));
}

TEST_F(RegistrationTest, RetriesARefusedRegistration) {
  registry_.refuse_registers_ = 2;
  server_.Start();
  RegistrationClient client(Options(server_.address()), {&ag1_});
  client.Start();
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.CountRegisters("ag1") == 1; }));
  std::lock_guard<std::mutex> lock(registry_.mu_);
  EXPECT_EQ(registry_.refused_, 2);
}

TEST_F(RegistrationTest, ARefusalThatSaysWhenToComeBackIsTriedAgainThenNotAfterABackoff) {
  // Eight refusals as a standby with no leader yet gives them: without the
  // wait they ask for, the backoff would grow from 50 ms to its cap of a
  // second (50, 100, ..., 800, 1000, 1000).
  registry_.refuse_registers_ = 8;
  registry_.retry_after_ms_ = "60";
  server_.Start();
  RegistrationClient client(Options(server_.address()), {&ag1_});
  client.Start();
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.CountRegisters("ag1") == 1; }));
  std::lock_guard<std::mutex> lock(registry_.mu_);
  ASSERT_EQ(registry_.refusal_times_.size(), 8u);
  const auto last_gap = registry_.refusal_times_[7] - registry_.refusal_times_[6];
  EXPECT_LT(last_gap, 500ms)
      << "the eighth try came after a backoff of "
      << std::chrono::duration_cast<std::chrono::milliseconds>(last_gap).count() << " ms";
  EXPECT_GE(last_gap, 60ms);
  client.Stop();
}

TEST_F(RegistrationTest, HeartbeatsResumeAfterTheRegistryComesBack) {
  server_.Start();
  RegistrationClient client(Options(server_.address()), {&ag1_});
  client.Start();
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.CountHeartbeats("ag1") >= 1; }));
  server_.Stop();
  ASSERT_TRUE(Eventually([&] { return client.StatsForTesting().failures >= 2; }));
  {
    std::lock_guard<std::mutex> lock(registry_.mu_);
    registry_.heartbeats_.clear();
  }
  server_.Start();
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.CountHeartbeats("ag1") >= 1; }));
  // The server kept knowing the agent: no second registration was needed.
  std::lock_guard<std::mutex> lock(registry_.mu_);
  EXPECT_EQ(registry_.CountRegisters("ag1"), 1u);
}

TEST_F(RegistrationTest, ZeroIntervalMeansTheDefault) {
  registry_.interval_ms_ = 0;
  server_.Start();
  RegistrationOptions options = Options(server_.address());
  options.default_heartbeat_interval = 40ms;
  RegistrationClient client(options, {&ag1_});
  client.Start();
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.CountHeartbeats("ag1") >= 3; }));
  client.Stop();
  std::lock_guard<std::mutex> lock(registry_.mu_);
  // Lower bound only: a slow machine may space them further apart.
  for (size_t i = 1; i < registry_.heartbeat_times_.size(); ++i) {
    EXPECT_GE(registry_.heartbeat_times_[i] - registry_.heartbeat_times_[i - 1], 35ms);
  }
}

TEST_F(RegistrationTest, StopIsPromptWhileTheServerIsUnreachable) {
  // After the first failed call the client backs off for an hour, longer
  // than any test run may take: this test ends at all only because Stop()
  // ends that wait, which it is in when Stop() is called.
  RegistrationOptions options = Options(server_.address());
  options.min_backoff = std::chrono::hours(1);
  options.max_backoff = std::chrono::hours(1);
  RegistrationClient client(options, {&ag1_});
  client.Start();
  ASSERT_TRUE(Eventually(
      [&] { return client.StatsForTesting().failures >= 1 && client.IdleForTesting(); }));
  client.Stop();
  EXPECT_EQ(client.StatsForTesting().failures, 1u);  // no retry came before Stop()
  client.Stop();                                     // idempotent
}

TEST_F(RegistrationTest, StopWithoutStart) {
  RegistrationClient client(Options(server_.address()), {&ag1_});
  client.Stop();
  EXPECT_FALSE(client.RegisteredForTesting("ag1"));
}

// Several members: the first that answers takes the machines; when it goes
// away, the next one gets them registered again.
TEST(RegistrationFailoverTest, RegistersWithTheFirstMemberThatAnswersAndMovesWhenItGoesAway) {
  SimulatedMachine ag1{"ag1", fabric::MachineType::kM2000};
  ag1.set_ipuof_port(50001);
  RegistryServer first, second;  // `first` is down to begin with
  second.Start();
  RegistrationOptions options = Options(first.address());
  options.server_addresses.push_back(second.address());
  RegistrationClient client(options, {&ag1});
  client.Start();
  ASSERT_TRUE(second.registry.WaitFor([&] { return second.registry.CountHeartbeats("ag1") >= 2; }));
  EXPECT_EQ(client.ServerForTesting(), second.address());
  EXPECT_GE(client.StatsForTesting().failovers, 1u);

  // The member serving the machine goes away: the next one (wrapping
  // around) gets a registration, then the heartbeats.
  first.Start();
  second.Stop();
  ASSERT_TRUE(first.registry.WaitFor([&] {
    return first.registry.CountRegisters("ag1") >= 1 && first.registry.CountHeartbeats("ag1") >= 1;
  }));
  EXPECT_TRUE(Eventually([&] { return client.ServerForTesting() == first.address(); }));
  client.Stop();
}

TEST(RegistrationFailoverTest, OneMemberNeverMoves) {
  SimulatedMachine ag1{"ag1", fabric::MachineType::kM2000};
  RegistryServer only;
  RegistrationClient client(Options(only.address()), {&ag1});
  client.Start();
  EXPECT_TRUE(Eventually([&] { return client.StatsForTesting().failures >= 3; }));
  EXPECT_EQ(client.StatsForTesting().failovers, 0u);
  only.Start();
  ASSERT_TRUE(only.registry.WaitFor([&] { return only.registry.CountRegisters("ag1") >= 1; }));
  client.Stop();
}

}  // namespace
}  // namespace vipu::agents
