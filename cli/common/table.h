// Text rendering of the CLIs' tables and key/value boxes in the shapes
// Graphcore's vipu and vipu-admin print, which scripts parse
// (`grep ACTIVE | cut -d '|' -f 1`). Every cell is " " + value padded to
// the column width + " ", cells are joined by "|", and the last column is
// padded too, so each full line is exactly as long as the dashed rules.
#ifndef VIPU_CLI_COMMON_TABLE_H_
#define VIPU_CLI_COMMON_TABLE_H_

#include <string>
#include <utility>
#include <vector>

namespace vipu::cli {

struct Column {
  std::string header;
  // Lower bound on the width; the width is max(min_width, header, values).
  size_t min_width = 0;
};

enum class TableStyle {
  // header, rule, rows, rule (`list partitions`, `list ipu-attrs`).
  kHeaderFirst,
  // rule, header, rule, rows, rule (`list allocations`).
  kRuleFirst,
};

// Holds its columns and rows by value. Not thread-safe: one command fills and
// renders it.
class Table {
 public:
  Table(std::vector<Column> columns, TableStyle style = TableStyle::kHeaderFirst);

  // Missing cells render blank; extra cells are an error of the caller and
  // are dropped.
  void AddRow(std::vector<std::string> cells);
  size_t num_rows() const { return rows_.size(); }

  // Newline-terminated lines.
  std::string Render() const;

 private:
  std::vector<Column> columns_;
  TableStyle style_;
  std::vector<std::vector<std::string>> rows_;
};

// The key/value box of `vipu-admin get agent`: rule,
// " key | value" lines with keys padded to the longest key, rule.
std::string RenderKeyValueBox(const std::vector<std::pair<std::string, std::string>>& rows);

// A value that may be empty as the CLIs print it in tables and key/value
// boxes: "-" when it is empty.
std::string OrDash(const std::string& s);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_TABLE_H_
