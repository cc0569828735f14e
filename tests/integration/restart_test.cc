// Restarting vipu-server never disturbs the data plane: agents run as their
// own processes (as under vipu-agent@.service), the server reconciles them
// to the database at start and serves changes only after that.
#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"
#include "vipu_admin.grpc.pb.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kAgents = {"m1", "m2", "m3", "m4"};

// A server without --simulate and one vipu-agent process serving four
// machines, on fixed ports so that both can restart at the same address.
// The server keeps its default heartbeat (1 s, Down after 3 s of silence):
// these tests count generations, and a shorter window lets a loaded machine
// (two cores, every process under ThreadSanitizer) miss heartbeats, mark
// agents Down and reset a partition to a new generation.
class Deployment {
 public:
  Deployment() : dir_(MakeTempDir()), port_(FreePort()) {
    for (size_t i = 0; i < kAgents.size(); ++i) agent_ports_.push_back(FreePort());
  }
  ~Deployment() {
    server_.reset();
    agents_.reset();
    RemoveTree(dir_);
  }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  std::string ready_file() const { return dir_ + "/ready"; }
  std::string server_log() const { return dir_ + "/server.log"; }
  std::string agents_log() const { return dir_ + "/agents.log"; }
  Daemon* server() { return server_.get(); }

  void LaunchServer(const std::vector<std::string>& extra = {}) {
    std::filesystem::remove(ready_file());
    std::vector<std::string> argv = {VIPU_SERVER_BIN,
                                     "--listen",
                                     address(),
                                     "--db",
                                     dir_ + "/vipu.db",
                                     "--ready-file",
                                     ready_file(),
                                     "--log-level",
                                     "info"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    server_ = std::make_unique<Daemon>(argv, server_log());
  }
  bool WaitServerReady() {
    return WaitFor([&] { return std::filesystem::exists(ready_file()) || !server_->running(); },
                   absl::Seconds(60)) &&
           server_->running();
  }
  void StartServer(const std::vector<std::string>& extra = {}) {
    LaunchServer(extra);
    ASSERT_TRUE(WaitServerReady()) << ReadFile(server_log());
  }

  void StartAgents() {
    std::string ports;
    for (int p : agent_ports_) absl::StrAppend(&ports, ports.empty() ? "" : ",", p);
    agents_ = std::make_unique<Daemon>(
        std::vector<std::string>{VIPU_AGENT_BIN, "--server", address(), "--agent-ids",
                                 "m1,m2,m3,m4", "--ports", ports, "--log-level", "info"},
        agents_log());
  }
  Daemon* agents() { return agents_.get(); }

  CommandResult Admin(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {VIPU_ADMIN_BIN, "--api-host", "127.0.0.1", "--api-port",
                                     std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"HOME", dir_}});
  }
  CommandResult Vipu(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {VIPU_CLI_BIN, "--api-host", "127.0.0.1", "--api-port",
                                     std::to_string(port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"HOME", dir_}});
  }

  // Creates the agents, starts them, and makes cluster c and allocation a.
  void Provision() {
    for (size_t i = 0; i < kAgents.size(); ++i) {
      CommandResult r = Admin({"create", "agent", kAgents[i], "--host", "127.0.0.1", "--port",
                               std::to_string(agent_ports_[i])});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    StartAgents();
    ASSERT_TRUE(WaitFor(
        [&] {
          for (const std::string& id : kAgents) {
            if (!absl::StrContains(Admin({"get", "agent", id}).out, "Up")) return false;
          }
          return true;
        },
        absl::Seconds(30)))
        << ReadFile(agents_log());
    CommandResult r = Admin({"create", "cluster", "c", "--agents", "m1,m2,m3,m4"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = Admin({"create", "allocation", "a", "--cluster", "c"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // What machine `index` holds: partition id -> generation.
  std::map<std::string, uint64_t> Held(size_t index) {
    auto stub = vipuagent::Agent::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", agent_ports_[index]), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    vipuagent::GetInfoRequest request;
    request.set_agent_id(kAgents[index]);
    vipuagent::GetInfoReply reply;
    std::map<std::string, uint64_t> out;
    // Unreachable (e.g. restarting) reads as holding nothing.
    if (!stub->GetInfo(&context, request, &reply).ok()) return out;
    for (const auto& h : reply.held()) out[h.partition_id()] = h.generation();
    return out;
  }
  grpc::Status Configure(size_t index, const std::string& partition, uint64_t generation) {
    auto stub = vipuagent::Agent::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", agent_ports_[index]), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    vipuagent::ConfigurePartitionRequest request;
    request.set_agent_id(kAgents[index]);
    request.set_partition_id(partition);
    request.set_generation(generation);
    request.add_ipus(0);
    request.add_ipus(1);
    request.set_partition_size(2);
    vipuagent::ConfigurePartitionReply reply;
    return stub->ConfigurePartition(&context, request, &reply);
  }
  grpc::Status Release(size_t index, const std::string& partition, uint64_t generation) {
    auto stub = vipuagent::Agent::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", agent_ports_[index]), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    vipuagent::ReleasePartitionRequest request;
    request.set_agent_id(kAgents[index]);
    request.set_partition_id(partition);
    request.set_generation(generation);
    vipuagent::ReleasePartitionReply reply;
    return stub->ReleasePartition(&context, request, &reply);
  }
  // Index of the first machine holding `partition`, or -1.
  int Holder(const std::string& partition) {
    for (size_t i = 0; i < kAgents.size(); ++i) {
      if (Held(i).count(partition)) return static_cast<int>(i);
    }
    return -1;
  }

 private:
  std::string dir_;
  int port_;
  std::vector<int> agent_ports_;
  std::unique_ptr<Daemon> server_;
  std::unique_ptr<Daemon> agents_;
};

int CountOccurrences(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(RestartTest, Kill9OfTheServerLeavesActivePartitionsOnTheAgentsUntouched) {
  Deployment d;
  d.StartServer();
  d.Provision();
  CommandResult r = d.Vipu({"create", "partition", "keep", "--size", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err << ReadFile(d.server_log());
  const int holder = d.Holder("keep");
  ASSERT_GE(holder, 0);
  const uint64_t generation = d.Held(holder)["keep"];
  const pid_t agents_pid = d.agents()->pid();
  const std::string configured = "configured partition keep";
  const int configured_before = CountOccurrences(ReadFile(d.agents_log()), configured);
  ASSERT_GT(configured_before, 0);

  d.server()->Kill();
  // The data plane does not notice: the agents still hold the partition.
  EXPECT_TRUE(d.agents()->running());
  EXPECT_EQ(d.Held(holder)["keep"], generation);

  d.StartServer();
  EXPECT_EQ(d.agents()->pid(), agents_pid);
  EXPECT_TRUE(d.agents()->running());
  r = d.Vipu({"list", "partitions"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("keep"));
  EXPECT_THAT(r.out, HasSubstr("ACTIVE"));
  EXPECT_EQ(d.Held(holder)["keep"], generation);
  // Reconciliation found the agent in agreement: nothing was pushed again.
  EXPECT_EQ(CountOccurrences(ReadFile(d.agents_log()), configured), configured_before)
      << ReadFile(d.agents_log());
  // And the IPUs are still taken: only 8 of 16 are free.
  EXPECT_NE(d.Vipu({"create", "partition", "big", "--size", "16"}).exit_code, 0);
  EXPECT_EQ(d.Vipu({"create", "partition", "fits", "--size", "8"}).exit_code, 0);
}

TEST(RestartTest, PartitionAnAgentHoldsButTheDatabaseDoesNotKnowIsReleased) {
  Deployment d;
  d.StartServer();
  d.Provision();
  d.server()->Kill();
  // While the server is down, machine m2 gets a partition nobody recorded.
  grpc::Status s = d.Configure(1, "ghost", 1000000);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(d.Held(1).count("ghost"), 1u);

  d.StartServer();  // ready only once the agents are reconciled
  EXPECT_EQ(d.Held(1).count("ghost"), 0u) << ReadFile(d.server_log());
  EXPECT_THAT(ReadFile(d.server_log()), HasSubstr("releasing ghost"));
}

TEST(RestartTest, ActivePartitionAnAgentLostIsPushedAgain) {
  Deployment d;
  d.StartServer();
  d.Provision();
  ASSERT_EQ(d.Vipu({"create", "partition", "p", "--size", "4"}).exit_code, 0);
  const int holder = d.Holder("p");
  ASSERT_GE(holder, 0);
  const uint64_t generation = d.Held(holder)["p"];

  // Server down; the machine loses the partition (e.g. a local reset).
  d.server()->Kill();
  ASSERT_TRUE(d.Release(holder, "p", generation).ok());
  ASSERT_EQ(d.Held(holder).count("p"), 0u);
  d.StartServer();
  EXPECT_EQ(d.Held(holder)["p"], generation) << ReadFile(d.server_log());
  EXPECT_THAT(ReadFile(d.server_log()), HasSubstr("re-pushing partition p"));

  // The same when the agent process itself restarts with empty state while
  // the server runs: its registration triggers the re-push.
  d.agents()->Relaunch();
  EXPECT_TRUE(WaitFor([&] { return d.Held(holder)["p"] == generation; }, absl::Seconds(30)))
      << ReadFile(d.agents_log());
  CommandResult r = d.Vipu({"list", "partitions"});
  EXPECT_THAT(r.out, HasSubstr("ACTIVE"));
}

TEST(RestartTest, MutatingRequestsWaitForReconciliationWithARetryHint) {
  Deployment d;
  d.StartServer();
  // Known agents that will not come back: the server waits the whole window.
  ASSERT_EQ(d.Admin({"create", "agent", "gone", "--host", "127.0.0.1", "--port", "1"}).exit_code,
            0);
  ASSERT_EQ(d.server()->Terminate(), 0);
  d.LaunchServer({"--reconcile-window-ms", "4000"});

  // Listening but not ready: health says NOT_SERVING (2).
  ASSERT_TRUE(WaitFor([&] { return HealthCheck(d.address()) == 2; }, absl::Seconds(10)))
      << ReadFile(d.server_log());
  ASSERT_FALSE(std::filesystem::exists(d.ready_file()));

  auto stub = vipuadmin::AdminService::NewStub(
      grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  vipuadmin::CreateAgentRequest request;
  request.set_agent_id("late");
  request.set_host("127.0.0.1");
  request.set_port(2);
  vipuadmin::CreateAgentReply reply;
  grpc::Status s = stub->CreateAgent(&context, request, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("retry in"));
  auto hint = context.GetServerTrailingMetadata().find("retry-after-ms");
  ASSERT_NE(hint, context.GetServerTrailingMetadata().end());
  int retry_ms = 0;
  ASSERT_TRUE(
      absl::SimpleAtoi(absl::string_view(hint->second.data(), hint->second.size()), &retry_ms));
  EXPECT_GE(retry_ms, 100);
  EXPECT_LE(retry_ms, 4000 + 5000);

  // The CLI shows the message; reads are served meanwhile.
  CommandResult cli = d.Vipu({"create", "partition", "p", "--size", "4"});
  EXPECT_NE(cli.exit_code, 0);
  EXPECT_THAT(cli.err, HasSubstr("retry in"));
  CommandResult list = d.Admin({"list", "agents"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("gone"));

  ASSERT_TRUE(d.WaitServerReady()) << ReadFile(d.server_log());
  EXPECT_EQ(HealthCheck(d.address()), 1);  // SERVING
  grpc::ClientContext again;
  EXPECT_TRUE(stub->CreateAgent(&again, request, &reply).ok());
}

}  // namespace
}  // namespace vipu::testing
