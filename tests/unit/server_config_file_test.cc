#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/config_file.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

const std::set<std::string> kKeys = {"listen", "db", "heartbeat-ms", "auto-add-agents"};

TEST(ConfigFileTest, ParsesQuotedBareCommentsAndBlankLines) {
  auto entries = ParseConfigText(
      "# comment\n\nlisten = \"0.0.0.0:8090\"  # trailing\n"
      "db=/var/lib/vipu/x.db // also a comment\n"
      "heartbeat-ms = 250\n"
      "auto-add-agents = true\n",
      "f.hcl", kKeys);
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_EQ((*entries)[0].key, "listen");
  EXPECT_EQ((*entries)[0].value, "0.0.0.0:8090");
  EXPECT_EQ((*entries)[0].line, 3);
  EXPECT_EQ((*entries)[1].value, "/var/lib/vipu/x.db");
  EXPECT_EQ((*entries)[2].value, "250");
  EXPECT_EQ((*entries)[3].value, "true");
}

TEST(ConfigFileTest, QuotedValuesKeepHashesAndEscapes) {
  auto entries = ParseConfigText("db = \"/a#b//c \\\"q\\\" \\\\\"\n", "f.hcl", kKeys);
  ASSERT_TRUE(entries.ok()) << entries.status();
  EXPECT_EQ((*entries)[0].value, "/a#b//c \"q\" \\");
}

struct BadLine {
  std::string text;
  std::string message;
};

// Readable test names in ctest.
void PrintTo(const BadLine& p, std::ostream* os) { *os << "'" << p.text << "'"; }

class ConfigFileBadLineTest : public ::testing::TestWithParam<BadLine> {};

TEST_P(ConfigFileBadLineTest, RefusedNamingFileAndLine) {
  auto entries =
      ParseConfigText("listen = \"a:1\"\n" + GetParam().text + "\n", "/etc/x.hcl", kKeys);
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(entries.status().message(), HasSubstr("/etc/x.hcl:2: "));
  EXPECT_THAT(entries.status().message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Lines, ConfigFileBadLineTest,
    ::testing::Values(BadLine{"listen", "expected `key = value`"}, BadLine{"= 5", "missing key"},
                      BadLine{"li sten = 5", "invalid key"},
                      BadLine{"lisen = \"x\"", "unknown key 'lisen'"},
                      BadLine{"db = \"open", "unterminated string"},
                      BadLine{"db = \"a\" b", "unexpected text after the value"},
                      BadLine{"db =", "missing value"},
                      BadLine{"db = two words", "must be one word"},
                      BadLine{"listen = \"b:2\"", "already set on line 1"},
                      BadLine{"config = \"/x\"", "unknown key 'config'"}));

struct App {
  CLI::App app{"test"};
  std::string listen = "default:1";
  std::string db = "default.db";
  int heartbeat_ms = 1000;
  bool auto_add = false;
  App() {
    app.add_option("--listen", listen);
    app.add_option("--db", db);
    app.add_option("--heartbeat-ms", heartbeat_ms)->check(CLI::Range(10, 60000));
    app.add_flag("--auto-add-agents", auto_add);
    app.add_option("--config", listen);  // never settable from the file
  }
  void Parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());
    app.parse(args);
  }
};

std::string WriteTemp(const std::string& text) {
  char name[] = "/tmp/vipu-config-XXXXXX";
  int fd = mkstemp(name);
  close(fd);
  std::ofstream(name) << text;
  return name;
}

TEST(ApplyConfigFileTest, FileFillsUnsetOptionsAndFlagsWin) {
  std::string path = WriteTemp(
      "listen = \"file:2\"\ndb = \"file.db\"\nheartbeat-ms = 200\nauto-add-agents = true\n");
  App a;
  a.Parse({"--db", "flag.db"});
  ASSERT_TRUE(ApplyConfigFile(a.app, path, true).ok());
  EXPECT_EQ(a.listen, "file:2");
  EXPECT_EQ(a.db, "flag.db");  // the command line wins
  EXPECT_EQ(a.heartbeat_ms, 200);
  EXPECT_TRUE(a.auto_add);
  std::remove(path.c_str());
}

TEST(ApplyConfigFileTest, FlagFalseFromFile) {
  std::string path = WriteTemp("auto-add-agents = false\n");
  App a;
  a.auto_add = true;
  a.Parse({});
  ASSERT_TRUE(ApplyConfigFile(a.app, path, true).ok());
  EXPECT_FALSE(a.auto_add);
  std::remove(path.c_str());
}

TEST(ApplyConfigFileTest, ValidatorsRunOnFileValuesNamingFileLineAndKey) {
  for (std::string bad : {"0", "60001", "ten", ""}) {
    std::string path = WriteTemp("# x\nheartbeat-ms = \"" + bad + "\"\n");
    App a;
    a.Parse({});
    absl::Status s = ApplyConfigFile(a.app, path, true);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr(path + ":2: heartbeat-ms: ")) << bad;
    std::remove(path.c_str());
  }
}

TEST(ApplyConfigFileTest, BadFlagValueRefused) {
  std::string path = WriteTemp("auto-add-agents = maybe\n");
  App a;
  a.Parse({});
  absl::Status s = ApplyConfigFile(a.app, path, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(":1: auto-add-agents: "));
  std::remove(path.c_str());
}

TEST(ApplyConfigFileTest, MissingFileIsOkOnlyWhenOptional) {
  App a;
  a.Parse({});
  EXPECT_TRUE(ApplyConfigFile(a.app, "/nonexistent/vipu-server.hcl", false).ok());
  absl::Status s = ApplyConfigFile(a.app, "/nonexistent/vipu-server.hcl", true);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent/vipu-server.hcl"));
}

TEST(ApplyConfigFileTest, UnreadableFileRefused) {
  App a;
  a.Parse({});
  absl::Status s = ApplyConfigFile(a.app, "/tmp", true);  // a directory
  EXPECT_FALSE(s.ok());
}

TEST(ApplyConfigFileTest, ConfigurableKeysAreLongOptionsButConfigHelpVersion) {
  App a;
  a.app.set_version_flag("--version", "1");
  std::set<std::string> keys = ConfigurableKeys(a.app);
  EXPECT_EQ(keys, (std::set<std::string>{"auto-add-agents", "db", "heartbeat-ms", "listen"}));
}

}  // namespace
}  // namespace vipu::server
