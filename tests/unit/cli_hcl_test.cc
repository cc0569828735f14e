#include <cstdio>
#include <fstream>
#include <string>

#include "cli/hcl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

const std::set<std::string> kKeys = {"api-host", "api-port", "api-timeout"};

TEST(HclTest, QuotedBareCommentsAndBlankLines) {
  auto values = ParseHcl(
      "# comment\n"
      "\n"
      "api-host = \"pod.example # not a comment\"  # trailing\n"
      "  api-port=8091 // trailing too\n"
      "// whole line\n"
      "api-timeout = \"30\"\r\n",
      "f.hcl", kKeys);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(*values, UnorderedElementsAre(Pair("api-host", "pod.example # not a comment"),
                                            Pair("api-port", "8091"), Pair("api-timeout", "30")));
}

TEST(HclTest, SpecSlurmLineWithoutSpaces) {
  auto values = ParseHcl("api-host=\"10.1.2.3\"\n", "vipu-cli.hcl", kKeys);
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(values->at("api-host"), "10.1.2.3");
}

TEST(HclTest, EscapesInQuotedValues) {
  auto values = ParseHcl(R"(api-host = "a\"b\\c")", "f", kKeys);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->at("api-host"), "a\"b\\c");
}

TEST(HclTest, EmptyQuotedValueIsAllowed) {
  auto values = ParseHcl("api-host = \"\"", "f", kKeys);
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(values->at("api-host"), "");
}

TEST(HclTest, LastRepeatWins) {
  auto values = ParseHcl("api-port = 1\napi-port = 2\n", "f", kKeys);
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(values->at("api-port"), "2");
}

struct BadCase {
  const char* text;
  const char* expected;  // substring of the message
};

class HclErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(HclErrorTest, NamesFileAndLine) {
  auto values = ParseHcl(GetParam().text, "my.hcl", kKeys);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(values.status().message()), HasSubstr(GetParam().expected));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, HclErrorTest,
    ::testing::Values(
        BadCase{"api-host = \"x\"\napi-hots = \"y\"\n", "my.hcl:2: unknown key 'api-hots'"},
        BadCase{"\n\njust words\n", "my.hcl:3: expected `key = value`"},
        BadCase{"= 5\n", "my.hcl:1: missing key"},
        BadCase{"api host = 5\n", "my.hcl:1: invalid key 'api host'"},
        BadCase{"api-port =\n", "my.hcl:1: missing value for key 'api-port'"},
        BadCase{"api-host = \"abc\n", "my.hcl:1: unterminated string"},
        BadCase{"api-host = \"a\" b\n", "my.hcl:1: unexpected text after the value"},
        BadCase{"api-host = a b\n", "my.hcl:1: bare value of key 'api-host' must be one word"},
        BadCase{"api-host { }\n", "my.hcl:1: expected `key = value`"}));

TEST(HclTest, UnknownKeyMessageListsKnownKeys) {
  auto values = ParseHcl("user = x", "f", kKeys);
  ASSERT_FALSE(values.ok());
  EXPECT_THAT(std::string(values.status().message()),
              HasSubstr("known keys: api-host, api-port, api-timeout"));
}

TEST(HclFileTest, MissingFileIsNotFound) {
  auto values = ReadHclFile("/nonexistent/dir/vipu-cli.hcl", kKeys);
  ASSERT_FALSE(values.ok());
  EXPECT_EQ(values.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(values.status().message()), HasSubstr("/nonexistent/dir/vipu-cli.hcl"));
}

TEST(HclFileTest, ReadsFile) {
  std::string path = ::testing::TempDir() + "/hcl_test_read.hcl";
  std::ofstream(path) << "api-port = 9000\n";
  auto values = ReadHclFile(path, kKeys);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(values->at("api-port"), "9000");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace vipu::cli
