// The history file: every kind and result survive a write and a read, and
// each malformed line or file is refused with its line and field.
#include "tests/history/history_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::history {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

Operation Make(int client, int64_t from, int64_t to, OpKind kind, std::string partition,
               Result result) {
  Operation op;
  op.client = client;
  op.invoke_ns = from;
  op.complete_ns = to;
  op.kind = kind;
  op.partition = std::move(partition);
  op.result = result;
  return op;
}

std::vector<Operation> EveryShape() {
  std::vector<Operation> ops = {
      Make(1, 1000, 2000, OpKind::kCreate, "p1", Result::kOk),
      Make(2, 1500, 9000, OpKind::kCreate, "p2", Result::kUnknown),
      Make(2, 9100, 9200, OpKind::kCreate, "p2", Result::kAlreadyExists),
      Make(3, 3000, 3100, OpKind::kRemove, "p9", Result::kNotFound),
      Make(3, 3200, 3300, OpKind::kRemove, "p1", Result::kRefused),
      Make(4, 4000, 4100, OpKind::kGet, "p1", Result::kOk),
      Make(4, 4200, 4300, OpKind::kGet, "p2", Result::kOk),
      Make(4, 4400, 4500, OpKind::kGet, "p3", Result::kNotFound),
      Make(5, 5000, 5100, OpKind::kList, "", Result::kOk),
      Make(5, 5200, 5300, OpKind::kList, "", Result::kOk),
      Make(5, 5400, 5500, OpKind::kList, "", Result::kUnknown),
  };
  ops[5].found = true;
  ops[9].listed = {"p1", "p2"};
  return ops;
}

void ExpectSame(const std::vector<Operation>& a, const std::vector<Operation>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(FormatOperation(a[i]), FormatOperation(b[i])) << i;
    EXPECT_EQ(a[i].client, b[i].client);
    EXPECT_EQ(a[i].kind, b[i].kind);
    EXPECT_EQ(a[i].partition, b[i].partition);
    EXPECT_EQ(a[i].invoke_ns, b[i].invoke_ns);
    EXPECT_EQ(a[i].complete_ns, b[i].complete_ns);
    EXPECT_EQ(a[i].result, b[i].result);
    EXPECT_EQ(a[i].found, b[i].found);
    EXPECT_EQ(a[i].listed, b[i].listed);
  }
}

TEST(HistoryFileTest, EveryKindAndResultSurvivesAWriteAndARead) {
  test::TempDir dir("vipu-history");
  const std::string path = dir.File("history.txt");
  ASSERT_TRUE(WriteHistoryFile(path, EveryShape()).ok());
  absl::StatusOr<std::vector<Operation>> read = ReadHistoryFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectSame(*read, EveryShape());
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(HistoryFileTest, LinesAreTheDocumentedOnes) {
  const std::vector<Operation> ops = EveryShape();
  EXPECT_EQ(FormatOperation(ops[0]), "1 1000 2000 create p1 ok");
  EXPECT_EQ(FormatOperation(ops[1]), "2 1500 9000 create p2 unknown");
  EXPECT_EQ(FormatOperation(ops[5]), "4 4000 4100 get p1 ok found");
  EXPECT_EQ(FormatOperation(ops[6]), "4 4200 4300 get p2 ok absent");
  EXPECT_EQ(FormatOperation(ops[7]), "4 4400 4500 get p3 not_found");
  EXPECT_EQ(FormatOperation(ops[8]), "5 5000 5100 list - ok -");
  EXPECT_EQ(FormatOperation(ops[9]), "5 5200 5300 list - ok p1,p2");
}

TEST(HistoryFileTest, CommentsAndBlankLinesAreSkipped) {
  std::istringstream in("# a comment\n\n1 10 20 create p1 ok\r\n# another\n");
  absl::StatusOr<std::vector<Operation>> read = ReadHistory(in, "text");
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].partition, "p1");
}

TEST(HistoryFileTest, EachMalformedFieldIsRefusedByName) {
  struct Case {
    const char* line;
    const char* says;
  };
  const Case cases[] = {
      {"1 10 20 create p1", "has 5 fields"},
      {"1 10 20 create p1 ok extra more", "has 8 fields"},
      {"1  10 20 create p1 ok", "field 2 is empty; fields are separated by single spaces"},
      {"x 10 20 create p1 ok", "client \"x\""},
      {"1 ten 20 create p1 ok", "invoke_ns \"ten\""},
      {"1 10 2.5 create p1 ok", "complete_ns \"2.5\""},
      {"1 10 20 make p1 ok", "kind \"make\""},
      {"1 10 20 create p1 fine", "result \"fine\""},
      {"1 10 20 create p1 ok found", "only an answered get or list"},
      {"1 10 20 get p1 ok", "needs its answer (found or absent)"},
      {"1 10 20 list - ok", "needs its answer (ids, or -)"},
      {"1 10 20 get p1 ok maybe", "neither found nor absent"},
      {"1 30 20 create p1 ok", "before its invocation"},
      {"1 10 20 list p1 ok -", "a list names none"},
      {"1 10 20 create - ok", "has no partition id"},
      {"1 10 20 remove p1 already_exists", "only a create can have"},
      {"1 10 20 create p1 not_found", "only a remove or a get"},
      {"1 10 20 list - ok p1,,p2", "has no partition id"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Operation> op = ParseOperation(c.line);
    EXPECT_EQ(op.status().code(), absl::StatusCode::kInvalidArgument) << c.line;
    EXPECT_THAT(op.status().message(), HasSubstr(c.says)) << c.line;
  }
}

TEST(HistoryFileTest, ReadingNamesTheSourceAndLine) {
  std::istringstream in("# header\n1 10 20 create p1 ok\n1 10 20 create p1 yes\n");
  absl::StatusOr<std::vector<Operation>> read = ReadHistory(in, "h.txt");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), AllOf(HasSubstr("h.txt:3:"), HasSubstr("\"yes\"")));
}

TEST(HistoryFileTest, MissingFileIsNotFound) {
  test::TempDir dir("vipu-history");
  absl::StatusOr<std::vector<Operation>> read = ReadHistoryFile(dir.File("none.txt"));
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(read.status().message(), HasSubstr("none.txt"));
}

TEST(HistoryFileTest, InvalidOperationWritesNothing) {
  test::TempDir dir("vipu-history");
  const std::string path = dir.File("history.txt");
  {
    std::ofstream before(path);
    before << "1 10 20 create p1 ok\n";
  }
  std::vector<Operation> ops = EveryShape();
  ops[3].partition = "has space";
  const absl::Status s = WriteHistoryFile(path, ops);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("operation 3"), HasSubstr("whitespace")));
  absl::StatusOr<std::vector<Operation>> read = ReadHistoryFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(HistoryFileTest, UnwritableDirectoryIsNamed) {
  test::TempDir dir("vipu-history");
  const absl::Status s = WriteHistoryFile(dir.File("no/such/dir/h.txt"), EveryShape());
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("no/such/dir/h.txt"));
}

}  // namespace
}  // namespace vipu::history
