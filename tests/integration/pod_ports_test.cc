// Every port of a simulated pod is its own: each machine's server port and
// the RDMA port its IPUoF configs name are distinct from every other port of
// the pod and from the server's, and the agent process that serves the
// machine listens on both.
#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"
#include "tests/integration/machine_ports.h"

namespace vipu::testing {
namespace {

TEST(PodPortsTest, EveryPortOfAPod256IsItsOwnAndHeldByTheAgentServingIt) {
  auto server = ServerProcess::Start("pod256");
  CommandResult r = server->Vipu({"create", "partition", "all", "--size", "256"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::vector<DevicePorts> devices = IpuofDevicePorts(server->address(), "all");
  ASSERT_EQ(devices.size(), 256u);

  // By machine (its server port): the RDMA port all of its devices name.
  std::map<uint32_t, uint32_t> rdma_of;
  for (const DevicePorts& d : devices) {
    EXPECT_EQ(d.ip, "127.0.0.1");
    ASSERT_NE(d.server_port, 0u);
    ASSERT_NE(d.rdma_port, 0u);
    auto [it, inserted] = rdma_of.emplace(d.server_port, d.rdma_port);
    EXPECT_EQ(it->second, d.rdma_port) << "machine on port " << d.server_port;
  }
  ASSERT_EQ(rdma_of.size(), 64u);  // one server port per machine
  std::set<uint32_t> every = {static_cast<uint32_t>(server->port())};
  for (const auto& [server_port, rdma_port] : rdma_of) {
    EXPECT_TRUE(every.insert(server_port).second) << "port " << server_port << " twice";
    EXPECT_TRUE(every.insert(rdma_port).second) << "port " << rdma_port << " twice";
  }
  EXPECT_EQ(every.size(), 1u + 2 * 64);

  // Both ports of a machine are listened on by one of the server's agent
  // processes, the same one.
  const std::vector<pid_t> agents = server->Children();
  ASSERT_EQ(agents.size(), 4u);  // one per ILD
  const std::map<uint32_t, pid_t> owners = ListeningPortOwners(agents);
  for (const auto& [server_port, rdma_port] : rdma_of) {
    auto serves = owners.find(server_port);
    auto holds = owners.find(rdma_port);
    ASSERT_NE(serves, owners.end()) << "no agent listens on " << server_port;
    ASSERT_NE(holds, owners.end()) << "no agent listens on RDMA port " << rdma_port;
    EXPECT_EQ(holds->second, serves->second) << "machine on port " << server_port;
  }
}

// A restart gives every machine its RDMA port again, so IPUoF configs
// written before it stay whole.
TEST(PodPortsTest, RdmaPortsStayAcrossARestart) {
  auto server = ServerProcess::Start("pod16");
  CommandResult r = server->Vipu({"create", "partition", "p", "--size", "16"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::vector<DevicePorts> before = IpuofDevicePorts(server->address(), "p");
  ASSERT_EQ(before.size(), 16u);
  server->Restart();
  std::vector<DevicePorts> after;
  // The agents re-register after the restart; until then their RDMA ports
  // are not known.
  ASSERT_TRUE(WaitFor(
      [&] {
        after = IpuofDevicePorts(server->address(), "p");
        return after.size() == before.size() && after.front().rdma_port != 0;
      },
      absl::Seconds(30)));
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].server_port, before[i].server_port) << "device " << i;
    EXPECT_EQ(after[i].rdma_port, before[i].rdma_port) << "device " << i;
  }
}

}  // namespace
}  // namespace vipu::testing
