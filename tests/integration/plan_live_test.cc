// vipu-plan replay --live against a real vipu-server --simulate: the server,
// sent the replay's creates and removes in the replay's order, places every
// job on the IPUs the virtual replay chose (and refuses what it refused), on
// one ILD and on two with jobs that span both, backfill starting jobs ahead
// of a waiting head; and a replay on another pod shape is caught diverging.
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

using ::testing::HasSubstr;

// The rows of a replay's jobs.csv, each as column name -> value.
std::vector<std::map<std::string, std::string>> ReadJobs(const std::string& path) {
  std::vector<std::string> lines = absl::StrSplit(ReadFile(path), '\n', absl::SkipEmpty());
  std::vector<std::map<std::string, std::string>> rows;
  if (lines.empty()) return rows;
  const std::vector<std::string> header = absl::StrSplit(lines[0], ',');
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> fields = absl::StrSplit(lines[i], ',');
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < header.size() && c < fields.size(); ++c) row[header[c]] = fields[c];
    rows.push_back(std::move(row));
  }
  return rows;
}

// vipu-plan sits beside vipu-server: every program is built into one bin/.
class PlanLiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(PlanBin())) << PlanBin();
    dir_ = MakeTempDir();
    server_ = ServerProcess::Start("pod16");
    ASSERT_NE(server_, nullptr);
    // Sizes up to the whole pod, offered more than it holds: jobs queue,
    // backfill passes the head, and none refuses.
    CommandResult g =
        RunCommand({PlanBin(), "generate", "--jobs", "40", "--pod-ipus", "16", "--max-ipus", "16",
                    "--load", "1.3", "--seed", "3", "--out", dir_ + "/trace.csv"});
    ASSERT_EQ(g.exit_code, 0) << g.err;
  }
  void TearDown() override {
    server_.reset();
    RemoveTree(dir_);
  }

  CommandResult Live(const std::string& pod, const std::string& policy, const std::string& out) {
    return RunCommand({PlanBin(), "replay", dir_ + "/trace.csv", "--pod", pod, "--policy", policy,
                       "--out", out, "--live", server_->address(), "--time-scale", "1000000",
                       "--quiet"});
  }

  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(PlanLiveTest, TheServerPlacesEveryJobWhereTheVirtualReplayDid) {
  for (const char* policy : {"fifo", "backfill", "none"}) {
    const std::string out = dir_ + "/out-" + policy;
    CommandResult r = Live("pod16", policy, out);
    ASSERT_EQ(r.exit_code, 0) << policy << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr("in the replay's order, each on the IPUs the replay chose"))
        << policy;
    if (std::string(policy) == "none") {
      EXPECT_THAT(r.out, ::testing::ContainsRegex("refused [1-9][0-9]* creates")) << r.out;
    } else {
      EXPECT_THAT(r.out, HasSubstr("created 40 partitions")) << r.out;
    }
    EXPECT_TRUE(std::filesystem::exists(out + "/jobs.csv"));
    // Every partition it created is gone again.
    CommandResult list = server_->Vipu({"list", "partitions"});
    EXPECT_EQ(list.exit_code, 0) << list.err;
    EXPECT_THAT(list.out, Not(HasSubstr("plan-"))) << list.out;
  }
}

TEST_F(PlanLiveTest, AReplayOnAnotherPodShapeIsCaughtDivergingAndWritesNothing) {
  // 16 IPUs as 2 ILDs of 2 machines: the same count, other partitions.
  const std::string out = dir_ + "/out-other";
  CommandResult r = Live("2x2", "fifo", out);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("diverged from the replay"));
  EXPECT_THAT(r.err, HasSubstr("the server placed it on (ILD/topology id)"));
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST_F(PlanLiveTest, AServerThatHoldsPartitionsOrIsNotThereIsRefused) {
  CommandResult created = server_->Vipu({"create", "partition", "someone-else", "--size", "1"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  CommandResult r = Live("pod16", "fifo", dir_ + "/busy");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("already holds 1 partition(s)"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/busy"));
  CommandResult bad = RunCommand({PlanBin(), "replay", dir_ + "/trace.csv", "--pod", "pod16",
                                  "--out", dir_ + "/bad", "--live", "127.0.0.1:notaport"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("live: expected HOST:PORT"));
}

// pod128: two ILDs of 16 machines, where a job of 128 IPUs spans both and
// server-side placement has a choice of ILD for every smaller one.
TEST(PlanLiveTwoIldTest, JobsAcrossBothIldsAndBackfillAheadOfTheHeadGoWhereTheReplayChose) {
  ASSERT_TRUE(std::filesystem::exists(PlanBin())) << PlanBin();
  const std::string dir = MakeTempDir();
  auto server = ServerProcess::Start("pod128");
  ASSERT_NE(server, nullptr);
  CommandResult g =
      RunCommand({PlanBin(), "generate", "--jobs", "40", "--pod-ipus", "128", "--max-ipus", "128",
                  "--load", "1.3", "--seed", "3", "--out", dir + "/trace.csv"});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  for (const char* policy : {"backfill", "fifo"}) {
    const std::string out = dir + "/out-" + policy;
    CommandResult r = RunCommand({PlanBin(), "replay", dir + "/trace.csv", "--pod", "pod128",
                                  "--policy", policy, "--out", out, "--live", server->address(),
                                  "--time-scale", "1000000", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << policy << ": " << r.err;
    EXPECT_THAT(r.out, HasSubstr("created 40 partitions and refused 0 creates in the replay's "
                                 "order, each on the IPUs the replay chose"))
        << r.out;
    const std::vector<std::map<std::string, std::string>> jobs = ReadJobs(out + "/jobs.csv");
    ASSERT_EQ(jobs.size(), 40u);
    int across = 0;
    for (const auto& job : jobs) across += job.at("ilds") == "2" ? 1 : 0;
    EXPECT_GE(across, 1) << policy << ": no job spans both ILDs";
    // A job submitted after one that waited, started before it: backfill
    // passed the head. FIFO never does.
    int passed = 0;
    for (const auto& head : jobs) {
      if (head.at("wait") == "0") continue;
      for (const auto& later : jobs) {
        if (std::stoll(later.at("submit")) > std::stoll(head.at("submit")) &&
            std::stoll(later.at("start")) < std::stoll(head.at("start"))) {
          ++passed;
        }
      }
    }
    if (std::string(policy) == "backfill") {
      EXPECT_GE(passed, 1) << "backfill started no job ahead of a waiting one";
    } else {
      EXPECT_EQ(passed, 0) << "fifo started a job ahead of a waiting one";
    }
  }
  server.reset();
  RemoveTree(dir);
}

}  // namespace
}  // namespace vipu::testing
