// history-check FILE, run as a program: its verdicts, its exit statuses,
// and a clear refusal of each bad argument and file.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::history {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

struct Exit {
  int status = -1;
  std::string out;
  std::string err;
};

class HistoryCheckTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.File(name);
    std::ofstream(path) << text;
    return path;
  }

  Exit Check(const std::string& args) {
    const std::string out = dir_.File("out"), err = dir_.File("err");
    const std::string command =
        std::string(HISTORY_CHECK_BIN) + " " + args + " >" + out + " 2>" + err;
    const int raw = std::system(command.c_str());
    Exit run;
    run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    run.out = Read(out);
    run.err = Read(err);
    return run;
  }

 private:
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  test::TempDir dir_{"vipu-history-check"};
};

TEST_F(HistoryCheckTest, LinearizableHistoryExitsZero) {
  const std::string path = Write("h", "# legal\n1 10 20 create p1 ok\n2 30 40 list - ok p1\n");
  const Exit run = Check(path);
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_THAT(run.out, AllOf(HasSubstr("2 operations, 2 checked"), HasSubstr("linearizable")));
}

TEST_F(HistoryCheckTest, ViolationExitsOneAndSaysWhy) {
  const std::string path = Write(
      "h",
      "1 10000 20000 create p3 ok\n1 30000 40000 remove p3 ok\n2 50000 60000 get p3 ok found\n");
  const Exit run = Check(path);
  EXPECT_EQ(run.status, 1) << run.err;
  EXPECT_THAT(
      run.out,
      AllOf(HasSubstr(
                "NOT linearizable: get p3 by client 2 at [0.000040 s, 0.000050 s] found p3, but p3 "
                "was gone: create p3 by client 1"),
            HasSubstr("p3 was gone"), HasSubstr("involved"), HasSubstr(": 2 0 1\n")));
}

TEST_F(HistoryCheckTest, UndecidedWithinTheLimitExitsThree) {
  std::string text, all;
  for (int i = 0; i < 20; ++i) {
    text += std::to_string(i) + " 0 100 create p" + std::to_string(i) + " ok\n";
    all += (i == 0 ? "p" : ",p") + std::to_string(i);
  }
  text += "30 10 190 list - ok " + all + "\n";
  const std::string path = Write("h", text);
  EXPECT_EQ(Check(path).status, 0);
  const Exit run = Check("--max-configurations=10 " + path);
  EXPECT_EQ(run.status, 3) << run.out;
  EXPECT_THAT(run.err, HasSubstr("neither proven nor refuted"));
}

TEST_F(HistoryCheckTest, EachBadArgumentIsRefusedWithUsage) {
  const std::string path = Write("h", "1 10 20 create p1 ok\n");
  const struct {
    std::string args;
    const char* says;
  } cases[] = {
      {"", "no FILE given"},
      {path + " " + path, "one FILE only"},
      {"--verbose " + path, "unknown option --verbose"},
      {"--max-configurations=0 " + path, "whole number above 0, not \"0\""},
      {"--max-configurations=many " + path, "not \"many\""},
      {"--max-configurations=-5 " + path, "not \"-5\""},
  };
  for (const auto& c : cases) {
    const Exit run = Check(c.args);
    EXPECT_EQ(run.status, 2) << c.args;
    EXPECT_THAT(run.err, AllOf(HasSubstr(c.says), HasSubstr("usage: history-check"))) << c.args;
    EXPECT_EQ(run.out, "") << c.args;
  }
}

TEST_F(HistoryCheckTest, HelpExitsZero) {
  const Exit run = Check("--help");
  EXPECT_EQ(run.status, 0);
  EXPECT_THAT(run.out, HasSubstr("usage: history-check"));
}

TEST_F(HistoryCheckTest, UnreadableOrMalformedFileExitsTwo) {
  Exit run = Check(Write("h", "1 10 20 create p1 ok\n1 10 5 get p1 ok found\n"));
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, AllOf(HasSubstr(":2: "), HasSubstr("before its invocation")));
  run = Check(Write("h", "") + ".missing");
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, HasSubstr("cannot read"));
}

}  // namespace
}  // namespace vipu::history
