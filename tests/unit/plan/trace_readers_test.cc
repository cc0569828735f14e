// The trace readers on every form a row can take: SWF and CSV jobs, the
// rows skipped by reason, and each invalid line refused naming file:line.
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "plan/trace_readers.h"

namespace vipu::plan {
namespace {

using ::testing::HasSubstr;

// One SWF job line; fields numbered from 1 as the format does.
std::string SwfLine(int id, double submit, double run, double procs, double req_procs = -1,
                    double req_time = -1, int user = 7) {
  char line[256];
  std::snprintf(line, sizeof line, "%d %g -1 %g %g -1 -1 %g %g -1 1 %d 1 -1 1 -1 -1 -1\n", id,
                submit, run, procs, req_procs, req_time, user);
  return line;
}

TEST(SwfTest, ReadsTheFieldsOfEachJobAndMaxProcs) {
  const std::string text = "; Version: 2.2\n; MaxProcs: 128\n" + SwfLine(1, 0, 100, 4, -1, 300) +
                           SwfLine(2, 50, 20, -1, 8, -1, 3);
  absl::StatusOr<Trace> t = ParseSwf(text, "log.swf", 1);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->max_procs, 128u);
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].id, "1");
  EXPECT_EQ(t->jobs[0].submit, 0);
  EXPECT_EQ(t->jobs[0].run, 100);
  EXPECT_EQ(t->jobs[0].ipus, 4u);
  EXPECT_EQ(t->jobs[0].requested, 300);
  EXPECT_EQ(t->jobs[0].user, "7");
  // Allocated processors unknown: the requested ones (field 8).
  EXPECT_EQ(t->jobs[1].ipus, 8u);
  EXPECT_EQ(t->jobs[1].requested, -1);
  EXPECT_EQ(t->jobs[1].user, "3");
  EXPECT_TRUE(t->skipped.empty());
}

TEST(SwfTest, IpusPerProcMultipliesAndZeroIsRefused) {
  absl::StatusOr<Trace> t = ParseSwf(SwfLine(1, 0, 10, 3), "log.swf", 4);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->jobs[0].ipus, 12u);
  EXPECT_FALSE(ParseSwf(SwfLine(1, 0, 10, 3), "log.swf", 0).ok());
}

TEST(SwfTest, RowsThatCannotBeJobsAreSkippedByReason) {
  const std::string text = SwfLine(1, 0, 10, -1, -1) + SwfLine(2, 0, 10, 0, 0) +
                           SwfLine(3, 0, -1, 4) + SwfLine(4, 0, -5, 4) + SwfLine(5, -1, 5, 4) +
                           SwfLine(6, 0, 10, 4);
  absl::StatusOr<Trace> t = ParseSwf(text, "log.swf", 1);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].id, "6");
  EXPECT_EQ(t->skipped[kSkipNoIpus], 2u);
  EXPECT_EQ(t->skipped[kSkipNoEnd], 1u);
  EXPECT_EQ(t->skipped[kSkipNegativeRun], 2u);
}

TEST(SwfTest, InvalidLinesNameTheFileAndLine) {
  // A missing field.
  absl::StatusOr<Trace> t = ParseSwf("; c\n" + SwfLine(1, 0, 1, 1) + "2 0 -1 5 4\n", "a.swf", 1);
  ASSERT_FALSE(t.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(t.status()));
  EXPECT_THAT(t.status().message(), HasSubstr("a.swf:3:"));
  EXPECT_THAT(t.status().message(), HasSubstr("18 fields"));
  // A word where a number must be.
  std::string line = SwfLine(1, 0, 1, 1);
  line.replace(line.find(" 1 7 "), 5, " x 7 ");
  t = ParseSwf(line, "b.swf", 1);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("b.swf:1: field 11"));
  EXPECT_THAT(t.status().message(), HasSubstr("\"x\""));
  // Not a number at all: inf and nan are refused too.
  t = ParseSwf("1 inf -1 5 4 -1 -1 4 -1 -1 1 1 1 -1 1 -1 -1 -1\n", "c.swf", 1);
  EXPECT_FALSE(t.ok());
}

class SwfFileTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) {
    return ::testing::TempDir() + "/plan_swf_" + std::to_string(::getpid()) + "_" + name;
  }
};

TEST_F(SwfFileTest, ReadsPlainAndGzipAndRefusesCorruptOrMissingFiles) {
  const std::string text = "; MaxProcs: 4\n" + SwfLine(1, 0, 10, 2) + SwfLine(2, 5, 10, 1);
  const std::string plain = Path("plain.swf");
  std::ofstream(plain) << text;
  const std::string gz = Path("log.swf.gz");
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  for (const std::string& path : {plain, gz}) {
    absl::StatusOr<Trace> t = ReadSwf(path, 1);
    ASSERT_TRUE(t.ok()) << path << ": " << t.status();
    EXPECT_EQ(t->jobs.size(), 2u);
    EXPECT_EQ(t->max_procs, 4u);
    EXPECT_EQ(t->source, path);
  }
  // A gzip header followed by garbage.
  const std::string bad = Path("bad.swf.gz");
  std::ofstream(bad) << std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10)
                     << "this is not deflate data at all";
  absl::StatusOr<Trace> t = ReadSwf(bad, 1);
  EXPECT_FALSE(t.ok());
  EXPECT_TRUE(absl::IsNotFound(ReadSwf(Path("absent.swf"), 1).status()));
  std::remove(plain.c_str());
  std::remove(gz.c_str());
  std::remove(bad.c_str());
}

TEST(CsvTest, ReadsColumnsByTheirOwnNames) {
  absl::StatusOr<Trace> t = ParseCsv(
      "id,user,submit,ipus,duration,requested\n"
      "a,alice,0,4,100,300\n"
      "\"b,2\",\"bo\"\"b\",10,1,5,\n",
      "t.csv", {}, 1);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].id, "a");
  EXPECT_EQ(t->jobs[0].user, "alice");
  EXPECT_EQ(t->jobs[0].ipus, 4u);
  EXPECT_EQ(t->jobs[0].run, 100);
  EXPECT_EQ(t->jobs[0].requested, 300);
  EXPECT_EQ(t->jobs[1].id, "b,2");
  EXPECT_EQ(t->jobs[1].user, "bo\"b");
  EXPECT_EQ(t->jobs[1].requested, -1);
}

TEST(CsvTest, MapsAHeliosStyleLogWithDateTimesAndEnds) {
  absl::StatusOr<ColumnMap> columns = ParseColumnMap(
      "id=job_id,submit=submit_time,ipus=gpu_num,start=start_time,end=end_time,user=user");
  ASSERT_TRUE(columns.ok()) << columns.status();
  absl::StatusOr<Trace> t = ParseCsv(
      "job_id,user,vc,gpu_num,submit_time,start_time,end_time,state\n"
      "j1,u1,vc1,8,2020-04-01 10:00:00,2020-04-01 10:05:00,2020-04-01 11:05:00,COMPLETED\n"
      "j2,u2,vc1,2,2020-04-01 09:00:00,2020-04-01 09:00:00,2020-04-01 09:00:30,COMPLETED\n",
      "helios.csv", *columns, 1);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->jobs.size(), 2u);
  // Times count from the earliest submit; the run is end - start.
  EXPECT_EQ(t->jobs[0].submit, 3600);
  EXPECT_EQ(t->jobs[0].run, 3600);
  EXPECT_EQ(t->jobs[1].submit, 0);
  EXPECT_EQ(t->jobs[1].run, 30);
  EXPECT_EQ(t->jobs[0].ipus, 8u);
}

TEST(CsvTest, AMappedEndWinsOverADurationColumnFoundByItsName) {
  const std::string text = "submit,ipus,start_time,end_time,duration\n0,1,10,110,7\n";
  absl::StatusOr<Trace> t =
      ParseCsv(text, "t.csv", {{"start", "start_time"}, {"end", "end_time"}}, 1);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->jobs[0].run, 100);
  t = ParseCsv(text, "t.csv", {}, 1);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->jobs[0].run, 7);
}

TEST(CsvTest, EndWithoutStartCountsFromSubmitAndIpusPerProcMultiplies) {
  absl::StatusOr<Trace> t = ParseCsv("submit,ipus,end\n10,3,70\n", "t.csv", {}, 2);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->jobs[0].run, 60);
  EXPECT_EQ(t->jobs[0].ipus, 6u);
  EXPECT_EQ(t->jobs[0].id, "line2");
}

TEST(CsvTest, ModelAndStepsInsteadOfARunTime) {
  absl::StatusOr<Trace> t = ParseCsv(
      "id,submit,ipus,model,steps,ipus_per_replica\nm,0,16,bert-large,1000,4\n", "t.csv", {}, 1);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->jobs[0].model, "bert-large");
  EXPECT_EQ(t->jobs[0].steps, 1000u);
  EXPECT_EQ(t->jobs[0].ipus_per_replica, 4u);
  EXPECT_LT(t->jobs[0].run, 0);
  for (const char* steps : {"0", "1.5", "-3"}) {
    absl::StatusOr<Trace> bad =
        ParseCsv(std::string("id,submit,ipus,model,steps\nm,0,16,bert-large,") + steps + "\n",
                 "t.csv", {}, 1);
    EXPECT_FALSE(bad.ok()) << steps;
  }
}

TEST(CsvTest, RowsThatCannotBeJobsAreSkippedByReason) {
  absl::StatusOr<Trace> t = ParseCsv(
      "id,submit,ipus,duration,end\n"
      "a,0,0,10,\n"      // no IPUs
      "b,0,,10,\n"       // no IPUs
      "c,0,4,,\n"        // no end
      "d,0,4,NA,None\n"  // no end
      "e,0,4,-5,\n"      // negative run time
      "f,5,4,,2\n"       // ends before it was submitted
      "g,0,4,10,\n",
      "t.csv", {}, 1);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].id, "g");
  EXPECT_EQ(t->skipped[kSkipNoIpus], 2u);
  EXPECT_EQ(t->skipped[kSkipNoEnd], 2u);
  EXPECT_EQ(t->skipped[kSkipNegativeRun], 2u);
}

TEST(CsvTest, InvalidLinesNameTheFileAndLine) {
  const std::string header = "id,submit,ipus,duration\n";
  struct Case {
    std::string rows;
    std::string message;
  } cases[] = {
      {"a,0,4\n", "t.csv:2: the header has 4 fields, this row has 3"},
      {"a,0,4,10,11\n", "t.csv:2: the header has 4 fields, this row has 5"},
      {"a,0,4,10\nb,0,four,10\n", "t.csv:3: ipus (column ipus): expected a number, got \"four\""},
      {"a,zero,4,10\n", "t.csv:2: submit (column submit): expected seconds"},
      {"a,0,4,ten\n", "t.csv:2: duration (column duration): expected a number"},
      {"a,,4,10\n", "t.csv:2: submit: missing"},
      {"\"a,0,4,10\n", "t.csv:2: a quote is not closed"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Trace> t = ParseCsv(header + c.rows, "t.csv", {}, 1);
    ASSERT_FALSE(t.ok()) << c.rows;
    EXPECT_TRUE(absl::IsInvalidArgument(t.status()));
    EXPECT_THAT(t.status().message(), HasSubstr(c.message)) << c.rows;
  }
}

TEST(CsvTest, AHeaderWithoutWhatAJobNeedsIsRefused) {
  EXPECT_THAT(ParseCsv("", "t.csv", {}, 1).status().message(), HasSubstr("no header"));
  EXPECT_THAT(ParseCsv("id,ipus,duration\n", "t.csv", {}, 1).status().message(),
              HasSubstr("no submit column"));
  EXPECT_THAT(ParseCsv("id,submit,duration\n", "t.csv", {}, 1).status().message(),
              HasSubstr("no ipus column"));
  EXPECT_THAT(ParseCsv("id,submit,ipus\n", "t.csv", {}, 1).status().message(),
              HasSubstr("no run time"));
  EXPECT_THAT(
      ParseCsv("id,submit,ipus,duration\n", "t.csv", {{"ipus", "num_gpu"}}, 1).status().message(),
      HasSubstr("column \"num_gpu\" (ipus=) is not in the header"));
  EXPECT_FALSE(ParseCsv("id,submit,ipus,duration\n", "t.csv", {}, 0).ok());
}

TEST(ColumnMapTest, RefusesEveryBadForm) {
  EXPECT_TRUE(ParseColumnMap("").ok());
  EXPECT_TRUE(ParseColumnMap("ipus=num_gpu, submit = t").ok());
  for (const char* bad : {"ipus", "ipus=", "gpus=num_gpu", "ipus=a,ipus=b", "=x"}) {
    absl::StatusOr<ColumnMap> m = ParseColumnMap(bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_THAT(m.status().message(), HasSubstr("columns:")) << bad;
  }
}

}  // namespace
}  // namespace vipu::plan
