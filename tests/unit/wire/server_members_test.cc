// The member-list parser: every accepted form, and each refused entry named with its rule.
#include "wire/server_members.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::wire {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> Targets(const std::string& list, std::optional<uint32_t> port = 8090) {
  absl::StatusOr<std::vector<ServerMember>> members = ParseServerMembers(list, port);
  EXPECT_TRUE(members.ok()) << list << ": " << members.status();
  std::vector<std::string> out;
  if (members.ok()) {
    for (const ServerMember& m : *members) out.push_back(m.Target());
  }
  return out;
}

TEST(ParseServerMembersTest, AcceptsEveryForm) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Targets("localhost"), V{"localhost:8090"});
  EXPECT_EQ(Targets("h:1"), V{"h:1"});
  EXPECT_EQ(Targets("vipu-1.example.com:65535"), V{"vipu-1.example.com:65535"});
  EXPECT_EQ(Targets("10.0.0.1"), V{"10.0.0.1:8090"});
  EXPECT_EQ(Targets("my_host"), V{"my_host:8090"});
  EXPECT_EQ(Targets("[::1]:9000"), V{"[::1]:9000"});
  EXPECT_EQ(Targets("[::1]"), V{"[::1]:8090"});
  EXPECT_EQ(Targets("[fe80::1%eth0]:1"), V{"[fe80::1%eth0]:1"});
  // A bare IPv6 literal cannot carry a port: all of it is the address.
  EXPECT_EQ(Targets("::1"), V{"[::1]:8090"});
  EXPECT_EQ(Targets("a,b:9000,[::1],[2001:db8::2]:7"),
            (V{"a:8090", "b:9000", "[::1]:8090", "[2001:db8::2]:7"}));
  // The same host on two ports is two members.
  EXPECT_EQ(Targets("h:1,h:2"), (V{"h:1", "h:2"}));
}

TEST(ParseServerMembersTest, KeepsWhetherThePortWasGiven) {
  auto members = ParseServerMembers("a,b:9000,[::1]", 8090);
  ASSERT_TRUE(members.ok());
  EXPECT_FALSE((*members)[0].port_given);
  EXPECT_TRUE((*members)[1].port_given);
  EXPECT_EQ((*members)[0].Entry(), "a");
  EXPECT_EQ((*members)[1].Entry(), "b:9000");
  EXPECT_EQ((*members)[2].Entry(), "[::1]");
  EXPECT_EQ((*members)[2].host, "::1");
  EXPECT_EQ(JoinTargets(*members), "a:8090,b:9000,[::1]:8090");
}

TEST(ParseServerMembersTest, WithoutADefaultPortEveryEntryNeedsOne) {
  EXPECT_EQ(Targets("a:1,[::1]:2", std::nullopt), (std::vector<std::string>{"a:1", "[::1]:2"}));
  for (const char* list : {"a", "a:1,b", "[::1]", "::1"}) {
    auto members = ParseServerMembers(list, std::nullopt);
    EXPECT_EQ(members.status().code(), absl::StatusCode::kInvalidArgument) << list;
    EXPECT_THAT(std::string(members.status().message()), HasSubstr("needs a port (HOST:PORT)"))
        << list;
  }
}

TEST(ParseServerMembersTest, RefusesEachBadEntryNamingIt) {
  struct Case {
    const char* list;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"", "must name at least one member"},
           {",", "entry 1 of ',' is empty"},
           {"a,,b", "entry 2 of 'a,,b' is empty"},
           {"a,", "entry 2 of 'a,' is empty"},
           {",a", "entry 1 of ',a' is empty"},
           {"a, b", "entry ' b': must not contain spaces"},
           {"a b", "entry 'a b': must not contain spaces"},
           {"a\t", "entry 'a\t': must not contain spaces"},
           {"h:", "entry 'h:': port must be an integer in 1..65535, got nothing"},
           {"h:0", "entry 'h:0': port must be an integer in 1..65535, got '0'"},
           {"h:65536", "entry 'h:65536': port must be an integer in 1..65535"},
           {"h:x", "entry 'h:x': port must be an integer in 1..65535, got 'x'"},
           {"h:+1", "entry 'h:+1': port must be an integer"},
           {"h:123456", "entry 'h:123456': port must be an integer"},
           {"ok:1,h:-1", "entry 'h:-1': port must be an integer"},
           {":8090", "entry ':8090': needs a host before ':'"},
           {"[::1:8090", "entry '[::1:8090': unbalanced '['"},
           {"[::1", "entry '[::1': unbalanced '['"},
           {"::1]:8090", "entry '::1]:8090': unbalanced ']'"},
           {"h]", "entry 'h]': unbalanced ']'"},
           {"[[::1]]:1", "entry '[[::1]]:1': unbalanced '['"},
           {"a[::1]", "entry 'a[::1]': '[' must open the entry"},
           {"[]:1", "entry '[]:1': '' in brackets is not an IPv6 address"},
           {"[host]:1", "entry '[host]:1': 'host' in brackets is not an IPv6 address"},
           {"[10.0.0.1]:1", "'10.0.0.1' in brackets is not an IPv6 address"},
           {"[::1]8090", "entry '[::1]8090': unexpected '8090' after ']'"},
           {"[::1]:", "entry '[::1]:': port must be an integer in 1..65535, got nothing"},
           {"a:b:c", "entry 'a:b:c': more than one ':'"},
           {"host:1:2", "more than one ':'; write an IPv6 address as [V6] or [V6]:PORT"},
           {"http://h", "entry 'http://h': port must be an integer"},
           {"h/x", "entry 'h/x': '/' is not allowed in a host name"},
           {"a;b", "entry 'a;b': ';' is not allowed in a host name"},
           {"a:1,a:1", "entry 'a:1' is listed twice (a:1)"},
           {"a,a:8090", "entry 'a:8090' is listed twice (a:8090)"},
       }) {
    auto members = ParseServerMembers(c.list, 8090);
    EXPECT_EQ(members.status().code(), absl::StatusCode::kInvalidArgument) << c.list;
    EXPECT_THAT(std::string(members.status().message()), HasSubstr(c.message)) << c.list;
  }
}

TEST(ParseServerMemberTest, OneMemberWithItsPortOrARefusal) {
  absl::StatusOr<ServerMember> one = ParseServerMember("[::1]:8091");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->Target(), "[::1]:8091");
  for (const auto& [text, message] : std::vector<std::pair<std::string, std::string>>{
           {"h", "entry 'h': needs a port (HOST:PORT)"},
           {"h:0", "entry 'h:0': port must be an integer in 1..65535"},
           {"a:1,b:2", "name one member, HOST:PORT, got 'a:1,b:2'"},
       }) {
    absl::StatusOr<ServerMember> m = ParseServerMember(text);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(message)) << text;
  }
}

}  // namespace
}  // namespace vipu::wire
