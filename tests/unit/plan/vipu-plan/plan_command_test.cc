// `vipu-plan` end to end through RunVipuPlan: the files a replay and a
// comparison write, their figures against each other, and exit code 2 with
// one line and nothing written for every invalid flag value and trace.
#include "plan/vipu-plan/plan_command.h"

#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "plan/report.h"

namespace vipu::plan {
namespace {

using ::testing::HasSubstr;

struct Result {
  int code = -1;
  std::string out;
  std::string err;
};

Result RunCli(std::vector<std::string> args) {
  args.insert(args.begin(), "vipu-plan");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  Result r;
  r.code = RunVipuPlan(static_cast<int>(argv.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class PlanCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/plan_command_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    trace_ = dir_ + "/trace.csv";
    Result g =
        RunCli({"generate", "--jobs", "300", "--pod-ipus", "64", "--load", "1.1", "--out", trace_});
    ASSERT_EQ(g.code, 0) << g.err;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
  std::string trace_;
};

TEST_F(PlanCommandTest, ReplayWritesJobsSummaryAndAReportWhoseFiguresMatch) {
  const std::string out = dir_ + "/out";
  Result r = RunCli({"replay", trace_, "--pod", "pod64", "--policy", "backfill", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("pod64 backfill: utilisation"));
  EXPECT_THAT(r.err, HasSubstr("simulated seconds per wall second"));
  const nlohmann::json s = nlohmann::json::parse(Slurp(out + "/summary.json"));
  for (const char* key :
       {"utilisation", "makespan_s", "wait_p50_s", "wait_p95_s", "wait_p99_s", "wait_max_s",
        "bounded_slowdown_mean", "fragmentation", "refused", "rounded", "skipped",
        "backfill_estimate", "lost_ipu_hours", "requeues"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  EXPECT_EQ(s["jobs"], 300);
  EXPECT_EQ(s["backfill_estimate"], "requested");
  const std::string jobs = Slurp(out + "/jobs.csv");
  EXPECT_EQ(std::count(jobs.begin(), jobs.end(), '\n'), 301);
  // The report: four kinds of chart, and the summary's figures in words.
  const std::string html = Slurp(out + "/report.html");
  std::regex svg("<svg ");
  EXPECT_EQ(
      std::distance(std::sregex_iterator(html.begin(), html.end(), svg), std::sregex_iterator()),
      4);
  EXPECT_THAT(html, HasSubstr("Utilisation over time"));
  EXPECT_THAT(html, HasSubstr("Queue length over time"));
  EXPECT_THAT(html, HasSubstr("Distribution of waits"));
  EXPECT_THAT(html, HasSubstr("Occupancy per machine"));
  char utilisation[32];
  std::snprintf(utilisation, sizeof utilisation, "%.1f%%", 100 * s["utilisation"].get<double>());
  EXPECT_THAT(html, HasSubstr(std::string("<b>") + utilisation + "</b> used"));
  EXPECT_THAT(html, HasSubstr("<b>" + FormatDuration(s["wait_p95_s"].get<double>()) + "</b>"));
  // Readable offline: nothing to fetch or run.
  for (const char* fetch : {"<script", "src=", "href=", "@import", "url("}) {
    EXPECT_EQ(html.find(fetch), std::string::npos) << fetch;
  }
}

TEST_F(PlanCommandTest, TheSameTraceAndSeedGiveTheSameFiles) {
  for (const char* name : {"a", "b"}) {
    Result r = RunCli({"replay", trace_, "--pod", "pod16", "--out", dir_ + "/" + name, "--quiet",
                       "--machine-mtbf", "50", "--repair-hours", "4", "--seed", "9"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "");
  }
  EXPECT_EQ(Slurp(dir_ + "/a/jobs.csv"), Slurp(dir_ + "/b/jobs.csv"));
  EXPECT_EQ(Slurp(dir_ + "/a/summary.json"), Slurp(dir_ + "/b/summary.json"));
  EXPECT_EQ(Slurp(dir_ + "/a/report.html"), Slurp(dir_ + "/b/report.html"));
}

TEST_F(PlanCommandTest, CompareWritesOneReportWithEveryReplay) {
  const std::string out = dir_ + "/cmp";
  Result r = RunCli({"compare", trace_, "--pods", "pod16,pod64", "--policies", "fifo,backfill",
                     "--out", out, "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json s = nlohmann::json::parse(Slurp(out + "/summary.json"));
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0]["pod"], "pod16");
  EXPECT_EQ(s[3]["policy"], "backfill");
  for (const char* run : {"pod16-fifo", "pod16-backfill", "pod64-fifo", "pod64-backfill"}) {
    EXPECT_TRUE(std::filesystem::exists(out + "/" + run + "/jobs.csv")) << run;
    EXPECT_EQ(nlohmann::json::parse(Slurp(out + "/" + run + "/summary.json"))["pod"],
              std::string(run).substr(0, std::string(run).find('-')));
  }
  const std::string html = Slurp(out + "/report.html");
  EXPECT_THAT(html, HasSubstr("Side by side"));
  EXPECT_THAT(html, HasSubstr("data-run=\"pod64-backfill\""));
}

TEST_F(PlanCommandTest, GeneratesAnSwfLogThatReplaysLikeItsCsv) {
  for (const char* name : {"g.swf", "g.csv"}) {
    Result g = RunCli({"generate", "--jobs", "200", "--pod-ipus", "128", "--span-days", "10",
                       "--seed", "4", "--out", dir_ + "/" + name});
    ASSERT_EQ(g.code, 0) << g.err;
    Result r = RunCli({"replay", dir_ + "/" + name, "--pod", "pod128", "--policy", "backfill",
                       "--out", dir_ + "/out-" + name, "--quiet"});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  nlohmann::json swf = nlohmann::json::parse(Slurp(dir_ + "/out-g.swf/summary.json"));
  nlohmann::json csv = nlohmann::json::parse(Slurp(dir_ + "/out-g.csv/summary.json"));
  EXPECT_LE(swf["last_end_s"].get<double>(), 10 * 86400 * 1.5);
  swf.erase("trace");
  csv.erase("trace");
  EXPECT_EQ(swf, csv);
}

// The public trace shipped in plan/traces/ (Tiresias' 60 jobs) replays as
// it is, through --columns: every job runs for its own duration, none is
// skipped or rounded (1, 2, 4 and 8 are partition sizes), and jobs start in
// the order they were submitted under fifo.
TEST_F(PlanCommandTest, TheShippedPublicTraceReplaysAsItIs) {
  const std::string trace = std::string(VIPU_PLAN_TRACES) + "/tiresias_60_job.csv";
  Result r = RunCli({"replay", trace, "--columns",
                     "id=job_id,submit=submit_time,ipus=num_gpu,duration=duration", "--pod",
                     "pod16", "--policy", "fifo", "--out", dir_ + "/tiresias", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json s = nlohmann::json::parse(Slurp(dir_ + "/tiresias/summary.json"));
  EXPECT_EQ(s["jobs"], 60);
  EXPECT_EQ(s["done"], 60);
  EXPECT_EQ(s["rounded"], 0);
  EXPECT_TRUE(s["skipped"].empty()) << s["skipped"];
  // Each job's run in jobs.csv is the trace's duration, and fifo starts
  // them in submission order.
  std::map<std::string, double> duration;
  {
    std::ifstream in(trace);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
      ASSERT_EQ(f.size(), 7u) << line;
      duration[f[0]] = std::stod(f[5]);
    }
  }
  ASSERT_EQ(duration.size(), 60u);
  std::ifstream jobs(dir_ + "/tiresias/jobs.csv");
  std::string header, line;
  std::getline(jobs, header);
  ASSERT_EQ(header.rfind("id,user,submit,start,end,", 0), 0u) << header;
  double last_submit = -1, last_start = -1;
  int rows = 0;
  while (std::getline(jobs, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    ASSERT_GE(f.size(), 5u) << line;
    EXPECT_DOUBLE_EQ(std::stod(f[4]) - std::stod(f[3]), duration.at(f[0])) << "job " << f[0];
    const double submit = std::stod(f[2]), start = std::stod(f[3]);
    if (submit >= last_submit) {
      EXPECT_GE(start, last_start) << "job " << f[0] << " started before an earlier one";
    }
    last_submit = std::max(last_submit, submit);
    last_start = std::max(last_start, start);
    ++rows;
  }
  EXPECT_EQ(rows, 60);
}

TEST_F(PlanCommandTest, ReadsSwfAndSaysWhatItSkipped) {
  const std::string swf = dir_ + "/log.swf";
  std::ofstream(swf) << "; MaxProcs: 16\n"
                        "1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                        "2 5 -1 -1 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
                        "3 6 -1 10 -1 -1 -1 -1 200 -1 1 1 1 -1 1 -1 -1 -1\n";
  Result r = RunCli({"replay", swf, "--pod", "pod16", "--out", dir_ + "/swf", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1 no_end, 1 no_ipus"));
  const nlohmann::json s = nlohmann::json::parse(Slurp(dir_ + "/swf/summary.json"));
  EXPECT_EQ(s["skipped"]["no_end"], 1);
  EXPECT_EQ(s["done"], 1);
}

TEST_F(PlanCommandTest, InvalidInputExitsTwoAndWritesNothing) {
  const std::string bad_line = dir_ + "/bad.csv";
  std::ofstream(bad_line) << "id,submit,ipus,duration\na,0,4,10\nb,1,four,10\n";
  const std::string not_a_dir = dir_ + "/file";
  std::ofstream(not_a_dir) << "x";
  const std::string out = dir_ + "/never";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  } cases[] = {
      {{"replay", trace_, "--pod", "pod7", "--out", out}, "pod:"},
      {{"replay", trace_, "--pod", "64x17", "--out", out}, "pod:"},
      {{"replay", trace_, "--pod", "pod64", "--policy", "sjf", "--out", out}, "policy:"},
      {{"replay", trace_, "--pod", "pod64", "--ipus-per-proc", "0", "--out", out},
       "ipus-per-proc:"},
      {{"replay", trace_, "--pod", "pod64", "--ipus-per-proc", "x", "--out", out}, "ipus-per-proc"},
      {{"replay", trace_, "--pod", "pod64", "--machine-mtbf", "10", "--out", out}, "go together"},
      {{"replay", trace_, "--pod", "pod64", "--repair-hours", "10", "--out", out}, "go together"},
      {{"replay", trace_, "--pod", "pod64", "--machine-mtbf", "-1", "--repair-hours", "1", "--out",
        out},
       "machine-mtbf:"},
      {{"replay", trace_, "--pod", "pod64", "--machine-mtbf", "10", "--repair-hours", "0", "--out",
        out},
       "repair-hours:"},
      {{"replay", trace_, "--pod", "pod64", "--seed", "-1", "--out", out}, "seed:"},
      {{"replay", trace_, "--pod", "pod64", "--backfill-depth", "0", "--out", out},
       "backfill-depth:"},
      {{"replay", trace_, "--pod", "pod64", "--columns", "gpus=n", "--out", out}, "columns:"},
      {{"replay", trace_, "--pod", "pod64", "--columns", "ipus=num_gpu", "--out", out}, "num_gpu"},
      {{"replay", trace_, "--pod", "pod64", "--format", "json", "--out", out}, "format:"},
      {{"replay", trace_, "--pod", "pod64", "--format", "swf", "--columns", "ipus=x", "--out", out},
       "columns: apply to CSV"},
      {{"replay", dir_ + "/absent.csv", "--pod", "pod64", "--out", out}, "cannot open"},
      {{"replay", bad_line, "--pod", "pod64", "--out", out}, "bad.csv:3: ipus"},
      {{"replay", trace_, "--pod", "pod64", "--out", not_a_dir}, "not a directory"},
      {{"replay", trace_, "--out", out}, "--pod"},
      {{"replay", trace_, "--pod", "pod64"}, "--out"},
      {{"compare", trace_, "--pods", "pod64,pod9", "--out", out}, "pod:"},
      {{"compare", trace_, "--pods", "pod64", "--policies", "fifo,lifo", "--out", out}, "policy:"},
      {{"compare", trace_, "--pods", ",", "--out", out}, "pods:"},
      {{"generate", "--jobs", "0", "--out", out}, "jobs:"},
      {{"generate", "--pod-ipus", "48", "--out", out}, "pod-ipus:"},
      {{"generate", "--max-ipus", "128", "--out", out}, "max-ipus:"},
      {{"generate", "--load", "0", "--out", out}, "load:"},
      {{"generate", "--min-run", "100", "--max-run", "10", "--out", out}, "runs:"},
      {{"generate", "--users", "0", "--out", out}, "users:"},
      {{"generate", "--seed", "-2", "--out", out}, "seed:"},
      {{"generate", "--span-days", "-1", "--out", out}, "span-days:"},
      {{"frobnicate"}, "subcommand"},
  };
  for (const Case& c : cases) {
    Result r = RunCli(c.args);
    const std::string what = c.args.size() > 1 ? c.args[0] + " " + c.message : c.message;
    EXPECT_EQ(r.code, kExitUsage) << what << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << what;
    EXPECT_EQ(r.out, "") << what;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out)) << what;
  }
}

}  // namespace
}  // namespace vipu::plan
