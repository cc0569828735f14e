// poprun's launch hosts: the V-IPU server address per host and the synchronisation options.
#include "poprun/poprun_hosts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

namespace vipu::poprun {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Hosts named "local*" are this machine; "far*" are reached from 10.0.0.5,
// where the server answers only when `answers` says so.
HostProbe FakeProbe(bool answers, std::vector<std::string>* routed = nullptr) {
  HostProbe p;
  p.is_local = [](const std::string& h) { return h.rfind("local", 0) == 0; };
  p.route_source = [routed](const std::string& h) -> absl::StatusOr<std::string> {
    if (routed != nullptr) routed->push_back(h);
    if (h == "far-unroutable") return absl::UnavailableError("no route to host far-unroutable");
    return std::string("10.0.0.5");
  };
  p.server_answers = [answers](const std::string&, uint32_t) { return answers; };
  return p;
}

TEST(PoprunHosts, LoopbackNames) {
  EXPECT_TRUE(IsLoopbackHost("localhost"));
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.0.0.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_FALSE(IsLoopbackHost("10.1.2.3"));
  EXPECT_FALSE(IsLoopbackHost("198.51.100.1"));
}

TEST(PoprunHosts, ServerNotOnLoopbackIsGivenAsIs) {
  std::vector<std::string> routed;
  auto a = ServerAddressPerHost({"far1", "local2"}, "10.9.9.9", 8090, FakeProbe(false, &routed));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(*a, ElementsAre("10.9.9.9", "10.9.9.9"));
  EXPECT_TRUE(routed.empty());
}

TEST(PoprunHosts, LoopbackServerAndLocalHostsKeepLoopback) {
  auto a = ServerAddressPerHost({"local1", "local2"}, "127.0.0.1", 8090, FakeProbe(false));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(*a, ElementsAre("127.0.0.1", "127.0.0.1"));
  auto none = ServerAddressPerHost({}, "localhost", 8090, FakeProbe(false));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(PoprunHosts, RemoteHostsGetTheRouteAddressWhereTheServerAnswers) {
  auto a = ServerAddressPerHost({"local1", "far2"}, "localhost", 8090, FakeProbe(true));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(*a, ElementsAre("localhost", "10.0.0.5"));
}

TEST(PoprunHosts, RemoteHostsAreRefusedWhenTheServerIsOnlyOnLoopback) {
  auto a = ServerAddressPerHost({"local1", "far2"}, "localhost", 8090, FakeProbe(false));
  ASSERT_FALSE(a.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(a.status()));
  EXPECT_EQ(a.status().message(),
            "--host far2: the V-IPU server is at localhost:8090, a loopback address that host "
            "cannot reach, and does not answer on 10.0.0.5:8090, this machine's address towards "
            "it; make vipu-server listen on an address the host can reach and pass it with "
            "--vipu-server-host");
  a = ServerAddressPerHost({"far-unroutable"}, "127.0.0.1", 8090, FakeProbe(true));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()),
              HasSubstr("and no route to host far-unroutable; pass --vipu-server-host"));
}

TEST(PoprunHosts, EveryMemberIsMappedAndWrittenAsGiven) {
  auto members = wire::ParseServerMembers("localhost,10.9.9.9:9000,127.0.0.1:9001", 8090);
  ASSERT_TRUE(members.ok());
  auto a = MembersPerHost({"local1", "far2"}, *members, FakeProbe(true));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(*a, ElementsAre("localhost,10.9.9.9:9000,127.0.0.1:9001",
                              "10.0.0.5,10.9.9.9:9000,10.0.0.5:9001"));
  // One member without a port: the host alone, as for a single server.
  auto one = wire::ParseServerMembers("localhost", 8090);
  ASSERT_TRUE(one.ok());
  a = MembersPerHost({"far2"}, *one, FakeProbe(true));
  ASSERT_TRUE(a.ok());
  EXPECT_THAT(*a, ElementsAre("10.0.0.5"));
  // A loopback member the far host cannot reach refuses the launch.
  a = MembersPerHost({"far2"}, *members, FakeProbe(false));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()),
              HasSubstr("--host far2: the V-IPU server is at localhost:8090"));
}

TEST(PoprunHosts, SynchronisationOnlyForThisMachine) {
  PoprunOptions o;
  o.hosts = {"local1", "far2"};
  EXPECT_TRUE(CheckSynchronisation(o, FakeProbe(true)).ok());  // nothing asked
  o.synchronise_poplar_sdk = true;
  absl::Status s = CheckSynchronisation(o, FakeProbe(true));
  EXPECT_TRUE(absl::IsFailedPrecondition(s));
  EXPECT_EQ(s.message(),
            "--synchronise-poplar-sdk: host far2 is another machine and poprun copies nothing "
            "between machines; put the files at the same path on every host (a shared file "
            "system) and set --synchronise-poplar-sdk=no");
  o.hosts = {"local1", "local2"};
  EXPECT_TRUE(CheckSynchronisation(o, FakeProbe(true)).ok());
  o.hosts = {"far1"};
  o.synchronise_poplar_sdk = false;
  o.distribute_ssh_key = true;
  EXPECT_THAT(std::string(CheckSynchronisation(o, FakeProbe(true)).message()),
              HasSubstr("--distribute-ssh-key: host far1"));
  o.distribute_ssh_key = false;
  o.synchronise_python_venv = true;
  EXPECT_THAT(std::string(CheckSynchronisation(o, FakeProbe(true)).message()),
              HasSubstr("--synchronise-python-venv: host far1"));
}

TEST(PoprunHosts, SystemProbeKnowsThisMachine) {
  HostProbe p = SystemHostProbe();
  EXPECT_TRUE(p.is_local("127.0.0.1"));
  EXPECT_TRUE(p.is_local("127.0.0.2"));
  EXPECT_TRUE(p.is_local("localhost"));
  EXPECT_FALSE(p.is_local("198.51.100.1"));
  auto route = p.route_source("127.0.0.2");
  ASSERT_TRUE(route.ok()) << route.status();
  EXPECT_TRUE(IsLoopbackHost(*route)) << *route;
}

}  // namespace
}  // namespace vipu::poprun
