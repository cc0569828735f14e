// The HCL subset of the configuration files (hcl/hcl.h): values, comments,
// every refusal naming file and line, repeated keys, reading files.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hcl/hcl.h"

namespace vipu::hcl {
namespace {

using ::testing::HasSubstr;

const std::set<std::string> kKeys = {"api-host", "api-port", "api-timeout", "db"};

std::vector<Entry> ParseOk(absl::string_view text) {
  auto entries = Parse(text, "f.hcl", kKeys);
  EXPECT_TRUE(entries.ok()) << entries.status();
  return entries.ok() ? *std::move(entries) : std::vector<Entry>{};
}

TEST(HclParseTest, QuotedBareCommentsAndBlankLinesInFileOrder) {
  std::vector<Entry> e = ParseOk(
      "# comment\n"
      "\n"
      "api-host = \"pod.example # not a comment\"  # trailing\n"
      "  api-port=8091 // trailing too\n"
      "// whole line\n"
      "api-timeout = \"30\"\r\n"
      "db=/var/lib/vipu/x.db\n");
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[0].key, "api-host");
  EXPECT_EQ(e[0].value, "pod.example # not a comment");
  EXPECT_EQ(e[0].line, 3);
  EXPECT_EQ(e[1].key, "api-port");
  EXPECT_EQ(e[1].value, "8091");
  EXPECT_EQ(e[1].line, 4);
  EXPECT_EQ(e[2].value, "30");
  EXPECT_EQ(e[2].line, 6);
  EXPECT_EQ(e[3].value, "/var/lib/vipu/x.db");
}

TEST(HclParseTest, SpecSlurmLineWithoutSpaces) {
  std::vector<Entry> e = ParseOk("api-host=\"10.1.2.3\"\n");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].value, "10.1.2.3");
}

TEST(HclParseTest, EscapesAndCommentMarksInQuotedValues) {
  std::vector<Entry> e = ParseOk(R"(api-host = "a\"b\\c")"
                                 "\n"
                                 "db = \"/a#b//c \\\"q\\\" \\\\\"\n");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].value, "a\"b\\c");
  EXPECT_EQ(e[1].value, "/a#b//c \"q\" \\");
}

TEST(HclParseTest, EmptyQuotedValueIsAllowed) {
  std::vector<Entry> e = ParseOk("api-host = \"\"");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].value, "");
}

TEST(HclParseTest, EmptyTextHasNoEntries) {
  EXPECT_TRUE(ParseOk("").empty());
  EXPECT_TRUE(ParseOk("\n# only a comment\n\n").empty());
}

TEST(HclParseTest, RepeatedKeyRefusedNamesBothLines) {
  auto e = Parse("api-port = 1\n\napi-port = 2\n", "x.hcl", kKeys);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("x.hcl:3: key 'api-port' is already set on line 1"));
}

TEST(HclParseTest, UnknownKeyMessageListsKnownKeys) {
  auto e = Parse("user = x", "f", kKeys);
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("known keys: api-host, api-port, api-timeout, db"));
}

struct BadLine {
  std::string text;
  std::string message;
};

// Readable test names in ctest.
void PrintTo(const BadLine& p, std::ostream* os) { *os << "'" << p.text << "'"; }

class HclBadLineTest : public ::testing::TestWithParam<BadLine> {};

// The bad line is line 2, after a good one.
TEST_P(HclBadLineTest, RefusedNamingFileAndLine) {
  auto e = Parse("api-host = \"a:1\"\n" + GetParam().text + "\n", "/etc/my.hcl", kKeys);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("/etc/my.hcl:2: " + GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Lines, HclBadLineTest,
    ::testing::Values(BadLine{"api-hots = \"y\"", "unknown key 'api-hots'"},
                      BadLine{"just words", "expected `key = value`"},
                      BadLine{"api-host { }", "expected `key = value`"},
                      BadLine{"= 5", "missing key before '='"},
                      BadLine{"api host = 5", "invalid key 'api host'"},
                      BadLine{"api.port = 5", "invalid key 'api.port'"},
                      BadLine{"api-port =", "missing value for key 'api-port'"},
                      BadLine{"db = \"open", "unterminated string for key 'db'"},
                      BadLine{"db = \"ends in escape\\\"", "unterminated string"},
                      BadLine{"db = \"a\" b", "unexpected text after the value of key 'db'"},
                      BadLine{"db = two words", "bare value of key 'db' must be one word"},
                      BadLine{"db = a\"b", "bare value of key 'db' must be one word"}));

class HclReadTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "vipu-hcl-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(HclReadTextTest, ReadsTheBytes) {
  std::ofstream(dir_ + "/a.hcl") << "api-port = 9000\n";
  auto text = ReadText(dir_ + "/a.hcl");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "api-port = 9000\n");
}

TEST_F(HclReadTextTest, MissingFileIsNotFoundNamingThePath) {
  auto text = ReadText(dir_ + "/missing.hcl");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(text.status().message(), HasSubstr(dir_ + "/missing.hcl: "));
}

TEST_F(HclReadTextTest, DirectoryIsInvalid) {
  auto text = ReadText(dir_);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr(dir_ + ": is a directory"));
}

TEST_F(HclReadTextTest, UnreadableFileIsInvalid) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads files without read permission";
  const std::string path = dir_ + "/secret.hcl";
  std::ofstream(path) << "db = x\n";
  std::filesystem::permissions(path, std::filesystem::perms::none);
  auto text = ReadText(path);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr(path + ": "));
}

}  // namespace
}  // namespace vipu::hcl
