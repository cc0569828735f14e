// The commands end to end in-process against a small fake vipu-server on a
// loopback port: create -> poll -> ipuof files, remove deletes them, output
// formats, error lines, metadata.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/common/command_line.h"
#include "cli/common/ipuof_files.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/unit/support/cli_run.h"
#include "version.grpc.pb.h"
#include "vipu_admin.grpc.pb.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::cli {
namespace {

namespace fs = std::filesystem;
using test::CliResult;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string Metadata(grpc::ServerContext* context, const std::string& key) {
  auto it = context->client_metadata().find(key);
  if (it == context->client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

// Partitions become ACTIVE after `polls_to_active` status calls; id "doomed"
// ends in PS_ERROR, "stuck" never leaves PS_PENDING.
class FakeUserService final : public virmgrpc::UserService::Service {
 public:
  grpc::Status ListPartitions(grpc::ServerContext*, const virmgrpc::ListPartitionsRequest* request,
                              virmgrpc::ListPartitionsReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, p] : partitions_) {
      if (request->allocation_id().empty() ||
          p.spec().allocation_id() == request->allocation_id()) {
        *reply->add_partitions() = p;
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status ListIPUAttributes(grpc::ServerContext*,
                                 const virmgrpc::ListIPUAttributesRequest* request,
                                 virmgrpc::ListIPUAttributesReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    attribute_agents_.assign(request->agents().begin(), request->agents().end());
    auto* e = reply->add_entries();
    e->set_agent("ag0");
    (*(*e->mutable_ipu_attributes())[0].mutable_attributes())["clock"] = "1330MHz";
    return grpc::Status::OK;
  }

  grpc::Status CreatePartition(grpc::ServerContext* context,
                               const virmgrpc::CreatePartitionRequest* request,
                               virmgrpc::CreatePartitionReply* reply) override {
    if (request->requirements().id() == "made-unanswered") {
      // Made, then never answered.
      std::lock_guard<std::mutex> lock(mu_);
      status_[request->requirements().id()].set_ready_state(virmgrpc::PS_ACTIVE);
    }
    if (absl::EndsWith(request->requirements().id(), "unanswered")) {
      // Received and never answered: the client's deadline ends the call.
      while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++create_calls_;
    last_create_ = *request;
    last_user_ = Metadata(context, "vipu-user-id");
    last_key_ = Metadata(context, "vipu-access-key");
    const auto& r = request->requirements();
    if (partitions_.count(r.id())) {
      return grpc::Status(grpc::StatusCode::ALREADY_EXISTS,
                          absl::StrCat("partition id: ", r.id(), " already exists"));
    }
    if (r.size() == 6) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "size: must be a power of two, got 6");
    }
    virmgrpc::Partition p;
    p.set_id(r.id());
    p.set_ready_state(virmgrpc::PS_PENDING);
    auto* spec = p.mutable_spec();
    spec->set_cluster_id("c16");
    spec->set_allocation_id(r.allocation_id().empty() ? "a16" : r.allocation_id());
    spec->set_num_gcds(r.num_gcds() == 0 ? 1 : r.num_gcds());
    spec->set_num_replicas(spec->num_gcds());
    spec->set_num_ipulink_segments(1);
    spec->set_ipulink_routing_type(r.size() <= 4 ? virmgrpc::IRT_DNC : virmgrpc::IRT_SWNC);
    for (uint32_t i = 0; i < r.size(); ++i) spec->add_ipus()->set_topology_id(i);
    partitions_[r.id()] = p;
    virmgrpc::PartitionStatus& st = status_[r.id()];
    st.set_partition_id(r.id());
    st.set_ready_state(virmgrpc::PS_PENDING);
    st.set_operation_state(virmgrpc::POS_CREATING);
    polls_left_[r.id()] = polls_to_active;
    reply->set_partition_id(r.id());
    return grpc::Status::OK;
  }

  grpc::Status RemovePartition(grpc::ServerContext*,
                               const virmgrpc::RemovePartitionRequest* request,
                               virmgrpc::RemovePartitionReply*) override {
    std::lock_guard<std::mutex> lock(mu_);
    last_force_ = request->force();
    if (request->partition_id() == "agent-down") {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "agent ag3 is down");
    }
    if (partitions_.erase(request->partition_id()) == 0) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("partition ", request->partition_id(), " not found"));
    }
    return grpc::Status::OK;
  }

  grpc::Status ResetPartition(grpc::ServerContext*, const virmgrpc::ResetPartitionRequest* request,
                              virmgrpc::ResetPartitionReply*) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = status_.find(request->partition_id());
    if (it == status_.end() || !partitions_.count(request->partition_id())) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "partition not found");
    }
    ++reset_calls_;
    it->second.set_operation_state(virmgrpc::POS_RESETTING);
    polls_left_[request->partition_id()] = polls_to_active;
    return grpc::Status::OK;
  }

  grpc::Status GetPartitionIpuofConfig(grpc::ServerContext*,
                                       const virmgrpc::GetPartitionIpuofConfigRequest* request,
                                       virmgrpc::GetPartitionIpuofConfigReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = partitions_.find(request->partition_id());
    if (it == partitions_.end()) return grpc::Status(grpc::StatusCode::NOT_FOUND, "no partition");
    uint32_t gcd = request->gcd_id().id();
    if (gcd >= it->second.spec().num_gcds()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "gcd: out of range");
    }
    *reply->mutable_ipuof_config()->add_gcd_configs() = GcdFor(request->partition_id(), gcd);
    return grpc::Status::OK;
  }

  grpc::Status GetPartitionStatus(grpc::ServerContext*,
                                  const virmgrpc::GetPartitionStatusRequest* request,
                                  virmgrpc::GetPartitionStatusReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string& id = request->partition_id();
    auto it = status_.find(id);
    if (it == status_.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("partition ", id, " not found"));
    }
    ++status_calls_;
    if (id == "doomed") {
      it->second.set_ready_state(virmgrpc::PS_ERROR);
      it->second.set_operation_state(virmgrpc::POS_FAILED);
      it->second.clear_errors();
      it->second.add_errors("agent ag1: link training failed");
      it->second.add_errors("agent ag2: timeout");
    } else if (id != "stuck" && --polls_left_[id] <= 0) {
      it->second.set_ready_state(virmgrpc::PS_ACTIVE);
      it->second.set_operation_state(virmgrpc::POS_IDLE);
    }
    partitions_[id].set_ready_state(it->second.ready_state());
    *reply->mutable_status() = it->second;
    return grpc::Status::OK;
  }

  static virmgrpc::PartitionConfig::Gcd GcdFor(const std::string& id, uint32_t gcd) {
    virmgrpc::PartitionConfig::Gcd g;
    auto* d = g.add_devices();
    d->set_ip("10.1.5.10");
    d->set_server_port(50052);
    d->set_device_id(0);
    d->set_ipu_id(3 - gcd);
    (*g.mutable_attributes())["GCD Id"] = absl::StrCat(gcd);
    (*g.mutable_attributes())["Partition Id"] = id;
    return g;
  }

  std::mutex mu_;
  int polls_to_active = 3;
  std::map<std::string, virmgrpc::Partition> partitions_;
  std::map<std::string, virmgrpc::PartitionStatus> status_;
  std::map<std::string, int> polls_left_;
  int create_calls_ = 0;
  int status_calls_ = 0;
  int reset_calls_ = 0;
  bool last_force_ = false;
  virmgrpc::CreatePartitionRequest last_create_;
  std::string last_user_, last_key_;
  std::vector<std::string> attribute_agents_;
};

class FakeVersionService final : public virmgrpc::VersionService::Service {
  grpc::Status GetVersion(grpc::ServerContext*, const virmgrpc::VersionRequest*,
                          virmgrpc::VersionReply* reply) override {
    reply->set_version("1.18.0");
    return grpc::Status::OK;
  }
};

class FakeAllocationService final : public vipuadmin::AllocationService::Service {
  grpc::Status ListAllocations(grpc::ServerContext*, const vipuadmin::ListAllocationsRequest*,
                               vipuadmin::ListAllocationsReply* reply) override {
    auto* a = reply->add_allocations();
    a->set_id("alloc-1");
    for (const char* ag : {"ag0", "ag1"}) a->mutable_spec()->add_agent_ids(ag);
    return grpc::Status::OK;
  }
};

class FakeAdminService final : public vipuadmin::AdminService::Service {
 public:
  grpc::Status CreateAgent(grpc::ServerContext*, const vipuadmin::CreateAgentRequest* request,
                           vipuadmin::CreateAgentReply*) override {
    std::lock_guard<std::mutex> lock(mu_);
    vipuadmin::Agent& a = agents_[request->agent_id()];
    a.set_id(request->agent_id());
    a.set_host(request->host());
    a.set_port(request->port());
    a.set_status(vipuadmin::AGENT_DOWN);
    a.set_num_ipus(4);
    return grpc::Status::OK;
  }
  grpc::Status ListAgents(grpc::ServerContext*, const vipuadmin::ListAgentsRequest*,
                          vipuadmin::ListAgentsReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, a] : agents_) *reply->add_agents() = a;
    return grpc::Status::OK;
  }
  grpc::Status GetAgent(grpc::ServerContext*, const vipuadmin::GetAgentRequest* request,
                        vipuadmin::GetAgentReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = agents_.find(request->agent_id());
    if (it == agents_.end()) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          absl::StrCat("agent ", request->agent_id(), " not found"));
    }
    *reply->mutable_agent() = it->second;
    return grpc::Status::OK;
  }
  grpc::Status RemoveAgent(grpc::ServerContext*, const vipuadmin::RemoveAgentRequest* request,
                           vipuadmin::RemoveAgentReply*) override {
    std::lock_guard<std::mutex> lock(mu_);
    agents_.erase(request->agent_id());
    return grpc::Status::OK;
  }
  grpc::Status CreateCluster(grpc::ServerContext*, const vipuadmin::CreateClusterRequest* request,
                             vipuadmin::CreateClusterReply*) override {
    std::lock_guard<std::mutex> lock(mu_);
    last_cluster_ = request->cluster();
    return grpc::Status::OK;
  }
  grpc::Status ListClusters(grpc::ServerContext*, const vipuadmin::ListClustersRequest*,
                            vipuadmin::ListClustersReply* reply) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!last_cluster_.id().empty()) *reply->add_clusters() = last_cluster_;
    return grpc::Status::OK;
  }
  grpc::Status RemoveCluster(grpc::ServerContext*, const vipuadmin::RemoveClusterRequest* request,
                             vipuadmin::RemoveClusterReply*) override {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("cluster ", request->cluster_id(), " has allocations"));
  }
  grpc::Status CreateAllocation(grpc::ServerContext*,
                                const vipuadmin::CreateAllocationRequest* request,
                                vipuadmin::CreateAllocationReply*) override {
    std::lock_guard<std::mutex> lock(mu_);
    last_allocation_ = *request;
    return grpc::Status::OK;
  }
  grpc::Status RemoveAllocation(grpc::ServerContext*, const vipuadmin::RemoveAllocationRequest*,
                                vipuadmin::RemoveAllocationReply*) override {
    return grpc::Status::OK;
  }

  std::mutex mu_;
  std::map<std::string, vipuadmin::Agent> agents_;
  vipuadmin::Cluster last_cluster_;
  vipuadmin::CreateAllocationRequest last_allocation_;
};

class FakeServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&user_);
    builder.RegisterService(&version_);
    builder.RegisterService(&allocations_);
    builder.RegisterService(&admin_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);

    home_ = ::testing::TempDir() + "/cli_fake_server_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(home_);
    fs::create_directories(home_);
    env_.system_config_path = home_ + "/absent.hcl";
    env_.vars["HOME"] = home_;
    env_.vars["VIPU_CLI_API_HOST"] = "127.0.0.1";
    env_.vars["VIPU_CLI_API_PORT"] = absl::StrCat(port_);
  }
  void TearDown() override {
    server_->Shutdown();
    fs::remove_all(home_);
  }

  CliResult Run(CliKind kind, const std::vector<std::string>& words) {
    return test::RunCliWords(kind, words, env_);
  }
  CliResult Vipu(const std::vector<std::string>& words) { return Run(CliKind::kVipu, words); }
  CliResult Admin(const std::vector<std::string>& words) { return Run(CliKind::kVipuAdmin, words); }

  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  FakeUserService user_;
  FakeVersionService version_;
  FakeAllocationService allocations_;
  FakeAdminService admin_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string home_;
  Environment env_;
};

TEST_F(FakeServerTest, ServerVersionIsTwoExactLines) {
  CliResult r = Vipu({"--server-version"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, absl::StrCat("version: 1.18.0\nhost: 127.0.0.1:", port_, "\n"));
  r = Admin({"--server-version"});
  EXPECT_EQ(r.out, absl::StrCat("version: 1.18.0\nhost: 127.0.0.1:", port_, "\n"));
}

TEST_F(FakeServerTest, CreatePollsUntilActiveAndWritesEveryGcdFile) {
  CliResult r =
      Vipu({"create", "partition", "p1", "--size", "4", "--num-gcds", "2", "--gcd-sync-replicas",
            "4", "--routing", "ring-swnc", "--sync-type", "pod-native-default", "--allocation",
            "a16", "--num-ilds", "1", "--disable-auto-reset", "--relocatable"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "create partition (p1): success.\n");
  EXPECT_EQ(r.err, "");
  EXPECT_GE(user_.status_calls_, 3);  // polled through PENDING

  const auto& req = user_.last_create_;
  EXPECT_EQ(req.requirements().id(), "p1");
  EXPECT_EQ(req.requirements().size(), 4u);
  EXPECT_EQ(req.requirements().num_gcds(), 2u);
  EXPECT_EQ(req.requirements().num_replicas(), 4u);
  EXPECT_EQ(req.requirements().ipulink_routing_type(), virmgrpc::IRT_RINGSWNC);
  EXPECT_EQ(req.requirements().sync_type(), virmgrpc::ST_POD_NATIVE_DEFAULT);
  EXPECT_EQ(req.requirements().allocation_id(), "a16");
  EXPECT_EQ(req.requirements().num_ipulink_segments(), 1u);
  EXPECT_TRUE(req.disable_auto_reset());
  EXPECT_TRUE(req.relocatable());

  for (uint32_t gcd : {0u, 1u}) {
    std::string path = IpuofConfigPath(home_, "p1", gcd);
    ASSERT_TRUE(fs::exists(path)) << path;
    virmgrpc::PartitionConfig::Gcd parsed;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(Read(path), &parsed).ok());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
        parsed, FakeUserService::GcdFor("p1", gcd)));
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
              fs::perms::owner_read | fs::perms::owner_write);
  }
  EXPECT_FALSE(fs::exists(IpuofConfigPath(home_, "p1", 2)));
  EXPECT_EQ(fs::status(IpuofConfigDir(home_)).permissions() & fs::perms::all, fs::perms::owner_all);
}

TEST_F(FakeServerTest, CreateSendsC2CompatibleAndGwRouting) {
  CliResult r = Vipu({"create", "partitions", "p2", "--size=8", "--reconfigurable", "--sync-type",
                      "c2-compatible", "--gw-routing", "swring", "--cluster", "c16",
                      "--total-num-replicas=2"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto& req = user_.last_create_.requirements();
  EXPECT_EQ(req.sync_type(), virmgrpc::ST_GS2_DEFAULT);
  EXPECT_EQ(req.gw_routing_type(), virmgrpc::GRT_SWRING);
  EXPECT_EQ(req.cluster_id(), "c16");
  EXPECT_EQ(req.num_replicas(), 2u);
  EXPECT_TRUE(req.reconfigurable());
  EXPECT_FALSE(user_.last_create_.disable_auto_reset());
  EXPECT_TRUE(fs::exists(IpuofConfigPath(home_, "p2", 0)));
}

TEST_F(FakeServerTest, CreateErrorStateJoinsErrors) {
  CliResult r = Vipu({"create", "partition", "doomed", "--size", "4"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "create partition (doomed): failure: agent ag1: link training failed; agent ag2: "
            "timeout\n");
  EXPECT_FALSE(fs::exists(IpuofConfigPath(home_, "doomed", 0)));
}

TEST_F(FakeServerTest, CreateRefusedByServerShowsItsMessage) {
  CliResult r = Vipu({"create", "partition", "p6", "--size", "6"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "create partition (p6): failure: size: must be a power of two, got 6\n");
  ASSERT_EQ(Vipu({"create", "partition", "p1", "--size", "4"}).code, 0);
  r = Vipu({"create", "partition", "p1", "--size", "4"});
  EXPECT_EQ(r.err, "create partition (p1): failure: partition id: p1 already exists\n");
}

TEST_F(FakeServerTest, CreateTimesOutWithApiTimeout) {
  CliResult r = Vipu({"create", "partition", "stuck", "--size", "4", "--api-timeout", "1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, StartsWith("create partition (stuck): failure: timed out waiting for the "
                                "partition to become ACTIVE (state PENDING, operation CREATING)"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
}

TEST_F(FakeServerTest, AChangeSentButNeverAnsweredHasAnUnknownOutcome) {
  CliResult r = Vipu({"create", "partition", "unanswered", "--size", "4", "--api-timeout", "1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("no reply from vipu-server"));
  EXPECT_THAT(r.err, HasSubstr("the change was sent: its outcome is unknown; look"));
  // The CLI looked for the id, and says what it found.
  EXPECT_THAT(r.err, HasSubstr("looked: no partition unanswered exists now"));
  r = Vipu({"create", "partition", "made-unanswered", "--size", "4", "--api-timeout", "1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("looked: partition made-unanswered exists now (state ACTIVE)"));
  EXPECT_THAT(r.err, HasSubstr("so the create was made"));
}

TEST_F(FakeServerTest, RemoveDeletesFilesAndPassesForce) {
  ASSERT_EQ(Vipu({"create", "partition", "p1", "--size", "4", "--num-gcds", "2"}).code, 0);
  ASSERT_EQ(Vipu({"create", "partition", "p10", "--size", "4"}).code, 0);
  CliResult r = Vipu({"remove", "partition", "p1", "--force"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "remove partition (p1): success.\n");
  EXPECT_TRUE(user_.last_force_);
  EXPECT_FALSE(fs::exists(IpuofConfigPath(home_, "p1", 0)));
  EXPECT_FALSE(fs::exists(IpuofConfigPath(home_, "p1", 1)));
  EXPECT_TRUE(fs::exists(IpuofConfigPath(home_, "p10", 0)));
}

TEST_F(FakeServerTest, RemoveUnknownPartitionFailsButClearsStaleFiles) {
  ASSERT_TRUE(WriteIpuofConfig(home_, "gone", 0, "{}").ok());
  CliResult r = Vipu({"remove", "partition", "gone"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "remove partition (gone): failure: partition gone not found\n");
  EXPECT_FALSE(fs::exists(IpuofConfigPath(home_, "gone", 0)));
}

TEST_F(FakeServerTest, ServerSideUnavailableIsNotReportedAsUnreachable) {
  CliResult r = Vipu({"remove", "partition", "agent-down"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "remove partition (agent-down): failure: agent ag3 is down\n");
}

TEST_F(FakeServerTest, ResetWaitsForActive) {
  ASSERT_EQ(Vipu({"create", "partition", "p1", "--size", "4"}).code, 0);
  int polls_before = user_.status_calls_;
  CliResult r = Vipu({"reset", "partition", "p1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "reset partition (p1): success.\n");
  EXPECT_EQ(user_.reset_calls_, 1);
  EXPECT_GE(user_.status_calls_ - polls_before, 3);
}

TEST_F(FakeServerTest, ListPartitionsTableNounsAndFilter) {
  ASSERT_EQ(Vipu({"create", "partition", "p1", "--size", "4"}).code, 0);
  ASSERT_EQ(Vipu({"create", "partition", "p2", "--size", "8", "--allocation", "other"}).code, 0);
  CliResult plural = Vipu({"list", "partitions"});
  CliResult singular = Vipu({"list", "partition"});
  ASSERT_EQ(plural.code, 0) << plural.err;
  EXPECT_EQ(plural.out, singular.out);
  EXPECT_EQ(plural.out,
            " Partition   | Cluster | ILDs | GW Routing | ILD Routing | Size | GCDs | State  \n"
            "--------------------------------------------------------------------------------\n"
            " p1          | c16     | 1    | DEFAULT    | DNC         | 4    | 1    | ACTIVE \n"
            " p2          | c16     | 1    | DEFAULT    | SWNC        | 8    | 1    | ACTIVE \n"
            "--------------------------------------------------------------------------------\n");
  CliResult filtered = Vipu({"list", "partitions", "--allocation", "other"});
  EXPECT_THAT(filtered.out, HasSubstr(" p2 "));
  EXPECT_THAT(filtered.out, ::testing::Not(HasSubstr(" p1 ")));

  CliResult admin = Admin({"list", "partitions"});
  EXPECT_THAT(admin.out, StartsWith(" Allocation | Partition   | Cluster |"));
  EXPECT_THAT(admin.out, HasSubstr(" a16        | p1          | c16     |"));
}

TEST_F(FakeServerTest, ShowJsonPrintsTheReply) {
  ASSERT_EQ(Vipu({"create", "partition", "p1", "--size", "1"}).code, 0);
  CliResult r = Vipu({"list", "partitions", "--showjson"});
  ASSERT_EQ(r.code, 0) << r.err;
  virmgrpc::ListPartitionsReply reply;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &reply).ok()) << r.out;
  ASSERT_EQ(reply.partitions_size(), 1);
  EXPECT_EQ(reply.partitions(0).id(), "p1");
  EXPECT_THAT(r.out, HasSubstr("\"ready_state\": \"PS_ACTIVE\""));
  EXPECT_THAT(r.out, HasSubstr("\"num_gcds\": 1"));

  r = Vipu({"--showjson", "get", "partition", "p1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("{\n\"partition\": {"));
  EXPECT_THAT(r.out, HasSubstr("\"status\": {"));
}

TEST_F(FakeServerTest, GetPartitionBoxAndIpuofConfigs) {
  ASSERT_EQ(Vipu({"create", "partition", "p1", "--size", "4", "--num-gcds", "2"}).code, 0);
  CliResult r = Vipu({"get", "partition", "p1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(" Partition ID   | p1 "));
  EXPECT_THAT(r.out, HasSubstr(" State          | ACTIVE "));
  EXPECT_THAT(r.out, HasSubstr(" IPUs           | ILD 0: 0-3 "));

  for (const char* flag : {"--ipuof-configs", "--ipu-configs"}) {
    r = Vipu({"get", "partition", "p1", "-H", "127.0.0.1", "--gcd", "1", flag});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, Read(IpuofConfigPath(home_, "p1", 1))) << flag;
  }
  r = Vipu({"get", "partition", "p1", "--ipuof-configs"});
  EXPECT_EQ(r.out, Read(IpuofConfigPath(home_, "p1", 0)));
  r = Vipu({"get", "partition", "p1", "--ipuof-configs", "--gcd", "5"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "get partition (p1): failure: gcd: out of range\n");
}

TEST_F(FakeServerTest, GetUnknownPartition) {
  CliResult r = Vipu({"get", "partition", "nope"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "get partition (nope): failure: partition nope not found\n");
}

TEST_F(FakeServerTest, PartitionStatusBox) {
  ASSERT_EQ(Vipu({"create", "partition", "p1", "--size", "4"}).code, 0);
  CliResult r = Vipu({"get", "partition-status", "p1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(" State                  | ACTIVE"));
  EXPECT_THAT(r.out, HasSubstr(" Last auto-reset        | never"));
}

TEST_F(FakeServerTest, AuthMetadataFromFlags) {
  CliResult r = Vipu({"create", "partition", "p1", "--size", "4", "--api-user-id", "alice",
                      "--api-access-key", "685X_K4uCzN"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(user_.last_user_, "alice");
  EXPECT_EQ(user_.last_key_, "685X_K4uCzN");
}

TEST_F(FakeServerTest, AuthAndAddressFromConfigFile) {
  std::string path = home_ + "/alice.vipu-cli.hcl";
  std::ofstream(path) << "api-host = \"127.0.0.1\"\napi-port = " << port_
                      << "\napi-user-id = \"alice\"\napi-access-key = \"k\"\n";
  env_.vars.erase("VIPU_CLI_API_HOST");
  env_.vars.erase("VIPU_CLI_API_PORT");
  CliResult r = Vipu({"--config", path, "create", "partition", "p1", "--size", "4"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(user_.last_user_, "alice");
  EXPECT_EQ(user_.last_key_, "k");
}

TEST_F(FakeServerTest, NoMetadataWithoutCredentials) {
  ASSERT_EQ(Vipu({"create", "partition", "p1", "--size", "4"}).code, 0);
  EXPECT_EQ(user_.last_user_, "");
  EXPECT_EQ(user_.last_key_, "");
}

TEST_F(FakeServerTest, UsageErrorsMakeNoRpc) {
  CliResult r = Vipu({"create", "partition", "p1", "--size", "0"});
  EXPECT_EQ(r.code, 2);
  r = Vipu({"create", "partition", "p1", "--size", "4", "--routing", "foo"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(user_.create_calls_, 0);
}

TEST_F(FakeServerTest, ListAllocationsAndIpuAttrs) {
  CliResult r = Vipu({"list", "allocation"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "-------------------------\n"
            " Allocation ID | Agents  \n"
            "-------------------------\n"
            " alloc-1       | ag0 ag1 \n"
            "-------------------------\n");
  EXPECT_EQ(Admin({"list", "allocations"}).out, r.out);

  r = Vipu({"list", "ipu-attr", "--agents", "ag0,ag1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(user_.attribute_agents_, ElementsAre("ag0", "ag1"));
  EXPECT_THAT(r.out, HasSubstr(" ag0   | 0   | clock     | 1330MHz "));
}

TEST_F(FakeServerTest, AdminAgentsClustersAllocations) {
  CliResult r = Admin({"create", "agent", "ag1", "--host", "10.1.2.1", "--port", "8080"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "create agent (ag1): success.\n");

  r = Admin({"list", "agents"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(" ag1      | 10.1.2.1 | 8080 | Down   | -       | 4    | never "));

  r = Admin({"get", "agent", "ag1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(" Agent ID       | ag1 "));
  r = Admin({"get", "agent", "ag9"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "get agent (ag9): failure: agent ag9 not found\n");

  r = Admin({"create", "cluster", "c1", "--agents", "ag1,ag0", "--num-ipulinkdomains", "2",
             "--topology", "mesh", "--cluster-topology", "switched"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "create cluster (c1): success.\n");
  EXPECT_THAT(admin_.last_cluster_.agent_ids(), ElementsAre("ag1", "ag0"));
  EXPECT_EQ(admin_.last_cluster_.num_ipulink_domains(), 2u);
  EXPECT_EQ(admin_.last_cluster_.topology(), vipuadmin::ILT_MESH);
  EXPECT_EQ(admin_.last_cluster_.cluster_topology(), vipuadmin::GLT_SWITCHED);
  r = Admin({"list", "cluster"});
  EXPECT_THAT(r.out, HasSubstr(" c1         | ag1 ag0 | 2    | mesh     | switched "));

  r = Admin({"create", "cluster", "c2", "--agents", "ag0"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(admin_.last_cluster_.num_ipulink_domains(), 1u);
  EXPECT_EQ(admin_.last_cluster_.topology(), vipuadmin::ILT_TORUS);
  EXPECT_EQ(admin_.last_cluster_.cluster_topology(), vipuadmin::GLT_LOOPED);

  r = Admin({"remove", "clusters", "c1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "remove cluster (c1): failure: cluster c1 has allocations\n");

  r = Admin({"create", "allocation", "a1", "--cluster", "c1", "--agents", "ag0,ag1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "create allocation (a1): success.\n");
  EXPECT_EQ(admin_.last_allocation_.cluster_id(), "c1");
  EXPECT_THAT(admin_.last_allocation_.agent_ids(), ElementsAre("ag0", "ag1"));
  EXPECT_EQ(Admin({"remove", "allocation", "a1"}).out, "remove allocation (a1): success.\n");
  EXPECT_EQ(Admin({"remove", "agent", "ag1"}).out, "remove agent (ag1): success.\n");
}

TEST_F(FakeServerTest, AdminCreatePartitionWritesFilesToo) {
  CliResult r = Admin({"create", "partition", "p1", "--size", "4", "--cluster", "c16"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "create partition (p1): success.\n");
  EXPECT_TRUE(fs::exists(IpuofConfigPath(home_, "p1", 0)));
}

}  // namespace
}  // namespace vipu::cli
