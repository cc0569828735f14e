#include "cli/table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace vipu::cli {
namespace {

std::string Line(const std::vector<std::string>& cells, const std::vector<size_t>& widths) {
  std::string line;
  for (size_t i = 0; i < widths.size(); ++i) {
    const std::string empty;
    const std::string& cell = i < cells.size() ? cells[i] : empty;
    if (i > 0) line += "|";
    absl::StrAppend(&line, " ", cell, std::string(widths[i] - cell.size(), ' '), " ");
  }
  line += "\n";
  return line;
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
  if (style_ == TableStyle::kRuleFirst) out += rule;
  out += Line(header, widths);
  out += rule;
  for (const auto& row : rows_) out += Line(row, widths);
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
  for (const auto& [key, value] : rows) out += Line({key, value}, widths);
  out += rule;
  return out;
}

}  // namespace vipu::cli
