// Table, RenderKeyValueBox and OrDash: the CLIs' fixed-width tables, key/value boxes and cells.
#include "cli/common/table.h"

#include <algorithm>

namespace vipu::cli {
namespace {

// Appends " " + cell padded to the width + " " per column, joined by "|",
// and a newline; straight into `out` (a table of 10,000 rows is one string).
void AppendLine(const std::vector<std::string>& cells, const std::vector<size_t>& widths,
                std::string* out) {
  for (size_t i = 0; i < widths.size(); ++i) {
    if (i > 0) out->push_back('|');
    out->push_back(' ');
    size_t size = 0;
    if (i < cells.size()) {
      out->append(cells[i]);
      size = cells[i].size();
    }
    out->append(widths[i] - size + 1, ' ');
  }
  out->push_back('\n');
}

std::string Rule(const std::vector<size_t>& widths) {
  size_t length = widths.empty() ? 0 : widths.size() - 1;  // separators
  for (size_t w : widths) length += w + 2;
  return std::string(length, '-') + "\n";
}

}  // namespace

Table::Table(std::vector<Column> columns, TableStyle style)
    : columns_(std::move(columns)), style_(style) {}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string Table::Render() const {
  std::vector<size_t> widths;
  std::vector<std::string> header;
  for (const Column& c : columns_) {
    widths.push_back(std::max(c.min_width, c.header.size()));
    header.push_back(c.header);
  }
  for (const auto& row : rows_) {
    for (size_t i = 0; i < widths.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string rule = Rule(widths);
  std::string out;
  out.reserve(rule.size() * (rows_.size() + 4));  // every line is as long as the rule
  if (style_ == TableStyle::kRuleFirst) out += rule;
  AppendLine(header, widths, &out);
  out += rule;
  for (const auto& row : rows_) AppendLine(row, widths, &out);
  out += rule;
  return out;
}

std::string RenderKeyValueBox(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::vector<size_t> widths{0, 0};
  for (const auto& [key, value] : rows) {
    widths[0] = std::max(widths[0], key.size());
    widths[1] = std::max(widths[1], value.size());
  }
  std::string rule = Rule(widths);
  std::string out = rule;
  for (const auto& [key, value] : rows) AppendLine({key, value}, widths, &out);
  out += rule;
  return out;
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

}  // namespace vipu::cli
