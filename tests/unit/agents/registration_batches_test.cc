// RegistrationClient in batched mode against an in-process fake
// AgentRegistry: machines register and heartbeat in RegisterBatch /
// HeartbeatBatch calls of bounded size, refused and unknown machines are
// registered again, and heartbeats carry only faults.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agents/registration.h"
#include "gmock/gmock.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"

namespace vipu::agents {
namespace {

using namespace std::chrono_literals;

class FakeBatchRegistry final : public vipuagent::AgentRegistry::Service {
 public:
  grpc::Status RegisterBatch(grpc::ServerContext*, const vipuagent::RegisterBatchRequest* request,
                             vipuagent::RegisterBatchReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    register_batches_.push_back(*request);
    for (const auto& r : request->agents()) {
      if (refuse_once_.erase(r.agent_id()) != 0) {
        vipuagent::AgentRefusal* refusal = reply->add_refused();
        refusal->set_agent_id(r.agent_id());
        refusal->set_code(static_cast<int>(grpc::StatusCode::NOT_FOUND));
        refusal->set_message("unknown");
        continue;
      }
      ++registered_[r.agent_id()];
    }
    reply->set_heartbeat_interval_ms(20);
    cv_.notify_all();
    return grpc::Status::OK;
  }
  grpc::Status HeartbeatBatch(grpc::ServerContext*, const vipuagent::HeartbeatBatchRequest* request,
                              vipuagent::HeartbeatBatchReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    heartbeat_batches_.push_back(*request);
    for (const auto& h : request->agents()) {
      ++heartbeats_[h.agent_id()];
      if (forget_once_.erase(h.agent_id()) != 0) reply->add_reregister(h.agent_id());
    }
    cv_.notify_all();
    return grpc::Status::OK;
  }
  // The per-machine calls must not be used in batched mode.
  grpc::Status Register(grpc::ServerContext*, const vipuagent::RegisterRequest*,
                        vipuagent::RegisterReply*) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++single_calls_;
    return grpc::Status::OK;
  }
  grpc::Status Heartbeat(grpc::ServerContext*, const vipuagent::HeartbeatRequest*,
                         vipuagent::HeartbeatReply*) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++single_calls_;
    return grpc::Status::OK;
  }

  bool WaitFor(const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 10s, done);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<vipuagent::RegisterBatchRequest> register_batches_;
  std::vector<vipuagent::HeartbeatBatchRequest> heartbeat_batches_;
  std::map<std::string, int> registered_, heartbeats_;
  std::set<std::string> refuse_once_, forget_once_;
  int single_calls_ = 0;
};

class BatchedRegistrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    address_ = absl::StrCat("unix:/tmp/vipu-agent-batch-test-", getpid(), "-", counter++, ".sock");
    for (int i = 0; i < 5; ++i) {
      machines_.push_back(
          std::make_unique<SimulatedMachine>(absl::StrCat("m", i), fabric::MachineType::kM2000));
      machines_.back()->set_ipuof_port(6000);
    }
    grpc::ServerBuilder builder;
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddListeningPort(address_, grpc::InsecureServerCredentials());
    builder.RegisterService(&registry_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now());
    unlink(address_.substr(5).c_str());
  }
  std::unique_ptr<RegistrationClient> Client(size_t batch_size) {
    RegistrationOptions options;
    options.server_addresses = {address_};
    options.advertised_host = "127.0.0.9";
    options.batched = true;
    options.batch_size = batch_size;
    std::vector<SimulatedMachine*> ptrs;
    for (auto& m : machines_) ptrs.push_back(m.get());
    return std::make_unique<RegistrationClient>(options, ptrs);
  }
  bool AllHeartbeatAtLeast(int n) {
    for (auto& m : machines_) {
      if (registry_.heartbeats_[m->agent_id()] < n) return false;
    }
    return true;
  }

  std::string address_;
  std::vector<std::unique_ptr<SimulatedMachine>> machines_;
  FakeBatchRegistry registry_;
  std::unique_ptr<grpc::Server> server_;
};

TEST_F(BatchedRegistrationTest, RegistersAndHeartbeatsInBatchesOfAtMostBatchSize) {
  auto client = Client(2);
  client->Start();
  ASSERT_TRUE(registry_.WaitFor([&] { return AllHeartbeatAtLeast(2); }));
  client->Stop();
  std::lock_guard<std::mutex> lock(registry_.mu_);
  EXPECT_EQ(registry_.single_calls_, 0);
  // 5 machines in batches of 2: 2 + 2 + 1, each machine once.
  ASSERT_EQ(registry_.register_batches_.size(), 3u);
  EXPECT_EQ(registry_.register_batches_[0].agents_size(), 2);
  EXPECT_EQ(registry_.register_batches_[2].agents_size(), 1);
  const vipuagent::RegisterRequest& r = registry_.register_batches_[0].agents(0);
  EXPECT_EQ(r.agent_id(), "m0");
  EXPECT_EQ(r.host(), "127.0.0.9");
  EXPECT_EQ(r.port(), 6000u);
  EXPECT_EQ(r.machine().ipus_size(), 4);
  for (const auto& [id, n] : registry_.registered_) EXPECT_EQ(n, 1) << id;
  for (const auto& batch : registry_.heartbeat_batches_) EXPECT_LE(batch.agents_size(), 2);
  EXPECT_TRUE(client->RegisteredForTesting("m4"));
  // The first round was answered before the second was sent; the last call
  // may have been cancelled by Stop() after the server counted it.
  EXPECT_GE(client->StatsForTesting().heartbeats, 5u);
}

TEST_F(BatchedRegistrationTest, RefusedAndForgottenMachinesRegisterAgain) {
  {
    std::lock_guard<std::mutex> lock(registry_.mu_);
    registry_.refuse_once_ = {"m1"};
    registry_.forget_once_ = {"m3"};
  }
  auto client = Client(512);
  client->Start();
  ASSERT_TRUE(registry_.WaitFor([&] {
    return registry_.registered_["m1"] == 1 && registry_.registered_["m3"] == 2 &&
           AllHeartbeatAtLeast(3);
  }));
  client->Stop();
  std::lock_guard<std::mutex> lock(registry_.mu_);
  EXPECT_EQ(registry_.registered_["m0"], 1);
  EXPECT_EQ(registry_.single_calls_, 0);
}

TEST_F(BatchedRegistrationTest, HeartbeatsCarryOnlyFaultsAndSkipSilencedMachines) {
  ASSERT_TRUE(machines_[2]->InjectIpuError(1).ok());
  auto client = Client(512);
  client->Start();
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.heartbeats_["m2"] >= 1; }));
  machines_[4]->MarkCrashed();
  const int before = [&] {
    std::lock_guard<std::mutex> lock(registry_.mu_);
    return registry_.heartbeats_["m4"];
  }();
  ASSERT_TRUE(registry_.WaitFor([&] { return registry_.heartbeats_["m0"] >= before + 5; }));
  client->Stop();
  std::lock_guard<std::mutex> lock(registry_.mu_);
  // The crashed machine stopped (at most one batch was already on its way).
  EXPECT_LE(registry_.heartbeats_["m4"], before + 1);
  const vipuagent::HeartbeatBatchRequest& last = registry_.heartbeat_batches_.back();
  for (const auto& beat : last.agents()) {
    EXPECT_NE(beat.agent_id(), "m4");
    EXPECT_EQ(beat.link_health_size(), 0);
    if (beat.agent_id() == "m2") {
      ASSERT_EQ(beat.ipu_health_size(), 1);
      EXPECT_EQ(beat.ipu_health(0).index(), 1u);
      EXPECT_FALSE(beat.ipu_health(0).healthy());
    } else {
      EXPECT_EQ(beat.ipu_health_size(), 0) << beat.agent_id();
    }
  }
}

}  // namespace
}  // namespace vipu::agents
