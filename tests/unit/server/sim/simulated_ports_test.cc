// The simulated machines' ports: remembered ones kept, new ones left to
// their agents, and a remembered port held by another process refused
// naming the agent, the port and the holder.
#include "server/sim/simulated_ports.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/unit/support/loopback_listener.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

using test::Listener;

// The ids of a pod of `machines`: ag1 .. agN.
std::vector<std::string> PodIds(int machines) {
  std::vector<std::string> ids;
  for (int m = 1; m <= machines; ++m) ids.push_back(absl::StrCat("ag", m));
  return ids;
}

TEST(SimulatedPortsTest, NewMachinesLeaveTheirPortsToTheirAgents) {
  // No probe here picks a port that another server could pick too: the
  // agent binds one (--stable-ports) and reports it.
  std::map<std::string, MachinePorts> plan = AssignPorts(PodIds(64), {});
  ASSERT_EQ(plan.size(), 64u);
  for (const auto& [id, p] : plan) EXPECT_EQ(p, (MachinePorts{0, 0})) << id;
}

TEST(SimulatedPortsTest, RememberedServerPortsGetTheirRdmaPortsBackUnlessAnotherPortIsThere) {
  const std::vector<std::string> ids = PodIds(4);
  const auto all_free = [](uint32_t) { return true; };
  // ag1 and ag2 on neighbouring ports, as servers gave them out before RDMA
  // ports had their own; ag3 on the top port; ag4 new.
  const std::map<std::string, uint32_t> remembered = {
      {"ag1", 61000}, {"ag2", 61001}, {"ag3", 65535}, {"ag4", 0}};
  std::map<std::string, MachinePorts> plan = AssignPorts(ids, remembered, all_free);
  EXPECT_EQ(plan["ag1"], (MachinePorts{61000, 0}));  // 61001 is ag2's server port
  EXPECT_EQ(plan["ag2"], (MachinePorts{61001, 61002}));
  EXPECT_EQ(plan["ag3"], (MachinePorts{65535, 0}));  // no port above
  EXPECT_EQ(plan["ag4"], (MachinePorts{0, 0}));
  // A taken neighbour is not used either: the agent takes another.
  plan = AssignPorts({"ag1"}, {{"ag1", 61000}}, [](uint32_t port) { return port != 61001; });
  EXPECT_EQ(plan["ag1"], (MachinePorts{61000, 0}));
}

TEST(SimulatedPortsTest, RememberedPortHeldByAnotherProcessIsRefusedNamingAgentAndPort) {
  Listener listener;
  ASSERT_NE(listener.port(), 0u);
  absl::Status s =
      AwaitRememberedPorts({"ag1", "ag2"}, {{"ag2", listener.port()}}, absl::Milliseconds(50));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("agent ag2 served on 127.0.0.1:", listener.port())));
  // The holder is named: this very process.
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("another process holds that port (pid ", getpid(), " (")));
}

TEST(SimulatedPortsTest, FreeOrUnrememberedPortsNeedNoWait) {
  uint32_t released = 0;
  {
    Listener listener;
    released = listener.port();
  }
  EXPECT_TRUE(
      AwaitRememberedPorts({"ag1", "ag2"}, {{"ag1", released}, {"ag2", 0}}, absl::Milliseconds(50))
          .ok());
}

}  // namespace
}  // namespace vipu::server
