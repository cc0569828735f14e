// IPUoF config files: paths, JSON shape, private modes, overwrite, removal and bad homes.
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/common/ipuof_files.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace vipu::cli {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class IpuofFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = ::testing::TempDir() + "/ipuof_files_test_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(home_);
    fs::create_directories(home_);
  }
  void TearDown() override { fs::remove_all(home_); }

  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  static mode_t Mode(const std::string& path) {
    struct stat st;
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return st.st_mode & 0777;
  }

  std::string home_;
};

virmgrpc::PartitionConfig::Gcd SampleGcd() {
  virmgrpc::PartitionConfig::Gcd gcd;
  auto* d = gcd.add_devices();
  d->set_ip("10.1.5.10");
  d->set_server_port(50052);
  d->set_device_id(0);
  d->set_ipu_id(3);
  (*gcd.mutable_attributes())["GCD Id"] = "0";
  (*gcd.mutable_attributes())["Num GCDs"] = "1";
  (*gcd.mutable_attributes())["Fabric Reconfigurable"] = "0";
  return gcd;
}

TEST_F(IpuofFilesTest, PathNaming) {
  EXPECT_EQ(IpuofConfigPath("/home/u", "p64", 3), "/home/u/.ipuof.conf.d/p64_gcd3_ipuof.conf");
}

TEST_F(IpuofFilesTest, JsonUsesProtoFieldNamesAndKeepsZeroValues) {
  auto json = GcdConfigJson(SampleGcd());
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_THAT(*json, HasSubstr("\"devices\""));
  EXPECT_THAT(*json, HasSubstr("\"attributes\""));
  EXPECT_THAT(*json, HasSubstr("\"server_port\": 50052"));
  EXPECT_THAT(*json, HasSubstr("\"device_id\": 0"));  // zero kept
  EXPECT_THAT(*json, HasSubstr("\"GCD Id\": \"0\""));
  EXPECT_EQ(json->back(), '\n');
  // Round-trips to the same message.
  virmgrpc::PartitionConfig::Gcd parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(*json, &parsed).ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(parsed, SampleGcd()));
}

TEST_F(IpuofFilesTest, JsonSortsAttributesSoOutputIsStable) {
  auto json = GcdConfigJson(SampleGcd());
  ASSERT_TRUE(json.ok());
  size_t fabric = json->find("Fabric Reconfigurable");
  size_t gcd = json->find("GCD Id");
  size_t num = json->find("Num GCDs");
  EXPECT_LT(fabric, gcd);
  EXPECT_LT(gcd, num);
  EXPECT_EQ(*GcdConfigJson(SampleGcd()), *json);
}

TEST_F(IpuofFilesTest, WritesWithPrivateModes) {
  ::umask(0);  // even with a permissive umask
  ASSERT_TRUE(WriteIpuofConfig(home_, "p1", 0, "{}\n").ok());
  ::umask(022);
  std::string path = IpuofConfigPath(home_, "p1", 0);
  EXPECT_EQ(Read(path), "{}\n");
  EXPECT_EQ(Mode(IpuofConfigDir(home_)), 0700u);
  EXPECT_EQ(Mode(path), 0600u);
  // No temporary file left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(IpuofConfigDir(home_))) ++files;
  EXPECT_EQ(files, 1);
}

TEST_F(IpuofFilesTest, OverwritesExistingFile) {
  ASSERT_TRUE(WriteIpuofConfig(home_, "p1", 0, "old\n").ok());
  ASSERT_TRUE(WriteIpuofConfig(home_, "p1", 0, "new\n").ok());
  EXPECT_EQ(Read(IpuofConfigPath(home_, "p1", 0)), "new\n");
}

TEST_F(IpuofFilesTest, RemoveDeletesOnlyThatPartitionsGcdFiles) {
  for (uint32_t gcd : {0u, 1u, 12u}) ASSERT_TRUE(WriteIpuofConfig(home_, "p1", gcd, "x").ok());
  ASSERT_TRUE(WriteIpuofConfig(home_, "p10", 0, "x").ok());
  ASSERT_TRUE(WriteIpuofConfig(home_, "p1_gcd0", 0, "x").ok());
  std::ofstream(IpuofConfigDir(home_) + "/p1_gcdX_ipuof.conf") << "x";
  std::ofstream(IpuofConfigDir(home_) + "/p1_gcd0_ipuof.conf.bak") << "x";

  ASSERT_TRUE(RemoveIpuofConfigs(home_, "p1").ok());
  EXPECT_FALSE(fs::exists(IpuofConfigPath(home_, "p1", 0)));
  EXPECT_FALSE(fs::exists(IpuofConfigPath(home_, "p1", 1)));
  EXPECT_FALSE(fs::exists(IpuofConfigPath(home_, "p1", 12)));
  EXPECT_TRUE(fs::exists(IpuofConfigPath(home_, "p10", 0)));
  EXPECT_TRUE(fs::exists(IpuofConfigPath(home_, "p1_gcd0", 0)));
  EXPECT_TRUE(fs::exists(IpuofConfigDir(home_) + "/p1_gcdX_ipuof.conf"));
  EXPECT_TRUE(fs::exists(IpuofConfigDir(home_) + "/p1_gcd0_ipuof.conf.bak"));
}

TEST_F(IpuofFilesTest, RemoveWithoutDirectoryIsOk) {
  EXPECT_TRUE(RemoveIpuofConfigs(home_, "p1").ok());
}

TEST_F(IpuofFilesTest, EmptyHomeIsAnError) {
  absl::Status s = WriteIpuofConfig("", "p1", 0, "x");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("HOME"));
  EXPECT_EQ(RemoveIpuofConfigs("", "p1").code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(IpuofFilesTest, ConfigDirIsAFileIsAnError) {
  std::ofstream(IpuofConfigDir(home_)) << "x";
  absl::Status s = WriteIpuofConfig(home_, "p1", 0, "x");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("p1_gcd0_ipuof.conf"));
  EXPECT_FALSE(RemoveIpuofConfigs(home_, "p1").ok());
}

TEST_F(IpuofFilesTest, HomeIsAFileIsAnError) {
  std::string file_home = home_ + "/not-a-dir";
  std::ofstream(file_home) << "x";
  absl::Status s = WriteIpuofConfig(file_home, "p1", 0, "x");
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr(".ipuof.conf.d"));
}

}  // namespace
}  // namespace vipu::cli
