// `vipu-server --simulate` keeps every machine on its port across restarts,
// so that the IPUoF configs `vipu create partition` wrote stay valid; a port
// another process took meanwhile stops the start, naming agent and port.
// With one agent process per machine, killing one is losing that machine
// alone.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>
#include <stdexcept>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "popdist/ipuof_client.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

// An agent that cannot serve (here: a program that is no agent at all)
// ends the start at once instead of after the registration window.
TEST(SimulateRestartTest, AgentProcessExitingBeforeItRegistersFailsTheStartAtOnce) {
  const std::string dir = MakeTempDir();
  const absl::Time start = absl::Now();
  CommandResult r = RunCommand({VIPU_SERVER_BIN, "--simulate", "pod4", "--listen", "127.0.0.1:0",
                                "--db", dir + "/vipu.db", "--agent-binary", "/bin/false"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("for ag1 exited with status 1 before its machines registered"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  RemoveTree(dir);
}

#ifdef POPDIST_SAMPLE_TRAIN_BIN

std::string ConfigPath(const ServerProcess& server, const std::string& partition) {
  return absl::StrCat(server.home(), "/.ipuof.conf.d/", partition, "_gcd0_ipuof.conf");
}

// Two training steps on the machines the config file names, and nothing
// else: no server address reaches the application.
CommandResult TrainWith(const std::string& config) {
  return RunCommand(
      {POPDIST_SAMPLE_TRAIN_BIN, "--config", "pretrain_large_128_pod16", "--training-steps", "2"},
      {{"IPUOF_CONFIG_PATH", config}});
}

// A listening socket on 127.0.0.1:port for as long as the object lives.
class PortHolder {
 public:
  explicit PortHolder(uint32_t port) : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    // Connections the stopped agents closed may linger in TIME_WAIT on the
    // port; like gRPC's listeners, this one binds regardless of them.
    const int on = 1;
    held_ = fd_ >= 0 && setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0 &&
            bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 && listen(fd_, 1) == 0;
  }
  ~PortHolder() {
    if (fd_ >= 0) close(fd_);
  }
  PortHolder(const PortHolder&) = delete;
  PortHolder& operator=(const PortHolder&) = delete;
  bool held() const { return held_; }

 private:
  int fd_;
  bool held_ = false;
};

TEST(SimulateRestartTest, IpuofConfigAnswersAfterSigtermAndAfterKill9) {
  auto server = ServerProcess::Start("pod16");
  CommandResult created = server->Vipu({"create", "partition", "p16", "--size", "16"});
  ASSERT_EQ(created.exit_code, 0) << created.err << created.out;
  const std::string config = ConfigPath(*server, "p16");
  const std::string text = ReadFile(config);
  ASSERT_FALSE(text.empty()) << config;
  CommandResult r = TrainWith(config);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  ASSERT_THAT(r.out, HasSubstr("Attached to partition p16 GCD 0: 16 IPUs"));

  server->Restart();  // SIGTERM, then the same database
  EXPECT_EQ(ReadFile(config), text);
  r = TrainWith(config);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out << ReadFile(server->dir() + "/server.log");
  EXPECT_THAT(r.out, HasSubstr("Attached to partition p16 GCD 0: 16 IPUs"));

  // The killed server's agents are still letting go of the ports while the
  // new one starts.
  server->Kill();
  server->Restart();
  r = TrainWith(config);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out << ReadFile(server->dir() + "/server.log");
  EXPECT_THAT(r.out, HasSubstr("Attached to partition p16 GCD 0: 16 IPUs"));
  // The server still gives out the same endpoints.
  r = server->Vipu({"get", "partition", "p16", "--gcd", "0", "--ipuof-configs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto from_file = popdist::ipuof::IpuofClient::FromConfigFile(config);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  for (const popdist::ipuof::IpuofDevice& d : from_file->devices()) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat(d.port))) << "device " << d.device_id;
  }
}

// The agent process of `server` whose command line serves exactly `machine`.
pid_t ProcessServing(const ServerProcess& server, const std::string& machine) {
  for (pid_t child : server.Children()) {
    std::string cmdline = ReadFile(absl::StrCat("/proc/", child, "/cmdline"));
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find(absl::StrCat(" --agent-ids ", machine, " ")) != std::string::npos) {
      return child;
    }
  }
  return -1;
}

// The machine ("ag3") a partition's first IPU is on, from `vipu get partition`.
std::string FirstMachineOf(const ServerProcess& s, const std::string& partition) {
  CommandResult r = s.Vipu({"get", "partition", partition});
  std::smatch m;
  if (!std::regex_search(r.out, m, std::regex("ILD 0: ([0-9]+)"))) return "";
  return absl::StrCat("ag", 1 + std::stoi(m[1]) / 4);
}

TEST(SimulateRestartTest, OneProcessPerMachineLosesOneMachineAtATimeAndComesBackOnItsPorts) {
  auto server = ServerProcess::Start("pod16", {"--simulate-machines-per-process", "1"});
  ASSERT_EQ(server->Children().size(), 4u);
  for (const char* machine : {"ag1", "ag2", "ag3", "ag4"}) {
    EXPECT_GT(ProcessServing(*server, machine), 0) << machine;
  }
  ASSERT_EQ(
      server->Vipu({"create", "partition", "moving", "--size", "4", "--relocatable"}).exit_code, 0);
  ASSERT_EQ(server->Vipu({"create", "partition", "staying", "--size", "4"}).exit_code, 0);
  const std::string lost = FirstMachineOf(*server, "moving");
  const std::string kept = FirstMachineOf(*server, "staying");
  ASSERT_NE(lost, "");
  ASSERT_NE(lost, kept);

  // A machine lost for good: its partition fails, names it, and moves to a
  // healthy machine; the other machines and their partitions notice nothing.
  // The failure may last less than a poll, so the log shows it.
  ASSERT_EQ(kill(ProcessServing(*server, lost), SIGKILL), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string on = FirstMachineOf(*server, "moving");
        return !on.empty() && on != lost &&
               PartitionStatusField(*server, "moving", "State") == "ACTIVE";
      },
      absl::Seconds(30)))
      << PartitionStatusField(*server, "moving", "Errors");
  EXPECT_THAT(
      ReadFile(server->dir() + "/server.log"),
      HasSubstr(absl::StrCat("partition moving: PS_ACTIVE -> PS_ERROR (generation 1): agent ", lost,
                             ": down")));
  const std::string moved_to = FirstMachineOf(*server, "moving");
  EXPECT_NE(moved_to, lost);
  EXPECT_NE(moved_to, kept);
  EXPECT_EQ(PartitionStatusField(*server, "staying", "State"), "ACTIVE");
  EXPECT_EQ(PartitionStatusField(*server, "staying", "Auto-reset retry count"), "0");
  CommandResult agents = server->VipuAdmin({"list", "agents"});
  EXPECT_TRUE(std::regex_search(agents.out, std::regex(lost + " +\\|[^\\n]*\\| Down ")))
      << agents.out;
  for (const std::string& other : {kept, moved_to}) {
    EXPECT_TRUE(std::regex_search(agents.out, std::regex(other + " +\\|[^\\n]*\\| Up ")))
        << agents.out;
  }

  // The server restarts the pod: every machine, the lost one too, on the
  // ports its IPUoF configs name.
  auto configs = [&](const std::string& partition) {
    CommandResult r =
        server->Vipu({"get", "partition", partition, "--gcd", "0", "--ipuof-configs"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const std::string moving_config = configs("moving");
  const std::string staying_config = configs("staying");
  server->Restart();
  EXPECT_EQ(server->Children().size(), 4u);
  EXPECT_EQ(configs("moving"), moving_config);
  EXPECT_EQ(configs("staying"), staying_config);
  EXPECT_EQ(PartitionStatusField(*server, "moving", "State"), "ACTIVE");
  EXPECT_EQ(PartitionStatusField(*server, "staying", "State"), "ACTIVE");
  agents = server->VipuAdmin({"list", "agents"});
  EXPECT_TRUE(std::regex_search(agents.out, std::regex(lost + " +\\|[^\\n]*\\| Up ")))
      << agents.out;
}

TEST(SimulateRestartTest, MachinesPerProcessIsRefusedOutsideOneToSixteenOrWithoutSimulate) {
  for (const char* bad : {"0", "17", "-1", "many"}) {
    CommandResult r = RunCommand({VIPU_SERVER_BIN, "--simulate", "pod4", "--db",
                                  "/nonexistent/x.db", "--simulate-machines-per-process", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_THAT(r.err, HasSubstr("--simulate-machines-per-process")) << bad;
  }
  CommandResult r = RunCommand(
      {VIPU_SERVER_BIN, "--db", "/nonexistent/x.db", "--simulate-machines-per-process", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--simulate-machines-per-process: only with --simulate"));
}

TEST(SimulateRestartTest, RememberedPortTakenByAnotherProcessStopsTheStartNamingAgentAndPort) {
  auto server = ServerProcess::Start("pod4");
  CommandResult created = server->Vipu({"create", "partition", "p4", "--size", "4"});
  ASSERT_EQ(created.exit_code, 0) << created.err << created.out;
  auto client = popdist::ipuof::IpuofClient::FromConfigFile(ConfigPath(*server, "p4"));
  ASSERT_TRUE(client.ok()) << client.status();
  const uint32_t port = client->devices().front().port;
  server->Stop();

  std::string failure;
  {
    PortHolder holder(port);
    ASSERT_TRUE(holder.held()) << "port " << port << " did not come free when the server stopped";
    try {
      server->Restart();
    } catch (const std::runtime_error& e) {
      failure = e.what();
    }
  }
  EXPECT_THAT(failure, HasSubstr(absl::StrCat("agent ag1 served on 127.0.0.1:", port)));
  // The holder is named where the system can say: this test process.
  EXPECT_THAT(failure,
              HasSubstr(absl::StrCat("another process holds that port (pid ", getpid(), " (")));

  // Once the port is free again the pod comes back where it was.
  server->Restart();
  CommandResult r = RunCommand({POPDIST_SAMPLE_TRAIN_BIN, "--training-steps", "1"},
                               {{"IPUOF_CONFIG_PATH", ConfigPath(*server, "p4")}});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
}

#endif  // POPDIST_SAMPLE_TRAIN_BIN

}  // namespace
}  // namespace vipu::testing
