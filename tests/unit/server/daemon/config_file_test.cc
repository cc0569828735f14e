// ApplyConfigFile: file values under flags, validation naming file, line and key, refusals.
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/daemon/config_file.h"

namespace vipu::server {
namespace {

using ::testing::HasSubstr;

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
  EXPECT_THAT(s.message(), HasSubstr("--config: cannot read /nonexistent/vipu-server.hcl: "));
}

TEST(ApplyConfigFileTest, UnreadableFileRefused) {
  App a;
  a.Parse({});
  absl::Status s = ApplyConfigFile(a.app, "/tmp", true);  // a directory
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--config: cannot read /tmp: is a directory"));
  // Optional or not: a directory is never taken for a missing file.
  EXPECT_FALSE(ApplyConfigFile(a.app, "/tmp", false).ok());
}

TEST(ApplyConfigFileTest, RepeatedKeyRefusedAndNothingApplied) {
  std::string path = WriteTemp("listen = \"a:1\"\ndb = x.db\nlisten = \"b:2\"\n");
  App a;
  a.Parse({});
  absl::Status s = ApplyConfigFile(a.app, path, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr(path + ":3: key 'listen' is already set on line 1"));
  EXPECT_EQ(a.listen, "default:1");
  EXPECT_EQ(a.db, "default.db");
  std::remove(path.c_str());
}

TEST(ApplyConfigFileTest, MalformedLineRefusedNamingFileAndLine) {
  for (const char* line : {"config = \"/x\"", "lisen = 1", "db = two words", "db"}) {
    std::string path = WriteTemp(std::string("db = x.db\n") + line + "\n");
    App a;
    a.Parse({});
    absl::Status s = ApplyConfigFile(a.app, path, true);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << line;
    EXPECT_THAT(s.message(), HasSubstr(path + ":2: ")) << line;
    EXPECT_EQ(a.db, "default.db") << line;
    std::remove(path.c_str());
  }
}

TEST(ApplyConfigFileTest, ConfigurableKeysAreLongOptionsButConfigHelpVersion) {
  App a;
  a.app.set_version_flag("--version", "1");
  std::set<std::string> keys = ConfigurableKeys(a.app);
  EXPECT_EQ(keys, (std::set<std::string>{"auto-add-agents", "db", "heartbeat-ms", "listen"}));
}

}  // namespace
}  // namespace vipu::server
