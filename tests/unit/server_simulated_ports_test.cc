// The simulated machines' ports: remembered ones kept, new ones above the
// ephemeral range and free, and a remembered port held by another process
// refused naming the agent and the port.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/sim/simulated_ports.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

// A socket listening on a free 127.0.0.1 port for as long as it lives.
class Listener {
 public:
  Listener() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 && listen(fd_, 1) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~Listener() { close(fd_); }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  uint32_t port() const { return port_; }

 private:
  int fd_;
  uint32_t port_ = 0;
};

TEST(SimulatedPortsTest, StableRangeLiesAboveTheEphemeralRange) {
  const auto [first, last] = StablePortRange();
  EXPECT_EQ(last, 65535u);
  EXPECT_GT(first, 1024u);
}

TEST(SimulatedPortsTest, RememberedPortsAreKeptAndNewOnesAreFreeDistinctAndStable) {
  const std::vector<std::string> ids = {"ag1", "ag2", "ag3", "ag4"};
  const std::map<std::string, uint32_t> remembered = {{"ag2", 12345}, {"ag4", 0}};
  std::map<std::string, MachinePorts> ports = AssignPorts(ids, remembered);
  ASSERT_EQ(ports.size(), 4u);
  EXPECT_EQ(ports["ag2"].server, 12345u);
  const auto [first, last] = StablePortRange();
  if (first > last) GTEST_SKIP() << "the ephemeral range reaches 65535 here";
  std::set<uint32_t> distinct;
  for (const char* id : {"ag1", "ag3", "ag4"}) {
    for (uint32_t port : {ports[id].server, ports[id].rdma}) {
      EXPECT_GE(port, first) << id;
      EXPECT_LE(port, last) << id;
      EXPECT_TRUE(LoopbackPortFree(port)) << id;
      distinct.insert(port);
    }
  }
  EXPECT_EQ(distinct.size(), 6u);
}

// The ids of a pod of `machines`: ag1 .. agN.
std::vector<std::string> PodIds(int machines) {
  std::vector<std::string> ids;
  for (int m = 1; m <= machines; ++m) ids.push_back(absl::StrCat("ag", m));
  return ids;
}

// Every port of the plan, each at most once, none 0.
void ExpectAllDistinct(const std::map<std::string, MachinePorts>& plan) {
  std::set<uint32_t> seen;
  for (const auto& [id, p] : plan) {
    EXPECT_NE(p.server, 0u) << id;
    EXPECT_NE(p.rdma, 0u) << id;
    EXPECT_TRUE(seen.insert(p.server).second) << id << " server port " << p.server;
    EXPECT_TRUE(seen.insert(p.rdma).second) << id << " RDMA port " << p.rdma;
  }
}

TEST(SimulatedPortsTest, EveryPortOfAPod256IsItsOwn) {
  if (StablePortRange().first > StablePortRange().second) {
    GTEST_SKIP() << "the ephemeral range reaches 65535 here";
  }
  const std::vector<std::string> ids = PodIds(64);
  const auto all_free = [](uint32_t) { return true; };
  std::map<std::string, MachinePorts> plan = AssignPorts(ids, {}, all_free);
  ASSERT_EQ(plan.size(), 64u);
  ExpectAllDistinct(plan);
  // New machines get neighbouring ports, so a restart finds the RDMA port
  // next to the remembered server port.
  for (const auto& [id, p] : plan) EXPECT_EQ(p.rdma, p.server + 1) << id;
  // With real probes too.
  ExpectAllDistinct(AssignPorts(ids, {}));
}

TEST(SimulatedPortsTest, RememberedServerPortsGetTheirRdmaPortsBackUnlessAnotherPortIsThere) {
  if (StablePortRange().first > StablePortRange().second) {
    GTEST_SKIP() << "the ephemeral range reaches 65535 here";
  }
  const std::vector<std::string> ids = PodIds(4);
  const auto all_free = [](uint32_t) { return true; };
  // ag1 and ag2 on neighbouring ports, as servers gave them out before RDMA
  // ports had their own; ag3 on the top port; ag4 new.
  const std::map<std::string, uint32_t> remembered = {
      {"ag1", 61000}, {"ag2", 61001}, {"ag3", 65535}};
  std::map<std::string, MachinePorts> plan = AssignPorts(ids, remembered, all_free);
  EXPECT_EQ(plan["ag1"].server, 61000u);
  EXPECT_EQ(plan["ag2"].server, 61001u);
  EXPECT_EQ(plan["ag3"].server, 65535u);
  EXPECT_NE(plan["ag1"].rdma, 61001u);  // ag2's server port
  EXPECT_EQ(plan["ag2"].rdma, 61002u);
  ExpectAllDistinct(plan);
  // A taken neighbour is not used either.
  plan = AssignPorts({"ag1"}, {{"ag1", 61000}}, [](uint32_t port) { return port != 61001; });
  EXPECT_EQ(plan["ag1"].server, 61000u);
  EXPECT_NE(plan["ag1"].rdma, 61001u);
  EXPECT_NE(plan["ag1"].rdma, 0u);
  // Restarted from its own plan, a pod gets the same ports again.
  const std::map<std::string, MachinePorts> first = AssignPorts(ids, {}, all_free);
  std::map<std::string, uint32_t> servers;
  for (const auto& [id, p] : first) servers[id] = p.server;
  EXPECT_EQ(AssignPorts(ids, servers, all_free), first);
}

TEST(SimulatedPortsTest, ListeningPortIsNotFree) {
  Listener listener;
  ASSERT_NE(listener.port(), 0u);
  EXPECT_FALSE(LoopbackPortFree(listener.port()));
}

TEST(SimulatedPortsTest, RememberedPortHeldByAnotherProcessIsRefusedNamingAgentAndPort) {
  Listener listener;
  ASSERT_NE(listener.port(), 0u);
  absl::Status s =
      AwaitRememberedPorts({"ag1", "ag2"}, {{"ag2", listener.port()}}, absl::Milliseconds(50));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr(absl::StrCat("agent ag2 served on 127.0.0.1:", listener.port())));
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
