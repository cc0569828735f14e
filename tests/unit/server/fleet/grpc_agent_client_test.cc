// GrpcAgentClient's channels: one per agent address, shared by the machines a
// shared-port vipu-agent serves there, released when no agent uses it; and
// what its destruction does to the calls still in flight.
#include "server/fleet/grpc_agent_client.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/agent_registry.h"

namespace vipu::server {
namespace {

TEST(AgentChannelsTest, AgentsAtOneAddressShareOneChannel) {
  GrpcAgentClient client(absl::Seconds(1), /*credentials=*/nullptr);
  auto m0 = client.ChannelAtForTesting({"m0", "127.0.0.1", 7000});
  auto m1 = client.ChannelAtForTesting({"m1", "127.0.0.1", 7000});
  auto other = client.ChannelAtForTesting({"m2", "127.0.0.1", 7001});
  ASSERT_NE(m0, nullptr);
  EXPECT_EQ(m0, m1);
  EXPECT_NE(m0, other);
  EXPECT_EQ(client.ChannelAtForTesting({"m0", "127.0.0.1", 7000}), m0);
}

TEST(AgentChannelsTest, AddressOfLooksTheAgentUpInTheRegistry) {
  AgentRegistry registry(absl::Seconds(1));
  GrpcAgentClient client(absl::Seconds(1), /*credentials=*/nullptr);
  EXPECT_FALSE(AgentAddressOf(registry, "m0").has_value());
  LiveAgent a;
  a.id = "m0";
  a.host = "127.0.0.1";
  a.port = 7000;
  registry.Register(a, absl::Now());
  std::optional<AgentAddress> address = AgentAddressOf(registry, "m0");
  ASSERT_TRUE(address.has_value());
  EXPECT_EQ(address->agent_id, "m0");
  EXPECT_EQ(address->host, "127.0.0.1");
  EXPECT_EQ(address->port, 7000u);
  EXPECT_EQ(client.ChannelAtForTesting(*address),
            client.ChannelAtForTesting({"m5", "127.0.0.1", 7000}));
}

TEST(AgentChannelsTest, ACallUsesTheChannelOfItsAddress) {
  GrpcAgentClient client(absl::Milliseconds(100), /*credentials=*/nullptr);
  auto shared = client.ChannelAtForTesting({"m0", "127.0.0.1", 1});
  // Nobody listens on port 1: the call fails, but it went over (and
  // counted as a user of) the channel of its address.
  absl::Status s = client.ReleaseSync({"m1", "127.0.0.1", 1}, {"p", 1});
  EXPECT_FALSE(s.ok());
  client.ChannelAtForTesting({"m0", "127.0.0.1", 2});  // m0 moves; m1 still uses port 1
  EXPECT_EQ(client.ChannelAtForTesting({"m1", "127.0.0.1", 1}), shared);
}

TEST(AgentChannelsTest, AnAddressNoAgentUsesAnyMoreLosesItsChannel) {
  GrpcAgentClient client(absl::Seconds(1), /*credentials=*/nullptr);
  auto shared = client.ChannelAtForTesting({"m0", "127.0.0.1", 7000});
  client.ChannelAtForTesting({"m1", "127.0.0.1", 7000});
  // m0 moves: m1 still uses the old address, so its channel stays.
  auto moved = client.ChannelAtForTesting({"m0", "127.0.0.1", 7001});
  EXPECT_NE(moved, shared);
  EXPECT_EQ(client.ChannelAtForTesting({"m1", "127.0.0.1", 7000}), shared);
  // m1 moves too: nobody is left at 7000, and a later agent there gets a
  // fresh channel (the old one lives on only in this test's hands).
  EXPECT_EQ(client.ChannelAtForTesting({"m1", "127.0.0.1", 7001}), moved);
  EXPECT_NE(client.ChannelAtForTesting({"m2", "127.0.0.1", 7000}), shared);
}

// A loopback port that accepts connections (the kernel completes them from
// the listen backlog) and never answers: a call to it stays in flight until
// its deadline.
class SilentPort {
 public:
  SilentPort() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(fd_, 16) != 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "no loopback listener";
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~SilentPort() {
    if (fd_ >= 0) close(fd_);
  }
  SilentPort(const SilentPort&) = delete;
  SilentPort& operator=(const SilentPort&) = delete;
  uint32_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint32_t port_ = 0;
};

TEST(AgentChannelsTest, DestroyingTheClientCancelsCallsInFlightAndWaitsForThem) {
  SilentPort silent;
  ASSERT_NE(silent.port(), 0u);
  std::vector<absl::Status> outcomes;  // written by the callbacks, read after the client is gone
  std::mutex mu;
  {
    // The deadline is far beyond any test timeout: only the cancel can end these calls.
    GrpcAgentClient client(absl::Hours(1), /*credentials=*/nullptr);
    for (int i = 0; i < 3; ++i) {
      client.Release({absl::StrCat("m", i), "127.0.0.1", silent.port()}, {"p", 1},
                     [&](absl::Status s) {
                       std::lock_guard<std::mutex> lock(mu);
                       outcomes.push_back(std::move(s));
                     });
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(outcomes.size(), 3u);
  for (const absl::Status& s : outcomes) EXPECT_TRUE(absl::IsCancelled(s)) << s;
}

}  // namespace
}  // namespace vipu::server
