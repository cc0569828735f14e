// Simulated-pod behaviour with real processes: injected faults put
// exactly the partitions they touch in PS_ERROR naming the machine and the
// IPU or link, the server notices a hung agent within three heartbeats, the
// partitions auto-reset when the fault clears, `test cluster` counts follow
// the pod, and the data plane runs workloads on a partition's machines.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <cstdlib>
#include <regex>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "popdist/device_connection.h"
#include "popdist/ipuof_client.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"
#include "vipu_admin.grpc.pb.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The harness's --heartbeat-ms (200 unless the run says otherwise).
const int kHeartbeatMs = TestHeartbeatMs();

std::unique_ptr<ServerProcess> StartPod(const std::string& pod) {
  return ServerProcess::Start(pod);
}

// Same, the server serving /metrics on `metrics_port`.
std::unique_ptr<ServerProcess> StartPod(const std::string& pod, int metrics_port) {
  return ServerProcess::Start(pod, {"--metrics-listen", absl::StrCat("127.0.0.1:", metrics_port)});
}

// The value of one sample (name and labels as scraped), or -1 when the
// scrape fails or has no such sample.
double MetricValue(int metrics_port, const std::string& sample) {
  const std::string text = HttpGet(metrics_port, "/metrics");
  const std::string line = "\n" + sample + " ";
  const size_t at = text.find(line);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + line.size(), nullptr);
}

// Waits until the server holds a heartbeat of `agent` that reports `n`
// faults of `kind` ("ipu": IPUs in error, "link": links down).
bool AwaitReportedFaults(int metrics_port, const std::string& agent, const std::string& kind,
                         int n) {
  const std::string sample =
      absl::StrCat("vipu_agent_faults{agent=\"", agent, "\",kind=\"", kind, "\"}");
  return WaitFor([&] { return MetricValue(metrics_port, sample) == n; }, absl::Seconds(20));
}

// Waits until a whole health pass has run after this call: a pass in
// progress now may end, and the next one starts after what the server
// held before the call. Negative checks come after this: the server has had
// its chance to act.
bool AwaitWholeHealthPass(int metrics_port) {
  const double start = MetricValue(metrics_port, "vipu_health_passes_total");
  if (start < 0) return false;
  return WaitFor([&] { return MetricValue(metrics_port, "vipu_health_passes_total") >= start + 2; },
                 absl::Seconds(20));
}

bool WaitState(const ServerProcess& s, const std::string& partition, const std::string& state,
               absl::Duration timeout = absl::Seconds(20)) {
  return WaitFor([&] { return PartitionStatusField(s, partition, "State") == state; }, timeout);
}

// The first topology id of a partition in ILD 0 ("ILD 0: 8-11" -> 8).
int FirstTopologyId(const ServerProcess& s, const std::string& partition) {
  CommandResult r = s.Vipu({"get", "partition", partition});
  std::smatch m;
  if (!std::regex_search(r.out, m, std::regex("ILD 0: ([0-9]+)"))) return -1;
  return std::stoi(m[1]);
}

// Topology id -> machine ("ag1".."agN") and IPU# (slot 0 is IPU# 3).
std::string MachineOf(int topology_id) { return absl::StrCat("ag", 1 + topology_id / 4); }
int IpuOf(int topology_id) { return 3 - topology_id % 4; }

class FaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = StartPod("pod16", metrics_port_);
    for (const char* p : {"p1", "p2"}) {
      CommandResult r =
          server_->Vipu({"create", "partition", p, "--size", std::string(p) == "p1" ? "8" : "4"});
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err << "server log:\n"
                                << ReadFile(server_->dir() + "/server.log");
    }
    p1_ = FirstTopologyId(*server_, "p1");
    p2_ = FirstTopologyId(*server_, "p2");
    ASSERT_GE(p1_, 0);
    ASSERT_GE(p2_, 0);
  }

  CommandResult Inject(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"inject", "fault"};
    argv.insert(argv.end(), args.begin(), args.end());
    return server_->VipuAdmin(argv);
  }

  void ExpectRecoveredByAutoReset(const std::string& partition) {
    ASSERT_TRUE(WaitState(*server_, partition, "ACTIVE"))
        << PartitionStatusField(*server_, partition, "Errors");
    EXPECT_EQ(PartitionStatusField(*server_, partition, "Errors"), "none");
    EXPECT_EQ(PartitionStatusField(*server_, partition, "Auto-reset retry count"), "1");
    EXPECT_NE(PartitionStatusField(*server_, partition, "Last auto-reset"), "never");
  }

  const int metrics_port_ = FreePort();
  std::unique_ptr<ServerProcess> server_;
  int p1_ = -1;
  int p2_ = -1;
};

TEST_F(FaultsTest, IpuErrorFailsOnlyItsPartitionThenAutoResets) {
  const std::string machine = MachineOf(p1_);
  const int ipu = IpuOf(p1_);
  CommandResult r = Inject({machine, "--kind", "ipu-error", "--ipu", std::to_string(ipu)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitState(*server_, "p1", "ERROR"));
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "Errors"),
            absl::StrCat("agent ", machine, ": IPU ", ipu, " error (injected fault)"));
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "Operation"), "FAILED");
  EXPECT_EQ(PartitionStatusField(*server_, "p2", "State"), "ACTIVE");
  EXPECT_EQ(PartitionStatusField(*server_, "p2", "Errors"), "none");
  // Auto reset waits for the fault to clear: no retry is spent meanwhile.
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "Auto-reset retry count"), "0");

  ASSERT_EQ(Inject({machine, "--kind", "clear"}).exit_code, 0);
  ExpectRecoveredByAutoReset("p1");
  EXPECT_EQ(PartitionStatusField(*server_, "p2", "Auto-reset retry count"), "0");
}

TEST_F(FaultsTest, LinkDownFailsOnlyThePartitionOwningItThenAutoResets) {
  // p1 spans two machines; the rail between them is port 4 of the first.
  const std::string first = MachineOf(p1_);
  const std::string second = MachineOf(p1_ + 4);
  CommandResult r = Inject({first, "--kind", "link-down", "--link", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string name = absl::StrCat(first, ".ipu1-", second, ".ipu3");
  EXPECT_THAT(r.out, HasSubstr(name));
  ASSERT_TRUE(WaitState(*server_, "p1", "ERROR"));
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "Errors"),
            absl::StrCat("agent ", first, ": IPU-Link ", name, " down"));
  EXPECT_EQ(PartitionStatusField(*server_, "p2", "State"), "ACTIVE");

  ASSERT_EQ(Inject({first, "--kind", "clear"}).exit_code, 0);
  ExpectRecoveredByAutoReset("p1");
}

TEST_F(FaultsTest, LinkOutsideEveryPartitionFailsNone) {
  // The rail from p2's machine to the next machine belongs to no partition.
  const std::string machine = MachineOf(p2_);
  ASSERT_EQ(Inject({machine, "--kind", "link-down", "--link", "4"}).exit_code, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        CommandResult t = server_->VipuAdmin({"test", "cluster", "pod16", "--force"});
        return t.out.find("21/22") != std::string::npos;
      },
      absl::Seconds(10)));
  // A negative check: once the server holds the heartbeat that reports the
  // link down, a whole health pass must leave both partitions alone.
  ASSERT_TRUE(AwaitReportedFaults(metrics_port_, machine, "link", 1));
  ASSERT_TRUE(AwaitWholeHealthPass(metrics_port_));
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "State"), "ACTIVE");
  EXPECT_EQ(PartitionStatusField(*server_, "p2", "State"), "ACTIVE");
}

TEST_F(FaultsTest, HungAgentIsDownWithinThreeHeartbeatsAndRecovers) {
  const std::string machine = MachineOf(p2_);
  const absl::Time start = absl::Now();
  ASSERT_EQ(Inject({machine, "--kind", "agent-hang"}).exit_code, 0);
  ASSERT_TRUE(WaitState(*server_, "p2", "ERROR", absl::Seconds(10)));
  const absl::Duration noticed = absl::Now() - start;
  std::printf("[ measured ] hang -> p2 PS_ERROR in %lld ms (heartbeat %d ms)\n",
              static_cast<long long>(absl::ToInt64Milliseconds(noticed)), kHeartbeatMs);
  // Three periods, plus a period the last heartbeat may predate the hang,
  // plus CLI polling on a shared machine.
  EXPECT_LT(noticed, absl::Milliseconds(4 * kHeartbeatMs) + absl::Seconds(1));
  EXPECT_THAT(PartitionStatusField(*server_, "p2", "Errors"),
              HasSubstr(absl::StrCat("agent ", machine, ": down (no heartbeat for")));
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "State"), "ACTIVE");
  CommandResult agents = server_->VipuAdmin({"list", "agents"});
  EXPECT_TRUE(std::regex_search(agents.out, std::regex(machine + " +\\|[^\\n]*\\| Down ")))
      << agents.out;

  ASSERT_EQ(Inject({machine, "--kind", "clear"}).exit_code, 0);
  ExpectRecoveredByAutoReset("p2");
}

// How many times `text` occurs in `haystack`.
int Occurrences(const std::string& haystack, const std::string& text) {
  int n = 0;
  for (size_t at = haystack.find(text); at != std::string::npos; at = haystack.find(text, at + 1)) {
    ++n;
  }
  return n;
}

TEST_F(FaultsTest, AMachineThatSilentlyLostItsPartitionIsGivenItBackAndItStaysActive) {
  // The second machine of p1 forgets it without a word: only its
  // heartbeats show it.
  const std::string machine = MachineOf(p1_ + 4);
  const std::string held = absl::StrCat("vipu_agent_partitions_held{agent=\"", machine, "\"}");
  ASSERT_TRUE(WaitFor([&] { return MetricValue(metrics_port_, held) == 1; }, absl::Seconds(20)));
  CommandResult r = Inject({machine, "--kind", "partition-lost"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("lost partitions p1"));
  const absl::Time start = absl::Now();
  const std::string log = server_->dir() + "/server.log";
  const std::string pushed = absl::StrCat("partition p1 (generation 1): agent ", machine,
                                          " reports not holding it; pushing it again");
  // The loss shows in a heartbeat or two, then the push; the log keeps it.
  ASSERT_TRUE(WaitFor([&] { return Occurrences(ReadFile(log), pushed) == 1; }, absl::Seconds(20)))
      << ReadFile(log);
  ASSERT_TRUE(WaitFor([&] { return MetricValue(metrics_port_, held) == 1; }, absl::Seconds(20)));
  std::printf("[ measured ] partition lost -> held again in %lld ms (heartbeat %d ms)\n",
              static_cast<long long>(absl::ToInt64Milliseconds(absl::Now() - start)), kHeartbeatMs);
  // Pushed at its generation: nothing the users see moved, and once held
  // again it is not pushed on every pass.
  ASSERT_TRUE(AwaitWholeHealthPass(metrics_port_));
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "State"), "ACTIVE");
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "Errors"), "none");
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "Auto-reset retry count"), "0");
  EXPECT_EQ(Occurrences(ReadFile(log), pushed), 1);
}

TEST_F(FaultsTest, SigstoppedAgentProcessFailsItsPartitionsUntilSigcont) {
  std::vector<pid_t> agents = server_->Children();
  ASSERT_EQ(agents.size(), 1u);  // pod16: one process for the 4 machines
  ASSERT_EQ(kill(agents[0], SIGSTOP), 0);
  EXPECT_TRUE(WaitState(*server_, "p1", "ERROR", absl::Seconds(10)));
  EXPECT_TRUE(WaitState(*server_, "p2", "ERROR", absl::Seconds(10)));
  EXPECT_THAT(PartitionStatusField(*server_, "p1", "Errors"),
              HasSubstr(": down (no heartbeat for"));
  ASSERT_EQ(kill(agents[0], SIGCONT), 0);
  ExpectRecoveredByAutoReset("p1");
  ExpectRecoveredByAutoReset("p2");
}

TEST_F(FaultsTest, DisabledAutoResetStaysInError) {
  ASSERT_EQ(server_->Vipu({"create", "partition", "manual", "--size", "4", "--disable-auto-reset"})
                .exit_code,
            0);
  const int manual = FirstTopologyId(*server_, "manual");
  const std::string machine = MachineOf(manual);
  ASSERT_EQ(
      Inject({machine, "--kind", "ipu-error", "--ipu", std::to_string(IpuOf(manual))}).exit_code,
      0);
  ASSERT_TRUE(WaitState(*server_, "manual", "ERROR"));
  ASSERT_EQ(Inject({machine, "--kind", "clear"}).exit_code, 0);
  // A negative check: once the server holds a heartbeat without the fault,
  // a whole health pass (which would start an enabled auto reset) must not
  // reset it.
  ASSERT_TRUE(AwaitReportedFaults(metrics_port_, machine, "ipu", 0));
  ASSERT_TRUE(AwaitWholeHealthPass(metrics_port_));
  EXPECT_EQ(PartitionStatusField(*server_, "manual", "State"), "ERROR");
  EXPECT_EQ(PartitionStatusField(*server_, "manual", "Auto-reset retry count"), "0");
  // A manual reset brings it back.
  ASSERT_EQ(server_->Vipu({"reset", "partition", "manual"}).exit_code, 0);
  EXPECT_EQ(PartitionStatusField(*server_, "manual", "State"), "ACTIVE");
}

// The agent's own words name its machine; the reason names it once and
// carries no status number.
TEST_F(FaultsTest, ResetDuringAFaultNamesTheMachineOnce) {
  ASSERT_EQ(server_->Vipu({"create", "partition", "manual", "--size", "4", "--disable-auto-reset"})
                .exit_code,
            0);
  const int manual = FirstTopologyId(*server_, "manual");
  const std::string machine = MachineOf(manual);
  const int ipu = IpuOf(manual);
  ASSERT_EQ(Inject({machine, "--kind", "ipu-error", "--ipu", std::to_string(ipu)}).exit_code, 0);
  ASSERT_TRUE(WaitState(*server_, "manual", "ERROR"));
  CommandResult r = server_->Vipu({"reset", "partition", "manual"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, absl::StrCat("reset partition (manual): failure: agent ", machine, ": IPU ", ipu,
                                " error (injected fault)\n"));
}

TEST_F(FaultsTest, CrashedMachineStaysDownAndFailsItsPartition) {
  const std::string machine = MachineOf(p2_);
  ASSERT_EQ(Inject({machine, "--kind", "agent-crash"}).exit_code, 0);
  ASSERT_TRUE(WaitState(*server_, "p2", "ERROR", absl::Seconds(10)));
  EXPECT_THAT(PartitionStatusField(*server_, "p2", "Errors"),
              HasSubstr(absl::StrCat("agent ", machine, ": down")));
  // Its server is gone: nothing can clear it.
  CommandResult clear = Inject({machine, "--kind", "clear"});
  EXPECT_NE(clear.exit_code, 0);
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "State"), "ACTIVE");
}

TEST_F(FaultsTest, InjectFaultRefusesBadTargets) {
  CommandResult r = Inject({"ag99", "--kind", "clear"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("agent_id: agent 'ag99' not found"));
  // ag1 is the first machine of pod16's mesh: nothing below it.
  r = Inject({"ag1", "--kind", "link-down", "--link", "6"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("link: agent 'ag1' has no link on port 6 (rail-prev-0)"));
  r = Inject({"ag1", "--kind", "link-down"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--link: is required for kind link-down"));

  // Straight through the API, bypassing the CLI's checks.
  auto admin = vipuadmin::AdminService::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  auto call = [&](vipuadmin::InjectFaultRequest req) {
    grpc::ClientContext ctx;
    vipuadmin::InjectFaultReply reply;
    return admin->InjectFault(&ctx, req, &reply);
  };
  vipuadmin::InjectFaultRequest base;
  base.set_agent_id("ag1");
  base.set_kind(vipuadmin::FAULT_IPU_ERROR);
  base.set_ipu(0);
  struct Case {
    std::function<void(vipuadmin::InjectFaultRequest*)> mutate;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](auto* r) { r->set_agent_id(""); }, "agent_id:"},
      {[](auto* r) { r->set_agent_id("bad id"); }, "agent_id:"},
      {[](auto* r) { r->set_kind(static_cast<vipuadmin::FaultKind>(99)); },
       "kind: unknown value 99"},
      {[](auto* r) { r->set_kind(vipuadmin::FAULT_KIND_UNDEFINED); }, "kind: must be one of"},
      {[](auto* r) { r->clear_ipu(); }, "ipu: is required"},
      {[](auto* r) { r->set_ipu(4); }, "ipu: must be 0..3, got 4"},
      {[](auto* r) { r->set_link(2); }, "link: only meaningful for kind link-down"},
      {[](auto* r) { r->set_duration_ms(5); }, "duration_ms: only meaningful for kind agent-hang"},
      {[](auto* r) {
         r->set_kind(vipuadmin::FAULT_LINK_DOWN);
         r->clear_ipu();
         r->set_link(14);
       },
       "link: must be a port 0..13, got 14"},
      {[](auto* r) {
         r->set_kind(vipuadmin::FAULT_AGENT_HANG);
         r->clear_ipu();
         r->set_duration_ms(3600001);
       },
       "duration_ms: must be 0..3600000"},
  };
  for (const Case& c : cases) {
    vipuadmin::InjectFaultRequest req = base;
    c.mutate(&req);
    grpc::Status s = call(req);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.message;
    EXPECT_THAT(s.error_message(), HasSubstr(c.message));
  }
  // None of them reached a machine.
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "State"), "ACTIVE");
  EXPECT_EQ(PartitionStatusField(*server_, "p2", "State"), "ACTIVE");
}

// ---- test cluster ----

std::string Row(const std::string& out, const std::string& test) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(test + " +\\| [0-9.]+s +\\| ([0-9]+/[0-9]+) "))) {
    return "";
  }
  return m[1];
}

TEST(TestClusterTest, CountsFollowPod16) {
  auto server = StartPod("pod16");
  CommandResult r = server->VipuAdmin({"test", "cluster", "pod16"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("Test Type"));
  EXPECT_EQ(Row(r.out, "Version"), "4/4");
  EXPECT_EQ(Row(r.out, "Cabling"), "12/12");
  EXPECT_EQ(Row(r.out, "Sync-Link"), "6/6");
  EXPECT_EQ(Row(r.out, "Link-Training"), "22/22");
  EXPECT_EQ(Row(r.out, "Traffic"), "1/1");
  EXPECT_EQ(Row(r.out, "GW-Link"), "0/0");
  EXPECT_THAT(r.out, HasSubstr("GW Link test skipped"));
}

TEST(TestClusterTest, CountsFollowPod64) {
  auto server = StartPod("pod64");
  CommandResult r = server->VipuAdmin({"test", "cluster", "pod64"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Row(r.out, "Version"), "16/16");
  EXPECT_EQ(Row(r.out, "Cabling"), "64/64");
  EXPECT_EQ(Row(r.out, "Sync-Link"), "32/32");
  EXPECT_EQ(Row(r.out, "Link-Training"), "96/96");
  EXPECT_EQ(Row(r.out, "Traffic"), "1/1");
  EXPECT_EQ(Row(r.out, "GW-Link"), "0/0");
}

TEST(TestClusterTest, RefusesWithPartitionsUnlessForcedAndNamesAFailedLink) {
  auto server = StartPod("pod16");
  ASSERT_EQ(server->Vipu({"create", "partition", "busy", "--size", "4"}).exit_code, 0);
  CommandResult r = server->VipuAdmin({"test", "cluster", "pod16"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cluster_id: cluster 'pod16' has 1 partition(s)"));
  EXPECT_THAT(r.err, HasSubstr("--force"));
  EXPECT_THAT(r.out, Not(HasSubstr("Test Type")));

  ASSERT_EQ(
      server->VipuAdmin({"inject", "fault", "ag2", "--kind", "link-down", "--link", "4"}).exit_code,
      0);
  // The fault is the agent's own state: the test sees it at once.
  r = server->VipuAdmin({"test", "cluster", "pod16", "--force"});
  EXPECT_EQ(r.exit_code, 1);  // a failed test fails the command
  EXPECT_EQ(Row(r.out, "Link-Training"), "21/22");
  EXPECT_EQ(Row(r.out, "Traffic"), "0/1");
  EXPECT_EQ(Row(r.out, "Cabling"), "12/12");
  EXPECT_THAT(r.out, HasSubstr("Link-Training: IPU-Link ag2.ipu1-ag3.ipu3: down (reported by ag2"));

  auto admin = vipuadmin::AdminService::NewStub(
      grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials()));
  for (const auto& [id, code] : std::vector<std::pair<std::string, grpc::StatusCode>>{
           {"", grpc::StatusCode::INVALID_ARGUMENT},
           {"no such", grpc::StatusCode::INVALID_ARGUMENT},
           {"nosuch", grpc::StatusCode::NOT_FOUND}}) {
    grpc::ClientContext ctx;
    vipuadmin::TestClusterRequest req;
    req.set_cluster_id(id);
    vipuadmin::TestClusterReply reply;
    grpc::Status s = admin->TestCluster(&ctx, req, &reply);
    EXPECT_EQ(s.error_code(), code) << id;
    EXPECT_THAT(s.error_message(), HasSubstr("cluster_id:"));
  }
}

// ---- data plane ----

vipuagent::WorkloadSpec Bert() {
  vipuagent::WorkloadSpec w;
  w.set_model("bert-base");
  w.set_micro_batch(4);
  w.set_grad_accum(8);
  // On one IPU per replica LAMB's state only fits off chip.
  w.set_optimizer_state_offchip(true);
  return w;
}

TEST_F(FaultsTest, DataPlaneRunsOnThePartitionsMachinesAndFailsOnADownLink) {
  auto client = popdist::ipuof::IpuofClient::AttachToPartition("127.0.0.1", server_->port(), "p1",
                                                               0, absl::Seconds(10));
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(client->partition_id(), "p1");
  ASSERT_EQ(client->devices().size(), 8u);
  auto run = client->Run(Bert(), 3);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->step_time_s.size(), 3u);
  EXPECT_GT(run->step_time_s[0], 0);
  EXPECT_EQ(run->step_time_s[0], run->step_time_s[2]);
  EXPECT_GT(run->samples_per_sec, 0);
  EXPECT_EQ(run->agent_ids.size(), 2u);

  // A link the partition owns, on the machine that does not lead the run.
  const std::string first = MachineOf(p1_);
  const std::string second = MachineOf(p1_ + 4);
  ASSERT_EQ(Inject({second, "--kind", "link-down", "--link", "0"}).exit_code, 0);
  auto failed = client->Run(Bert(), 3);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(failed.status().message()),
              HasSubstr(absl::StrCat("agent ", second, ": IPU-Link ", second, ".ipu3-", second,
                                     ".ipu2 down")));
  ASSERT_EQ(Inject({second, "--kind", "clear"}).exit_code, 0);

  // An IPU error on the leading machine.
  ASSERT_EQ(Inject({first, "--kind", "ipu-error", "--ipu", std::to_string(IpuOf(p1_))}).exit_code,
            0);
  failed = client->Run(Bert(), 3);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()),
              HasSubstr(absl::StrCat("agent ", first, ": IPU ", IpuOf(p1_), " error")));
  // p2's machines are untouched: it still runs.
  auto other = popdist::ipuof::IpuofClient::AttachToPartition("127.0.0.1", server_->port(), "p2", 0,
                                                              absl::Seconds(10));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_TRUE(other->Run(Bert(), 1).ok());
}

TEST_F(FaultsTest, DataPlaneAttachesFromEnvironmentOrConfigFile) {
  popdist::ipuof::Environment env = {{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
                                     {"IPUOF_VIPU_API_PORT", std::to_string(server_->port())},
                                     {"IPUOF_VIPU_API_PARTITION_ID", "p2"},
                                     {"IPUOF_VIPU_API_GCD_ID", "0"}};
  auto client = popdist::ipuof::IpuofClient::Attach(env);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ(client->devices().size(), 4u);
  EXPECT_TRUE(client->Run(Bert(), 2).ok());

  // `vipu create partition` left the config files in HOME.
  popdist::ipuof::Environment file_env = {
      {"IPUOF_CONFIG_PATH", server_->home() + "/.ipuof.conf.d/p1_gcd0_ipuof.conf"}};
  auto from_file = popdist::ipuof::IpuofClient::Attach(file_env);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  EXPECT_EQ(from_file->partition_id(), "p1");
  EXPECT_EQ(from_file->devices().size(), 8u);
  EXPECT_TRUE(from_file->Run(Bert(), 1).ok());

  // Bad environments name the variable.
  struct Case {
    std::map<std::string, std::string> vars;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{}, "set IPUOF_VIPU_API_HOST"},
           {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"}}, "IPUOF_VIPU_API_PARTITION_ID:"},
           {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
             {"IPUOF_VIPU_API_PORT", "0"},
             {"IPUOF_VIPU_API_PARTITION_ID", "p1"}},
            "IPUOF_VIPU_API_PORT:"},
           {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
             {"IPUOF_VIPU_API_PORT", "x"},
             {"IPUOF_VIPU_API_PARTITION_ID", "p1"}},
            "IPUOF_VIPU_API_PORT:"},
           {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
             {"IPUOF_VIPU_API_PORT", std::to_string(server_->port())},
             {"IPUOF_VIPU_API_PARTITION_ID", "p1"},
             {"IPUOF_VIPU_API_GCD_ID", "-1"}},
            "IPUOF_VIPU_API_GCD_ID:"},
           {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
             {"IPUOF_VIPU_API_PORT", std::to_string(server_->port())},
             {"IPUOF_VIPU_API_PARTITION_ID", "p1"},
             {"IPUOF_VIPU_API_GCD_ID", "1"}},
            "gcd_id:"},
           {{{"IPUOF_CONFIG_PATH", "/nonexistent/x.conf"}}, "IPUOF_CONFIG_PATH: cannot read"},
       }) {
    auto a = popdist::ipuof::IpuofClient::Attach(c.vars, absl::Seconds(5));
    ASSERT_FALSE(a.ok()) << c.message;
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(c.message));
  }
}

TEST_F(FaultsTest, DataPlaneRefusesBadWorkloads) {
  auto client = popdist::ipuof::IpuofClient::AttachToPartition("127.0.0.1", server_->port(), "p2",
                                                               0, absl::Seconds(10));
  ASSERT_TRUE(client.ok()) << client.status();
  struct Case {
    std::function<void(vipuagent::WorkloadSpec*)> mutate;
    uint32_t steps;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](auto*) {}, 0, "steps: must be 1..100000, got 0"},
      {[](auto*) {}, 100001, "steps: must be 1..100000, got 100001"},
      {[](auto* w) { w->set_model(""); }, 1, "workload.model: must name a preset"},
      {[](auto* w) { w->set_model("gpt5"); }, 1, "workload.model:"},
      {[](auto* w) { w->set_optimizer("magic"); }, 1, "workload.optimizer:"},
      {[](auto* w) { w->set_ipus_per_replica(8); }, 1, "workload.ipus_per_replica: 8 IPUs"},
      {[](auto* w) { w->set_ipus_per_replica(3); }, 1, "ipus_per_replica"},
      {[](auto* w) { w->set_replicas(8); }, 1, "replicas"},
      {[](auto* w) { w->set_optimizer_state_offchip(false); }, 1, "memory: IPU 0 needs at least "},
      // A network given layer by layer: only with model "layers", 1..4096 layers.
      {[](auto* w) { w->add_layers()->set_name("fc"); }, 1,
       "workload.layers: only with model \"layers\""},
      {[](auto* w) { w->set_model("layers"); }, 1,
       "workload.layers: must hold 1..4096 layers, got 0"},
      {[](auto* w) {
         w->set_model("layers");
         for (int i = 0; i < 4097; ++i) w->add_layers()->set_name("fc");
       },
       1, "workload.layers: must hold 1..4096 layers, got 4097"},
  };
  for (const Case& c : cases) {
    vipuagent::WorkloadSpec w = Bert();
    c.mutate(&w);
    auto r = client->Run(w, c.steps);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.message));
  }
  // The partition is gone: NOT_FOUND from the machine.
  ASSERT_EQ(server_->Vipu({"remove", "partition", "p2"}).exit_code, 0);
  auto gone = client->Run(Bert(), 1);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
}

// Attach at the machine that holds p2's GCD 0, as an application does:
// what the machine does not hold, or an IPU list it cannot take, is refused
// with the field named, and nothing stays attached.
TEST_F(FaultsTest, AttachRefusesWhatTheMachineDoesNotHold) {
  auto client = popdist::ipuof::IpuofClient::AttachToPartition("127.0.0.1", server_->port(), "p2",
                                                               0, absl::Seconds(10));
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_FALSE(client->devices().empty());
  const popdist::ipuof::IpuofDevice& first = client->devices()[0];
  const std::string address = absl::StrCat(first.host, ":", first.port);
  auto insecure = grpc::InsecureChannelCredentials();
  struct Case {
    std::string partition;
    uint32_t gcd;
    std::vector<uint32_t> ipus;
    absl::StatusCode code;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"nope", 0, {0}, absl::StatusCode::kNotFound, "nope"},
           {"p1", 0, {0}, absl::StatusCode::kNotFound, "p1"},  // another machine's
           {"p2", 0, {7}, absl::StatusCode::kInvalidArgument, "ipus: IPU 7 is beyond partition p2"},
           {"p2", 0, {}, absl::StatusCode::kInvalidArgument, "ipus: must name 1..64"},
           {"p2", 0, {1, 1}, absl::StatusCode::kInvalidArgument, "ipus: an IPU is named twice"},
       }) {
    popdist::ipuof::DeviceConnection connection(address, insecure, c.partition, c.gcd);
    auto attached = connection.Attach(c.ipus, "test", absl::Seconds(10));
    ASSERT_FALSE(attached.ok()) << c.partition;
    EXPECT_EQ(attached.status().code(), c.code) << attached.status();
    EXPECT_THAT(std::string(attached.status().message()), HasSubstr(c.message));
  }
  // Nothing was left attached: the IPUs are free for the application.
  popdist::ipuof::DeviceConnection connection(address, insecure, "p2", 0);
  auto attached = connection.Attach({0, 1, 2, 3}, "test", absl::Seconds(10));
  EXPECT_TRUE(attached.ok()) << attached.status();
}

// The IPUs a partition's GCD 0 runs on, as "ag4.ipu3,ag4.ipu2".
std::string DevicesOf(const ServerProcess& s, const std::string& partition) {
  auto client = popdist::ipuof::IpuofClient::AttachToPartition("127.0.0.1", s.port(), partition, 0,
                                                               absl::Seconds(10));
  if (!client.ok()) return std::string(client.status().message());
  std::string out;
  for (const popdist::ipuof::IpuofDevice& d : client->devices()) {
    absl::StrAppend(&out, out.empty() ? "" : ",", d.host, ":", d.port, "/ipu", d.ipu_id);
  }
  return out;
}

// A partition created relocatable does not wait for its fault to clear: its
// auto reset moves it to healthy IPUs of its allocation, with a new
// generation and new IPUoF configs, and it runs there. A partition without
// the flag stays where it is, in error.
TEST_F(FaultsTest, RelocatablePartitionMovesOffAFaultyIpuOthersStay) {
  // pod16 after p1 (8) and p2 (4): one machine is free; r takes half of it.
  ASSERT_EQ(server_->Vipu({"create", "partition", "r", "--size", "2", "--relocatable"}).exit_code,
            0);
  const int before = FirstTopologyId(*server_, "r");
  const std::string devices = DevicesOf(*server_, "r");
  auto client = popdist::ipuof::IpuofClient::AttachToPartition("127.0.0.1", server_->port(), "r", 0,
                                                               absl::Seconds(10));
  ASSERT_TRUE(client.ok()) << client.status();
  auto run = client->Run(Bert(), 1);
  ASSERT_TRUE(run.ok()) << run.status();
  const uint64_t generation = run->generation;

  const std::string machine = MachineOf(before);
  ASSERT_EQ(
      Inject({machine, "--kind", "ipu-error", "--ipu", std::to_string(IpuOf(before))}).exit_code,
      0);
  ASSERT_EQ(Inject({MachineOf(p2_), "--kind", "ipu-error", "--ipu", std::to_string(IpuOf(p2_))})
                .exit_code,
            0);
  ASSERT_TRUE(WaitFor([&] { return FirstTopologyId(*server_, "r") != before; }, absl::Seconds(20)));
  ASSERT_TRUE(WaitState(*server_, "r", "ACTIVE")) << PartitionStatusField(*server_, "r", "Errors");
  EXPECT_EQ(PartitionStatusField(*server_, "r", "Auto-reset retry count"), "1");
  // The other half of the same machine: the only healthy free block of 2.
  EXPECT_EQ(FirstTopologyId(*server_, "r"), before ^ 2);
  EXPECT_NE(DevicesOf(*server_, "r"), devices);
  client = popdist::ipuof::IpuofClient::AttachToPartition("127.0.0.1", server_->port(), "r", 0,
                                                          absl::Seconds(10));
  ASSERT_TRUE(client.ok()) << client.status();
  run = client->Run(Bert(), 1);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_GT(run->generation, generation);

  // p2 has no flag: it stays on its IPUs, in error, until the fault clears.
  ASSERT_TRUE(WaitState(*server_, "p2", "ERROR"));
  EXPECT_EQ(FirstTopologyId(*server_, "p2"), p2_);
  EXPECT_EQ(PartitionStatusField(*server_, "p2", "Auto-reset retry count"), "0");
}

// `reset partition --relocatable` moves any partition off its faults, and
// says why when there is nowhere healthy to go; the partition is unchanged.
TEST_F(FaultsTest, ResetRelocatableMovesOrSaysWhyNot) {
  const std::string machine = MachineOf(p2_);
  ASSERT_EQ(Inject({machine, "--kind", "ipu-error", "--ipu", std::to_string(IpuOf(p2_))}).exit_code,
            0);
  ASSERT_TRUE(WaitState(*server_, "p2", "ERROR"));
  // No flag: a reset in place, which the fault fails again.
  CommandResult r = server_->Vipu({"reset", "partition", "p2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(FirstTopologyId(*server_, "p2"), p2_);
  // The free machine takes it.
  r = server_->Vipu({"reset", "partition", "p2", "--relocatable"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(FirstTopologyId(*server_, "p2"), p2_);
  EXPECT_EQ(PartitionStatusField(*server_, "p2", "State"), "ACTIVE");

  // Now p1 has nowhere to go: every healthy block of 8 is taken.
  ASSERT_EQ(Inject({MachineOf(p1_), "--kind", "ipu-error", "--ipu", std::to_string(IpuOf(p1_))})
                .exit_code,
            0);
  ASSERT_TRUE(WaitState(*server_, "p1", "ERROR"));
  r = server_->Vipu({"reset", "partition", "p1", "--relocatable"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("cannot move partition 'p1' away from agent "));
  EXPECT_EQ(FirstTopologyId(*server_, "p1"), p1_);
  EXPECT_EQ(PartitionStatusField(*server_, "p1", "State"), "ERROR");
}

// The POD128 commands of the BERT benchmark: a partition over two ILDs takes
// the same positions in both, so it owns the GW-Links between its machines.
// A GW-Link fault puts it, and no other partition, in error, and its data
// plane, which crosses the ILDs, fails naming the link.
TEST(MultiIldTest, TwoIldPartitionOwnsItsGwLinks) {
  const int metrics_port = FreePort();
  auto server = StartPod("pod128", metrics_port);
  // 16 replicas of 4 IPUs, first on one whole ILD (without its wrap links,
  // as the two-ILD partition below has none).
  vipuagent::WorkloadSpec data_parallel = Bert();
  data_parallel.set_replicas(16);
  data_parallel.set_ipus_per_replica(4);
  for (uint32_t layers : {0u, 4u, 4u, 4u}) data_parallel.add_layers_per_ipu(layers);
  ASSERT_EQ(
      server->Vipu({"create", "partition", "one", "--size", "64", "--routing", "swnc"}).exit_code,
      0);
  auto one_ild = popdist::ipuof::IpuofClient::AttachToPartition("127.0.0.1", server->port(), "one",
                                                                0, absl::Seconds(10));
  ASSERT_TRUE(one_ild.ok()) << one_ild.status();
  auto within = one_ild->Run(data_parallel, 1);
  ASSERT_TRUE(within.ok()) << within.status();
  ASSERT_EQ(server->Vipu({"remove", "partition", "one"}).exit_code, 0);
  ASSERT_EQ(server->Vipu({"create", "partition", "a", "--size", "32"}).exit_code, 0);
  CommandResult r = server->Vipu({"create", "partition", "b", "--size", "64", "--num-ilds", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = server->Vipu({"get", "partition", "b"});
  EXPECT_THAT(r.out, HasSubstr("ILD 0: 32-63; ILD 1: 32-63")) << r.out;
  auto client = popdist::ipuof::IpuofClient::AttachToPartition("127.0.0.1", server->port(), "b", 0,
                                                               absl::Seconds(10));
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE(client->Run(Bert(), 1).ok());
  // Over two ILDs the gradient reduction takes a third phase, over the
  // GW-Links: a step takes longer than on 64 IPUs of one ILD.
  auto across = client->Run(data_parallel, 1);
  ASSERT_TRUE(across.ok()) << across.status();
  EXPECT_GT(across->step_time_s[0], within->step_time_s[0]);

  // Machine 9 of ILD 0 (topology ids 32..35) is ag9; its twin in ILD 1 is ag25.
  r = server->VipuAdmin({"inject", "fault", "ag9", "--kind", "link-down", "--link", "12"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ag9.gw0-ag25.gw1"));
  ASSERT_TRUE(WaitState(*server, "b", "ERROR"));
  EXPECT_EQ(PartitionStatusField(*server, "b", "Errors"),
            "agent ag9: GW-Link ag9.gw0-ag25.gw1 down");
  EXPECT_EQ(PartitionStatusField(*server, "a", "State"), "ACTIVE");
  auto failed = client->Run(Bert(), 1);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("GW-Link ag9.gw0-ag25.gw1 down"));

  // a's machines are GW-linked to machines no partition holds: a GW-Link
  // fault there touches nobody.
  ASSERT_EQ(server->VipuAdmin({"inject", "fault", "ag1", "--kind", "link-down", "--link", "12"})
                .exit_code,
            0);
  // A negative check: once the server holds the heartbeat that reports it,
  // a whole health pass must leave a alone.
  ASSERT_TRUE(AwaitReportedFaults(metrics_port, "ag1", "link", 1));
  ASSERT_TRUE(AwaitWholeHealthPass(metrics_port));
  EXPECT_EQ(PartitionStatusField(*server, "a", "State"), "ACTIVE");

  // When no aligned pair of segments is free, the create says so: free
  // halves at 0-31 of ILD 0 and 32-63 of ILD 1 are not twins.
  ASSERT_EQ(server->Vipu({"remove", "partition", "b"}).exit_code, 0);
  ASSERT_EQ(server->VipuAdmin({"inject", "fault", "ag9", "--kind", "clear"}).exit_code, 0);
  for (const auto& [id, where] : std::vector<std::pair<std::string, std::string>>{
           {"x", "ILD 0: 32-63"}, {"y", "ILD 1: 0-31"}, {"z", "ILD 1: 32-63"}}) {
    ASSERT_EQ(server->Vipu({"create", "partition", id, "--size", "32"}).exit_code, 0);
    r = server->Vipu({"get", "partition", id});
    ASSERT_THAT(r.out, HasSubstr(where)) << r.out;
  }
  ASSERT_EQ(server->Vipu({"remove", "partition", "a"}).exit_code, 0);
  ASSERT_EQ(server->Vipu({"remove", "partition", "z"}).exit_code, 0);
  r = server->Vipu({"create", "partition", "d", "--size", "64", "--num-ilds", "2"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("at the same topology ids in each"));
}

}  // namespace
}  // namespace vipu::testing
