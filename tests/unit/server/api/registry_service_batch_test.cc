// RegistryService's batched Register and Heartbeat in-process,
// against a real store in a temporary directory: what a batch records, and
// every invalid batch refused whole with nothing recorded.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/api/registry_service.h"
#include "server/control/inventory.h"
#include "server/control/partition_controller.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "server/fleet/grpc_agent_client.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace vipu::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class RegistryBatchTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(/*auto_add=*/true); }
  void TearDown() override {
    service_.reset();
    controller_.reset();
    driver_.reset();
    agent_client_.reset();
    registry_.reset();
    inventory_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Start(bool auto_add) {
    service_.reset();
    controller_.reset();
    driver_.reset();
    agent_client_.reset();
    registry_.reset();
    inventory_.reset();
    store_.reset();
    if (dir_.empty()) {
      char tmpl[] = "/tmp/registry_batch_XXXXXX";
      ASSERT_NE(mkdtemp(tmpl), nullptr);
      dir_ = tmpl;
    }
    auto store = storage::SqliteStore::Open(dir_ + "/vipu.db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    inventory_ = std::make_unique<Inventory>(store_.get());
    registry_ = std::make_unique<AgentRegistry>(absl::Milliseconds(250));
    agent_client_ = std::make_unique<GrpcAgentClient>(absl::Seconds(1), /*credentials=*/nullptr);
    driver_ = std::make_unique<AgentDriver>(agent_client_.get());
    controller_ = std::make_unique<PartitionController>(store_.get(), &cluster_links_,
                                                        registry_.get(), driver_.get(), 2);
    service_ = std::make_unique<RegistryService>(inventory_.get(), registry_.get(),
                                                 controller_.get(), auto_add,
                                                 /*require_certificates=*/false);
  }

  static vipuagent::RegisterRequest Machine(const std::string& id, uint32_t port = 7000) {
    vipuagent::RegisterRequest r;
    r.set_agent_id(id);
    r.set_host("127.0.0.1");
    r.set_port(port);
    r.mutable_machine()->set_agent_id(id);
    r.mutable_machine()->set_machine_type("m2000");
    r.mutable_machine()->set_ipuof_port(port);
    for (uint32_t i = 0; i < 4; ++i) r.mutable_machine()->add_ipus()->set_index(i);
    return r;
  }
  static vipuagent::RegisterBatchRequest Batch(const std::string& prefix, int n) {
    vipuagent::RegisterBatchRequest batch;
    for (int i = 0; i < n; ++i) *batch.add_agents() = Machine(absl::StrCat(prefix, i));
    return batch;
  }
  grpc::Status Register(const vipuagent::RegisterBatchRequest& batch,
                        vipuagent::RegisterBatchReply* reply) {
    grpc::ServerContext context;
    return service_->RegisterBatch(&context, &batch, reply);
  }
  grpc::Status Heartbeat(const vipuagent::HeartbeatBatchRequest& batch,
                         vipuagent::HeartbeatBatchReply* reply) {
    grpc::ServerContext context;
    return service_->HeartbeatBatch(&context, &batch, reply);
  }
  size_t StoredAgents() {
    auto agents = inventory_->ListAgents();
    EXPECT_TRUE(agents.ok());
    return agents.ok() ? agents->size() : 0;
  }
  // The batch is refused whole: INVALID_ARGUMENT with `message`, nothing stored.
  void ExpectRefused(const vipuagent::RegisterBatchRequest& batch, const std::string& message) {
    vipuagent::RegisterBatchReply reply;
    grpc::Status s = Register(batch, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(message));
    EXPECT_EQ(StoredAgents(), 0u);
    EXPECT_EQ(registry_->size(), 0u);
  }
  void ExpectRefused(const vipuagent::HeartbeatBatchRequest& batch, const std::string& message) {
    vipuagent::HeartbeatBatchReply reply;
    grpc::Status s = Heartbeat(batch, &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(message));
  }

  std::string dir_;
  ClusterLinksCache cluster_links_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Inventory> inventory_;
  std::unique_ptr<AgentRegistry> registry_;
  std::unique_ptr<GrpcAgentClient> agent_client_;
  std::unique_ptr<AgentDriver> driver_;
  std::unique_ptr<PartitionController> controller_;
  std::unique_ptr<RegistryService> service_;
};

TEST_F(RegistryBatchTest, RegistersEveryMachineInOneCommit) {
  const uint64_t commits_before = store_->commits();
  vipuagent::RegisterBatchReply reply;
  ASSERT_TRUE(Register(Batch("m", 1024), &reply).ok());
  EXPECT_THAT(reply.refused(), IsEmpty());
  EXPECT_EQ(reply.heartbeat_interval_ms(), 250u);
  EXPECT_EQ(StoredAgents(), 1024u);
  EXPECT_EQ(registry_->size(), 1024u);
  EXPECT_EQ(store_->commits() - commits_before, 1u);
  EXPECT_TRUE(registry_->IsUp("m1023", absl::Now()));
  // Registering again with the same addresses writes nothing.
  const uint64_t writes_before = store_->commits();
  ASSERT_TRUE(Register(Batch("m", 1024), &reply).ok());
  EXPECT_LE(store_->commits() - writes_before, 1u);
  EXPECT_EQ(StoredAgents(), 1024u);
  EXPECT_TRUE(controller_->AwaitReconciled(absl::Now() + absl::Seconds(10)));
}

TEST_F(RegistryBatchTest, UnknownMachinesAreRefusedOneByOneWithoutAutoAdd) {
  Start(/*auto_add=*/false);
  fabric::Agent known{"m1", "127.0.0.1", 7000, fabric::MachineType::kM2000};
  ASSERT_TRUE(inventory_->CreateAgent(known).ok());
  vipuagent::RegisterBatchReply reply;
  ASSERT_TRUE(Register(Batch("m", 3), &reply).ok());
  ASSERT_EQ(reply.refused_size(), 2);
  EXPECT_EQ(reply.refused(0).agent_id(), "m0");
  EXPECT_EQ(reply.refused(0).code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_THAT(reply.refused(0).message(), HasSubstr("vipu-admin create agent"));
  EXPECT_EQ(reply.refused(1).agent_id(), "m2");
  EXPECT_TRUE(registry_->Contains("m1"));
  EXPECT_FALSE(registry_->Contains("m0"));
  EXPECT_EQ(StoredAgents(), 1u);
}

TEST_F(RegistryBatchTest, RegisterBatchRefusesEveryInvalidValueWhole) {
  ExpectRefused(vipuagent::RegisterBatchRequest(), "agents: must name at least one agent");
  ExpectRefused(Batch("m", static_cast<int>(kMaxAgentsPerBatch) + 1),
                "agents: at most 1024 per batch, got 1025");
  auto duplicate = Batch("m", 3);
  *duplicate.add_agents() = Machine("m1");
  ExpectRefused(duplicate, "agents[3].agent_id: agent 'm1' is listed twice");
  for (const std::string& bad :
       {std::string(""), std::string("-m"), std::string("m m"), std::string(65, 'm')}) {
    auto batch = Batch("m", 2);
    *batch.add_agents() = Machine(bad);
    ExpectRefused(batch, "agents[2].agent_id");
  }
  auto bad_type = Batch("m", 2);
  bad_type.mutable_agents(1)->mutable_machine()->set_machine_type("m3000");
  ExpectRefused(bad_type, "agents[1].machine.machine_type");
  auto too_many_ipus = Batch("m", 2);
  too_many_ipus.mutable_agents(0)->mutable_machine()->add_ipus()->set_index(4);
  ExpectRefused(too_many_ipus, "agents[0].machine.ipus: a machine has at most 4 IPUs, got 5");
}

TEST_F(RegistryBatchTest, RegisterBatchRefusesABadAddressPerMachine) {
  auto batch = Batch("m", 3);
  batch.mutable_agents(1)->set_port(0);
  batch.mutable_agents(2)->set_host("");
  vipuagent::RegisterBatchReply reply;
  ASSERT_TRUE(Register(batch, &reply).ok());
  ASSERT_EQ(reply.refused_size(), 2);
  EXPECT_EQ(reply.refused(0).code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_THAT(reply.refused(0).message(), HasSubstr("port: must be 1..65535, got 0"));
  EXPECT_THAT(reply.refused(1).message(), HasSubstr("host: must not be empty"));
  EXPECT_EQ(StoredAgents(), 1u);
}

TEST_F(RegistryBatchTest, HeartbeatBatchKeepsKnownMachinesUpAndNamesUnknownOnes) {
  vipuagent::RegisterBatchReply registered;
  ASSERT_TRUE(Register(Batch("m", 2), &registered).ok());
  vipuagent::HeartbeatBatchRequest beats;
  beats.add_agents()->set_agent_id("m0");
  beats.add_agents()->set_agent_id("stranger");
  vipuagent::HeartbeatRequest* faulty = beats.add_agents();
  faulty->set_agent_id("m1");
  vipuagent::IpuHealth* ipu = faulty->add_ipu_health();
  ipu->set_index(2);
  ipu->set_healthy(false);
  ipu->set_error("injected");
  vipuagent::HeartbeatBatchReply reply;
  const absl::Time before = absl::Now();
  ASSERT_TRUE(Heartbeat(beats, &reply).ok());
  EXPECT_THAT(reply.reregister(), ElementsAre("stranger"));
  EXPECT_GE(registry_->Get("m0")->last_heartbeat, before);
  EXPECT_TRUE(registry_->Get("m0")->health.healthy());
  EXPECT_EQ(registry_->Get("m1")->health.ipu_errors.at(2), "injected");
  EXPECT_FALSE(registry_->Contains("stranger"));
  EXPECT_EQ(registry_->CountUpForTesting(absl::Now()), 2u);
}

TEST_F(RegistryBatchTest, HeartbeatBatchRefusesEveryInvalidValue) {
  ExpectRefused(vipuagent::HeartbeatBatchRequest(), "agents: must name at least one agent");
  vipuagent::HeartbeatBatchRequest too_many;
  for (size_t i = 0; i <= kMaxAgentsPerBatch; ++i) {
    too_many.add_agents()->set_agent_id(absl::StrCat("m", i));
  }
  ExpectRefused(too_many, "agents: at most 1024 per batch, got 1025");
  vipuagent::HeartbeatBatchRequest duplicate;
  duplicate.add_agents()->set_agent_id("m0");
  duplicate.add_agents()->set_agent_id("m0");
  ExpectRefused(duplicate, "agents[1].agent_id: agent 'm0' is listed twice");
  for (const std::string& bad :
       {std::string(""), std::string(".m"), std::string("m/0"), std::string(65, 'm')}) {
    vipuagent::HeartbeatBatchRequest batch;
    batch.add_agents()->set_agent_id("m0");
    batch.add_agents()->set_agent_id(bad);
    ExpectRefused(batch, "agents[1].agent_id");
  }
}

}  // namespace
}  // namespace vipu::server
