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
#include "server/simulated_ports.h"

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
  std::map<std::string, uint32_t> ports = AssignPorts(ids, remembered);
  ASSERT_EQ(ports.size(), 4u);
  EXPECT_EQ(ports["ag2"], 12345u);
  const auto [first, last] = StablePortRange();
  if (first > last) GTEST_SKIP() << "the ephemeral range reaches 65535 here";
  std::set<uint32_t> distinct;
  for (const char* id : {"ag1", "ag3", "ag4"}) {
    EXPECT_GE(ports[id], first) << id;
    EXPECT_LE(ports[id], last) << id;
    EXPECT_TRUE(LoopbackPortFree(ports[id])) << id;
    distinct.insert(ports[id]);
  }
  EXPECT_EQ(distinct.size(), 3u);
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
