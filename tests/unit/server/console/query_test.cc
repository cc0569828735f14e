// The console's query and form parsing: what it accepts, and that every
// invalid value is refused naming the parameter.
#include "server/console/query.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

TEST(ConsoleQueryTest, ParsesPairsAndDecodes) {
  auto p = ParseParams("id=p%2d1&minutes=5&key=a+b%20c", {"id", "minutes", "key"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->at("id"), "p-1");
  EXPECT_EQ(p->at("minutes"), "5");
  EXPECT_EQ(p->at("key"), "a b c");
  auto empty = ParseParams("", {});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  auto blank = ParseParams("id=", {"id"});
  ASSERT_TRUE(blank.ok());
  EXPECT_EQ(blank->at("id"), "");
}

TEST(ConsoleQueryTest, RefusesEveryMalformedQuery) {
  struct Case {
    std::string query;
    std::string message;
  };
  const Case cases[] = {
      {"x=1", "unknown parameter 'x'; expected id, minutes"},
      {"id=1&id=2", "id: given more than once"},
      {"id", "expected name=value"},
      {"id=1&", "expected name=value"},
      {"&id=1", "expected name=value"},
      {"id=%4", "id: bad %-escape"},
      {"id=%zz", "id: bad %-escape"},
      {"id=%", "id: bad %-escape"},
      {"id=a%0ab", "id: control character"},
      {"id=a%7fb", "id: control character"},
      {"id=" + std::string(kMaxValueBytes + 1, 'a'), "id: longer than 1024 bytes"},
      {std::string(kMaxQueryBytes + 1, 'a'), "query: longer than 4096 bytes"},
  };
  for (const Case& c : cases) {
    auto p = ParseParams(c.query, {"id", "minutes"});
    ASSERT_FALSE(p.ok()) << c.query.substr(0, 40);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(c.message)) << c.query.substr(0, 40);
  }
  auto none = ParseParams("a=1", {});
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(std::string(none.status().message()), HasSubstr("expected none"));
}

TEST(ConsoleQueryTest, QueryOfTarget) {
  EXPECT_EQ(QueryOf("/api/state"), "");
  EXPECT_EQ(QueryOf("/api/history?minutes=5"), "minutes=5");
  EXPECT_EQ(QueryOf("/?"), "");
}

TEST(ConsoleQueryTest, IntParamBounds) {
  Params p{{"minutes", "5"}};
  EXPECT_EQ(*IntParam(p, "minutes", 1, 60, 60), 5);
  EXPECT_EQ(*IntParam({}, "minutes", 1, 60, 60), 60);
  for (const char* bad : {"0", "61", "-1", "abc", "", "5x", "1e1", "99999999999999999999"}) {
    auto v = IntParam({{"minutes", bad}}, "minutes", 1, 60, 60);
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_THAT(std::string(v.status().message()),
                HasSubstr("minutes: expected an integer in 1..60"));
  }
}

TEST(ConsoleQueryTest, PartitionIdParam) {
  EXPECT_EQ(*PartitionIdParam({{"id", "p1"}}, "id"), "p1");
  EXPECT_THAT(std::string(PartitionIdParam({}, "id").status().message()),
              HasSubstr("id: required"));
  for (const char* bad : {"", "-x", "a b", "a/b", "p\xc3\xa9"}) {
    auto v = PartitionIdParam({{"id", bad}}, "id");
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(PartitionIdParam({{"id", std::string(65, 'a')}}, "id").ok());
}

TEST(ConsoleQueryTest, ActionParam) {
  EXPECT_EQ(*ActionParam({{"action", "remove"}}, "action"), PartitionAction::kRemove);
  EXPECT_EQ(*ActionParam({{"action", "reset"}}, "action"), PartitionAction::kReset);
  for (const char* bad : {"", "Remove", "delete", "reset "}) {
    auto v = ActionParam({{"action", bad}}, "action");
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_THAT(std::string(v.status().message()), HasSubstr("expected remove or reset"));
  }
  EXPECT_THAT(std::string(ActionParam({}, "action").status().message()),
              HasSubstr("action: required"));
}

TEST(ConsoleQueryTest, LoginParams) {
  auto l = LoginParams({{"user", "alice"}, {"key", "k e y"}});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->user_id, "alice");
  EXPECT_EQ(l->access_key, "k e y");
  EXPECT_THAT(std::string(LoginParams({{"key", "k"}}).status().message()), HasSubstr("user"));
  EXPECT_THAT(std::string(LoginParams({{"user", "a"}}).status().message()), HasSubstr("key"));
  EXPECT_THAT(std::string(LoginParams({{"user", "a"}, {"key", ""}}).status().message()),
              HasSubstr("key: required"));
  EXPECT_FALSE(LoginParams({{"user", "a b"}, {"key", "k"}}).ok());
}

}  // namespace
}  // namespace vipu::server
