// Many machines on one port with real processes: one vipu-agent
// serving 64 machines on a shared port registers them in batches with a
// running vipu-server, they form a 4-ILD cluster, and a 2-ILD partition
// configured through that one port becomes ACTIVE (each machine naming an
// RDMA port of its own that the agent holds) and is removed.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "tests/integration/machine_ports.h"

extern char** environ;

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kMachines = 64;

// One vipu-agent process for `count` machines s0..s<count-1> on a shared port.
class SharedPortAgents {
 public:
  SharedPortAgents(const ServerProcess& server, int count) : log_(server.dir() + "/agents.log") {
    std::vector<std::string> args = {
        VIPU_AGENT_BIN, "--server", server.address(), "--machines", std::to_string(count),
        "--id-prefix",  "s",        "--log-level",    "info",       "--exit-with-parent"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int log = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, log, 1);
    posix_spawn_file_actions_adddup2(&actions, log, 2);
    if (posix_spawn(&pid_, VIPU_AGENT_BIN, &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    close(log);
    posix_spawn_file_actions_destroy(&actions);
  }
  ~SharedPortAgents() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  std::string log() const { return ReadFile(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

// Agents `vipu-admin list agents` shows as Up among s0..s<kMachines-1>.
int SharedMachinesUp(const ServerProcess& s) {
  CommandResult r = s.VipuAdmin({"list", "agents"});
  if (r.exit_code != 0) return -1;
  // " s12      | 127.0.0.1 | 44831 | Up     | ..."
  std::regex row("\\n s[0-9]+ +\\|[^|\\n]*\\|[^|\\n]*\\| Up ");
  return static_cast<int>(
      std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), row), std::sregex_iterator()));
}

TEST(SharedPortAgentsTest, SixtyFourMachinesOnOnePortRegisterAndServeAPartition) {
  auto server = ServerProcess::Start("pod16");
  SharedPortAgents agents(*server, kMachines);
  ASSERT_GT(agents.pid(), 0);
  ASSERT_TRUE(WaitFor([&] { return SharedMachinesUp(*server) == kMachines; }, absl::Seconds(30)))
      << SharedMachinesUp(*server) << " up; agent log:\n"
      << agents.log();
  // One port for all of them, and registration in batches, not one call each.
  EXPECT_THAT(agents.log(), HasSubstr("64 machines (s0 .. s63, m2000) listening on 127.0.0.1:"));
  EXPECT_THAT(agents.log(), HasSubstr("registered 64 machines (first s0)"));

  std::vector<std::string> ids;
  for (int i = 0; i < kMachines; ++i) ids.push_back(absl::StrCat("s", i));
  CommandResult r = server->VipuAdmin({"create", "cluster", "shared", "--agents",
                                       absl::StrJoin(ids, ","), "--num-ipulinkdomains", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = server->VipuAdmin({"create", "allocation", "shared-all", "--cluster", "shared"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  r = server->Vipu({"create", "partition", "wide", "--size", "128", "--allocation", "shared-all"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(WaitFor([&] { return PartitionStatusField(*server, "wide", "State") == "ACTIVE"; },
                      absl::Seconds(30)))
      << server->Vipu({"get", "partition-status", "wide"}).out;
  // One server port for all, but each machine its own RDMA port, held by
  // the agent process.
  const std::vector<DevicePorts> devices = IpuofDevicePorts(server->address(), "wide");
  ASSERT_EQ(devices.size(), 128u);
  const std::map<uint32_t, pid_t> owners = ListeningPortOwners({agents.pid()});
  std::set<uint32_t> rdma_ports;
  for (const DevicePorts& d : devices) {
    EXPECT_EQ(d.server_port, devices.front().server_port);
    EXPECT_NE(d.rdma_port, d.server_port);
    EXPECT_NE(d.rdma_port, static_cast<uint32_t>(server->port()));
    rdma_ports.insert(d.rdma_port);
    auto holder = owners.find(d.rdma_port);
    EXPECT_TRUE(holder != owners.end() && holder->second == agents.pid())
        << "RDMA port " << d.rdma_port << " is not the agent's";
  }
  EXPECT_EQ(rdma_ports.size(), 128u / 4);  // one per machine of the partition
  r = server->Vipu({"remove", "partition", "wide"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;

  // The machines go down with their process.
  kill(agents.pid(), SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return SharedMachinesUp(*server) == 0; }, absl::Seconds(30)));
}

}  // namespace
}  // namespace vipu::testing
