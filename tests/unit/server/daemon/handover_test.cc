// Handover: the record a stopping leader leaves its successor, and what the
// successor's registry makes of it.
#include "server/daemon/handover.h"

#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/fleet/agent_registry.h"

namespace vipu::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

LiveAgent Machine(const std::string& id, uint32_t port) {
  LiveAgent a;
  a.id = id;
  a.host = "127.0.0.1";
  a.port = port;
  a.ipuof_port = port + 1;
  a.rdma_port = port + 2;
  a.machine_type = fabric::MachineType::kBow;
  return a;
}

TEST(HandoverTest, WhatIsEncodedIsDecoded) {
  Handover h{absl::FromUnixMillis(1795000000123), {Machine("ag1", 7000), Machine("ag2", 7010)}, ""};
  absl::StatusOr<Handover> back = DecodeHandover(EncodeHandover(h));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->made, h.made);
  ASSERT_EQ(back->agents.size(), 2u);
  EXPECT_EQ(back->agents[1].id, "ag2");
  EXPECT_EQ(back->agents[1].host, "127.0.0.1");
  EXPECT_EQ(back->agents[1].port, 7010u);
  EXPECT_EQ(back->agents[1].ipuof_port, 7011u);
  EXPECT_EQ(back->agents[1].rdma_port, 7012u);
  EXPECT_EQ(back->agents[1].machine_type, fabric::MachineType::kBow);
  EXPECT_TRUE(back->successor.empty());
  EXPECT_TRUE(DecodeHandover(EncodeHandover({absl::FromUnixMillis(5), {}, ""})).ok());
}

TEST(HandoverTest, TheMemberTheLeadershipWasMovedToIsNamed) {
  Handover h{absl::FromUnixMillis(5), {Machine("ag1", 7000)}, "10.0.0.2:8090"};
  EXPECT_EQ(EncodeHandover(h).substr(0, EncodeHandover(h).find('\n')),
            "open-vipu-handover 1 5 10.0.0.2:8090");
  absl::StatusOr<Handover> back = DecodeHandover(EncodeHandover(h));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->successor, "10.0.0.2:8090");
  EXPECT_EQ(back->agents.size(), 1u);
}

TEST(HandoverTest, AnythingElseIsRefusedNamingTheLine) {
  struct Case {
    std::string text, message;
  };
  for (const Case& c : std::vector<Case>{
           {"", "line 1: empty"},
           {"open-vipu-handover 2 5\n", "line 1: expected 'open-vipu-handover 1"},
           {"open-vipu-handover 1 soon\n", "line 1:"},
           {"open-vipu-handover 1 5 a:1 b:2\n", "line 1: expected"},
           {"open-vipu-handover 1 5 \n", "line 1: expected"},
           {"open-vipu-handover 1 5\nag1 127.0.0.1 7000 7001 7002\n", "line 2: expected"},
           {"open-vipu-handover 1 5\nag 1 127.0.0.1 7000 7001 7002 m2000\n", "line 2: expected"},
           {"open-vipu-handover 1 5\nag1 127.0.0.1 70000 7001 7002 m2000\n", "line 2: a port"},
           {"open-vipu-handover 1 5\nag1 127.0.0.1 -1 7001 7002 m2000\n", "line 2: a port"},
           {"open-vipu-handover 1 5\nag1 127.0.0.1 7000 7001 7002 gpu\n", "line 2:"},
           {"open-vipu-handover 1 5\n-x 127.0.0.1 7000 7001 7002 m2000\n", "line 2: id"},
       }) {
    absl::StatusOr<Handover> h = DecodeHandover(c.text);
    ASSERT_FALSE(h.ok()) << c.text;
    EXPECT_TRUE(absl::IsInvalidArgument(h.status())) << h.status();
    EXPECT_THAT(std::string(h.status().message()), HasSubstr(c.message)) << c.text;
  }
}

TEST(HandoverTest, HandedOverAgentsAreUpAndAskedToRegisterUntilTheyDo) {
  AgentRegistry registry(absl::Seconds(1));
  LiveAgent known = Machine("ag2", 7100);
  registry.Register(known, absl::Now());
  registry.HandOver({Machine("ag1", 7000), Machine("ag2", 9999)}, absl::Now());
  EXPECT_TRUE(registry.IsUp("ag1", absl::Now()));
  // One registered on its own is left as it registered.
  EXPECT_EQ(registry.EndpointOf("ag2")->port, 7100u);
  EXPECT_EQ(registry.EndpointOf("ag1")->port, 7000u);
  // Its heartbeats count, and each says "register again" until it has.
  EXPECT_FALSE(registry.Heartbeat("ag1", absl::Now()));
  EXPECT_THAT(registry.HeartbeatMany({{"ag1", {}}, {"ag2", {}}}, absl::Now()), ElementsAre("ag1"));
  registry.Register(Machine("ag1", 7000), absl::Now());
  EXPECT_TRUE(registry.Heartbeat("ag1", absl::Now()));
  // A handover names only the agents Up at the time.
  std::vector<LiveAgent> up = registry.UpAgents(absl::Now() + absl::Seconds(10));
  EXPECT_TRUE(up.empty());
  EXPECT_EQ(registry.UpAgents(absl::Now()).size(), 2u);
}

}  // namespace
}  // namespace vipu::server
