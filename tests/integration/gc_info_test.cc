// gc-info -l against a real simulated pod: the partition `vipu create
// partition` made, found through IPUOF_VIPU_API_*, IPUOF_CONFIG_PATH and
// ~/.ipuof.conf.d/; and every bad flag and environment value refused.
#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon_process.h"
#include "tests/integration/harness.h"

#ifdef GC_INFO_BIN

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

// The lines after the "Partition:" line: the devices themselves.
std::vector<std::string> DeviceLines(const std::string& out) {
  std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  std::vector<std::string> devices;
  for (const std::string& line : lines) {
    if (absl::StartsWith(line, "-+-") || absl::StartsWith(line, " |---")) devices.push_back(line);
  }
  return devices;
}

TEST(GcInfoTest, ListsThePartitionThroughTheServerTheConfigPathAndTheConfigDirectory) {
  auto server = ServerProcess::Start("pod16");
  CommandResult created = server->Vipu({"create", "partition", "p8", "--size", "8"});
  ASSERT_EQ(created.exit_code, 0) << created.err << created.out;

  const std::string port = std::to_string(server->port());
  CommandResult via_server =
      RunCommand({GC_INFO_BIN, "-l"}, {{"HOME", server->home()},
                                       {"IPUOF_VIPU_API_HOST", "127.0.0.1"},
                                       {"IPUOF_VIPU_API_PORT", port},
                                       {"IPUOF_VIPU_API_PARTITION_ID", "p8"}});
  ASSERT_EQ(via_server.exit_code, 0) << via_server.err;
  EXPECT_THAT(via_server.out, HasSubstr("Graphcore device listing:\n"));
  EXPECT_THAT(via_server.out,
              HasSubstr(absl::StrCat(
                  "Partition: p8 (gcd:0) has 8 IPUs, from V-IPU server 127.0.0.1:", port, "\n")));
  const std::vector<std::string> devices = DeviceLines(via_server.out);
  // 8 single IPUs, 4 pairs, 2 quads and the whole: 15 devices, and the
  // groups list 8 + 8 + 8 members.
  EXPECT_EQ(std::count_if(devices.begin(), devices.end(),
                          [](const std::string& l) { return absl::StartsWith(l, "-+-"); }),
            15);
  EXPECT_EQ(devices.size(), 15u + 24u);
  EXPECT_THAT(
      via_server.out,
      ::testing::ContainsRegex(
          R"(-\+- Id: \[7\], target: \[Fabric\], IPU-M host: \[127\.0\.0\.1:[0-9]+\], IPU#: \[[0-3]\])"));
  EXPECT_THAT(via_server.out, HasSubstr("-+- Id: [8], target: [Multi IPU], IPUs: [2]\n"));
  EXPECT_THAT(via_server.out, HasSubstr("-+- Id: [14], target: [Multi IPU], IPUs: [8]\n"));

  // The file `vipu create partition` left in ~/.ipuof.conf.d/, found alone.
  const std::string config = server->home() + "/.ipuof.conf.d/p8_gcd0_ipuof.conf";
  CommandResult via_dir = RunCommand({GC_INFO_BIN, "--list-devices"}, {{"HOME", server->home()}});
  ASSERT_EQ(via_dir.exit_code, 0) << via_dir.err;
  EXPECT_THAT(via_dir.out, HasSubstr(absl::StrCat("has 8 IPUs, from IPUoF config ", config)));
  EXPECT_EQ(DeviceLines(via_dir.out), devices);

  CommandResult via_path =
      RunCommand({GC_INFO_BIN, "-l"}, {{"HOME", "/nonexistent"}, {"IPUOF_CONFIG_PATH", config}});
  ASSERT_EQ(via_path.exit_code, 0) << via_path.err;
  EXPECT_EQ(DeviceLines(via_path.out), devices);

  // A partition the server does not have.
  CommandResult missing =
      RunCommand({GC_INFO_BIN, "-l"}, {{"HOME", server->home()},
                                       {"IPUOF_VIPU_API_HOST", "127.0.0.1"},
                                       {"IPUOF_VIPU_API_PORT", port},
                                       {"IPUOF_VIPU_API_PARTITION_ID", "nope"}});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr(absl::StrCat("V-IPU server 127.0.0.1:", port)));
  EXPECT_THAT(missing.err, HasSubstr("nope"));
}

TEST(GcInfoTest, RefusesUnknownFlagsArgumentsAndNothingToDo) {
  CommandResult r = RunCommand({GC_INFO_BIN, "--bogus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("gc-info: "));
  EXPECT_THAT(r.err, HasSubstr("--bogus"));
  EXPECT_TRUE(r.out.empty()) << r.out;

  r = RunCommand({GC_INFO_BIN, "-l", "extra"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("extra"));

  r = RunCommand({GC_INFO_BIN, "-x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("-x"));

  r = RunCommand({GC_INFO_BIN, "--list-devices=maybe"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--list-devices = maybe"));

  r = RunCommand({GC_INFO_BIN});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("nothing to do: give -l/--list-devices"));

  r = RunCommand({GC_INFO_BIN, "--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("--list-devices"));
  EXPECT_THAT(r.out, HasSubstr("IPUOF_VIPU_API_HOST"));
}

TEST(GcInfoTest, InvalidEnvironmentValuesAreRefusedNamingTheVariable) {
  const std::string home = MakeTempDir();
  const std::string garbage = home + "/garbage.conf";
  { std::ofstream(garbage) << "not an IPUoF config\n"; }
  const std::string unused_port = std::to_string(FreePort());
  struct Case {
    std::map<std::string, std::string> env;
    std::string variable;
  };
  const std::vector<Case> cases = {
      {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
        {"IPUOF_VIPU_API_PORT", "http"},
        {"IPUOF_VIPU_API_PARTITION_ID", "p"}},
       "IPUOF_VIPU_API_PORT"},
      {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
        {"IPUOF_VIPU_API_PORT", "0"},
        {"IPUOF_VIPU_API_PARTITION_ID", "p"}},
       "IPUOF_VIPU_API_PORT"},
      {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
        {"IPUOF_VIPU_API_PORT", "65536"},
        {"IPUOF_VIPU_API_PARTITION_ID", "p"}},
       "IPUOF_VIPU_API_PORT"},
      {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"}}, "IPUOF_VIPU_API_PARTITION_ID"},
      {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
        {"IPUOF_VIPU_API_PARTITION_ID", "p"},
        {"IPUOF_VIPU_API_GCD_ID", "first"}},
       "IPUOF_VIPU_API_GCD_ID"},
      {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
        {"IPUOF_VIPU_API_PARTITION_ID", "p"},
        {"IPUOF_VIPU_API_GCD_ID", "-1"}},
       "IPUOF_VIPU_API_GCD_ID"},
      {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
        {"IPUOF_VIPU_API_PARTITION_ID", "p"},
        {"IPUOF_VIPU_API_TIMEOUT", "0"}},
       "IPUOF_VIPU_API_TIMEOUT"},
      {{{"IPUOF_CONFIG_PATH", home + "/missing.conf"}}, "IPUOF_CONFIG_PATH"},
      {{{"IPUOF_CONFIG_PATH", garbage}}, "IPUOF_CONFIG_PATH"},
      {{{"IPUOF_VIPU_API_PARTITION_ID", "p"}}, "IPUOF_VIPU_API_HOST"},
      // Nothing listens there: the server is named by its variables.
      {{{"IPUOF_VIPU_API_HOST", "127.0.0.1"},
        {"IPUOF_VIPU_API_PORT", unused_port},
        {"IPUOF_VIPU_API_PARTITION_ID", "p"},
        {"IPUOF_VIPU_API_TIMEOUT", "5"}},
       "IPUOF_VIPU_API_HOST, IPUOF_VIPU_API_PORT"},
  };
  for (const Case& c : cases) {
    std::map<std::string, std::string> env = c.env;
    env["HOME"] = home;
    CommandResult r = RunCommand({GC_INFO_BIN, "-l"}, env);
    EXPECT_EQ(r.exit_code, 1) << c.variable << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("gc-info: cannot list the devices: ")) << c.variable;
    EXPECT_THAT(r.err, HasSubstr(c.variable));
    EXPECT_TRUE(r.out.empty()) << c.variable << ": " << r.out;
  }
  RemoveTree(home);
}

}  // namespace
}  // namespace vipu::testing

#endif  // GC_INFO_BIN
