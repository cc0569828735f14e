// The Debian package (cpack -G DEB in the build directory): installed into a
// scratch root with dpkg -x, it has the binaries, the units, the example
// configuration and a postinst that creates the vipu user; the units pass
// systemd-analyze verify; it has manual pages, copyright and changelog, and
// lintian finds nothing in it. Skipped where the tools are missing.
#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// <build>/bin/vipu-server -> <build>
fs::path BuildDir() { return fs::path(VIPU_SERVER_BIN).parent_path().parent_path(); }

bool HaveTools() {
  return fs::exists("/usr/bin/cpack") && fs::exists("/usr/bin/dpkg-deb") &&
         fs::exists(BuildDir() / "CPackConfig.cmake");
}

// Builds the package into `dir`; returns its path, or "" with `error` set.
std::string BuildPackage(const std::string& dir, std::string* error) {
  CommandResult r = RunCommand({"/usr/bin/cpack", "-G", "DEB", "--config",
                                (BuildDir() / "CPackConfig.cmake").string(), "-B", dir});
  if (r.exit_code != 0) {
    *error = "cpack failed:\n" + r.out + r.err;
    return "";
  }
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".deb") return entry.path().string();
  }
  *error = "cpack wrote no .deb:\n" + r.out;
  return "";
}

class PackageTest : public ::testing::Test {
 protected:
  static void TearDownTestSuite() {
    if (dir_ != nullptr) RemoveTree(*dir_);
    delete dir_;
    dir_ = nullptr;
  }
  // The package is built once per process, by the first test that needs it;
  // a failure to build is every test's failure, never a skip.
  void SetUp() override {
    if (!HaveTools()) GTEST_SKIP() << "cpack, dpkg-deb or CPackConfig.cmake missing";
    if (dir_ == nullptr) {
      dir_ = new std::string(MakeTempDir());
      deb_ = BuildPackage(*dir_ + "/out", &error_);
      if (!deb_.empty()) {
        RunCommand({"/usr/bin/dpkg-deb", "-x", deb_, Root()});
        RunCommand({"/usr/bin/dpkg-deb", "-e", deb_, Control()});
      }
    }
    ASSERT_FALSE(deb_.empty()) << error_;
  }
  static std::string Root() { return *dir_ + "/root"; }
  static std::string Control() { return *dir_ + "/control"; }

  static inline std::string* dir_ = nullptr;
  static inline std::string deb_;
  static inline std::string error_;
};

TEST_F(PackageTest, InstallsBinariesUnitsAndConfiguration) {
  for (const char* file :
       {"usr/bin/vipu-server", "usr/bin/vipu-agent", "usr/bin/vipu", "usr/bin/vipu-admin",
        "usr/bin/poprun", "usr/bin/ipu-model", "usr/bin/popdist_sample_train", "usr/bin/gc-info",
        "usr/include/popdist/context.h", "usr/include/popdist/collectives.h",
        "usr/lib/x86_64-linux-gnu/libpopdist.a", "usr/lib/x86_64-linux-gnu/pkgconfig/popdist.pc",
        "usr/lib/python3/dist-packages/popdist/__init__.py",
        "lib/systemd/system/vipu-server.service", "lib/systemd/system/vipu-agent@.service",
        "etc/vipu/vipu-server.hcl", "usr/share/doc/vipu/examples/vipu-agent-example.env",
        "usr/share/doc/vipu/operations.md", "usr/share/doc/vipu/quickstart.md"}) {
    EXPECT_TRUE(fs::exists(fs::path(Root()) / file)) << file;
  }
  const auto perms = fs::status(fs::path(Root()) / "usr/bin/vipu-server").permissions();
  EXPECT_NE(perms & fs::perms::owner_exec, fs::perms::none);
  // The packaged server runs.
  CommandResult r = RunCommand({Root() + "/usr/bin/vipu-server", "--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(VIPU_VERSION));
}

TEST_F(PackageTest, MaintainerScriptsCreateTheUserAndKeepTheConfiguration) {
  const std::string postinst = ReadFile(Control() + "/postinst");
  EXPECT_THAT(postinst, HasSubstr("adduser --system"));
  EXPECT_THAT(postinst, HasSubstr("vipu"));
  EXPECT_THAT(ReadFile(Control() + "/conffiles"), HasSubstr("/etc/vipu/vipu-server.hcl"));
  const std::string control = ReadFile(Control() + "/control");
  EXPECT_THAT(control, HasSubstr("Package: vipu"));
  // What the programs run besides their shared libraries is declared too.
  for (const char* dependency : {"adduser", "openmpi-bin", "numactl", "python3", "python3-mpi4py",
                                 "libgrpc++", "libsqlite3"}) {
    EXPECT_THAT(control, HasSubstr(dependency));
  }
  const auto perms = fs::status(Control() + "/postinst").permissions();
  EXPECT_NE(perms & fs::perms::owner_exec, fs::perms::none);
  // The shell accepts the scripts.
  // Purge takes away what postinst created; remove keeps it.
  const std::string postrm = ReadFile(Control() + "/postrm");
  EXPECT_THAT(postrm, HasSubstr("\"$1\" = purge"));
  EXPECT_THAT(postrm, HasSubstr("rm -rf /var/lib/vipu"));
  EXPECT_THAT(postrm, HasSubstr("deluser --system"));
  for (const char* script : {"postinst", "prerm", "postrm"}) {
    CommandResult sh = RunCommand({"/bin/sh", "-n", Control() + "/" + script});
    EXPECT_EQ(sh.exit_code, 0) << script << sh.err;
  }
}

TEST_F(PackageTest, HasWhatDebianWantsOfEveryPackage) {
  // Every program has its manual page, gzipped, in section 1 (/usr/bin) or
  // 8 (/usr/sbin), made at build time (man/man_pages.cmake).
  int programs = 0;
  for (const auto& [dir, section] : {std::pair{"usr/bin", "1"}, std::pair{"usr/sbin", "8"}}) {
    if (!fs::exists(fs::path(Root()) / dir)) continue;
    for (const auto& entry : fs::directory_iterator(fs::path(Root()) / dir)) {
      ++programs;
      const std::string name = entry.path().filename().string();
      const fs::path page = fs::path(Root()) / "usr/share/man" / absl::StrCat("man", section) /
                            absl::StrCat(name, ".", section, ".gz");
      ASSERT_TRUE(fs::exists(page)) << "no manual page for " << dir << "/" << name;
      CommandResult text = RunCommand({"/bin/gzip", "-dc", page.string()});
      EXPECT_EQ(text.exit_code, 0) << page << text.err;
      EXPECT_THAT(text.out, HasSubstr(".SH NAME")) << page;
    }
  }
  EXPECT_GE(programs, 9);
  CommandResult vipu = RunCommand({"/bin/gzip", "-dc", Root() + "/usr/share/man/man1/vipu.1.gz"});
  EXPECT_THAT(vipu.out, HasSubstr("vipu create partition"));  // the leaf commands too
  // The machine-readable copyright file and the (native) package's changelog.
  EXPECT_THAT(
      ReadFile(Root() + "/usr/share/doc/vipu/copyright"),
      HasSubstr("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"));
  CommandResult changelog =
      RunCommand({"/bin/gzip", "-dc", Root() + "/usr/share/doc/vipu/changelog.gz"});
  EXPECT_THAT(changelog.out, HasSubstr(absl::StrCat("vipu (", VIPU_VERSION, ") ")));
  EXPECT_THAT(ReadFile(Control() + "/control"), Not(HasSubstr("@localhost")));
  // Units are stopped through deb-systemd-invoke, never systemctl (whose
  // daemon-reload alone maintainer scripts may call).
  const std::string prerm = ReadFile(Control() + "/prerm");
  EXPECT_THAT(prerm, HasSubstr("deb-systemd-invoke stop vipu-server.service"));
  EXPECT_THAT(prerm, Not(HasSubstr("systemctl stop")));
  // And Debian's checker finds nothing, overrides ignored (CI runs it too).
  if (!fs::exists("/usr/bin/lintian")) GTEST_SKIP() << "lintian missing";
  CommandResult lintian =
      RunCommand({"/usr/bin/lintian", "--no-override", "--fail-on", "error,warning", deb_});
  EXPECT_EQ(lintian.exit_code, 0) << lintian.out << lintian.err;
}

TEST_F(PackageTest, UnitsPassSystemdAnalyzeVerify) {
  if (!fs::exists("/usr/bin/systemd-analyze")) GTEST_SKIP() << "systemd-analyze missing";
  // The packaged units, with their absolute paths moved into the scratch
  // root so that ExecStart and EnvironmentFile exist; the template is
  // checked through an instance. verify exits 0 on unknown keys and bad
  // values, printing them: any output is a failure.
  const std::string units = Root() + "/lib/systemd/system";
  const std::string check = *dir_ + "/verify";
  fs::create_directories(check);
  auto rewrite = [&](const std::string& from, const std::string& to) {
    std::string text = ReadFile(units + "/" + from);
    for (const std::string& prefix : {std::string("/usr/bin/"), std::string("/etc/vipu/")}) {
      for (size_t at = text.find(prefix); at != std::string::npos;
           at = text.find(prefix, at + Root().size() + prefix.size())) {
        text.insert(at, Root());
      }
    }
    std::ofstream(check + "/" + to) << text;
  };
  rewrite("vipu-server.service", "vipu-server.service");
  rewrite("vipu-agent@.service", "vipu-agent@sim.service");
  std::ofstream(Root() + "/etc/vipu/vipu-agent-sim.env")
      << "VIPU_AGENT_ARGS=\"--server 127.0.0.1:8090 --agent-ids m1\"\n";
  CommandResult r = RunCommand({"/usr/bin/systemd-analyze", "verify", "--man=no",
                                check + "/vipu-server.service", check + "/vipu-agent@sim.service"},
                               {{"SYSTEMD_LOG_LEVEL", "warning"}});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out + r.err, "");
  // The packaged units are the ones in the source tree.
  EXPECT_THAT(ReadFile(units + "/vipu-server.service"), HasSubstr("Type=notify"));
}

}  // namespace
}  // namespace vipu::testing
