// Renders poprun's --print-topology table of hosts, ILDs, instances and replicas.
#include "poprun/poprun_topology.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace vipu::poprun {
namespace {

constexpr size_t kLabelWidth = 9;  // "instances"

std::string Centre(const std::string& text, size_t width) {
  if (text.size() >= width) return text;
  const size_t left = (width - text.size()) / 2;
  return std::string(left, ' ') + text + std::string(width - text.size() - left, ' ');
}

std::string Label(const std::string& label) {
  return absl::StrCat("| ", label, std::string(kLabelWidth - label.size(), ' '), " |");
}

}  // namespace

std::string RenderTopology(const std::vector<std::string>& hosts, uint32_t num_ilds,
                           uint32_t num_instances, uint32_t num_replicas) {
  num_ilds = std::max<uint32_t>(num_ilds, 1);
  std::vector<std::string> ilds, instances;
  for (uint32_t i = 0; i < num_ilds; ++i) ilds.push_back(absl::StrCat(i));
  for (uint32_t i = 0; i < num_instances; ++i) instances.push_back(absl::StrCat(i));
  struct Row {
    const char* label;
    const std::vector<std::string>* cells;
  };
  const std::vector<Row> rows = {{"hosts", &hosts}, {"ILDs", &ilds}, {"instances", &instances}};

  // A replica cell is " " + index padded to `digits` + " |"; a group of n
  // cells spans n * (digits + 3) - 1 characters before its closing '|'.
  size_t digits = absl::StrCat(num_replicas - 1).size();
  for (const Row& row : rows) {
    const size_t per_group = num_replicas / row.cells->size();
    for (const std::string& text : *row.cells) {
      while (per_group * (digits + 3) - 1 < text.size() + 2) ++digits;
    }
  }
  const size_t data_width = num_replicas * (digits + 3);  // with the '|'s
  const size_t width = kLabelWidth + 4 + data_width;

  std::string out;
  absl::StrAppend(&out, " ", std::string(width - 2, '='), "\n");
  absl::StrAppend(&out, "|", Centre("poprun topology", width - 2), "|\n");
  absl::StrAppend(&out, "|", std::string(width - 2, '='), "|\n");
  const std::string separator = absl::StrCat("|", std::string(kLabelWidth + 2, '-'), "|",
                                             std::string(data_width - 1, '-'), "|\n");
  for (const Row& row : rows) {
    const size_t span = (num_replicas / row.cells->size()) * (digits + 3) - 1;
    out += Label(row.label);
    for (const std::string& text : *row.cells) absl::StrAppend(&out, Centre(text, span), "|");
    out += "\n" + separator;
  }
  out += Label("replicas");
  for (uint32_t r = 0; r < num_replicas; ++r) {
    std::string index = absl::StrCat(r);
    absl::StrAppend(&out, " ", index, std::string(digits - index.size(), ' '), " |");
  }
  absl::StrAppend(&out, "\n ", std::string(width - 2, '-'), "\n");
  return out;
}

}  // namespace vipu::poprun
