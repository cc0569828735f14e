// Handover: the record a stopping leader leaves its successor, as text.
#include "server/daemon/handover.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/absl_view.h"
#include "fabric/enum_names.h"
#include "fabric/validation.h"

namespace vipu::server {
namespace {

constexpr char kHeader[] = "open-vipu-handover 1";

absl::Status BadLine(size_t line, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("handover line ", line, ": ", why));
}

bool ParsePort(absl::string_view text, uint32_t* port) {
  return absl::SimpleAtoi(text, port) && *port <= 65535;
}

}  // namespace

std::string EncodeHandover(const Handover& handover) {
  std::string out = absl::StrCat(kHeader, " ", absl::ToUnixMillis(handover.made));
  if (!handover.successor.empty()) absl::StrAppend(&out, " ", handover.successor);
  out += "\n";
  for (const LiveAgent& a : handover.agents) {
    absl::StrAppend(&out, a.id, " ", a.host, " ", a.port, " ", a.ipuof_port, " ", a.rdma_port, " ",
                    fabric::CliName(a.machine_type), "\n");
  }
  return out;
}

absl::StatusOr<Handover> DecodeHandover(std::string_view text) {
  std::vector<absl::string_view> lines = absl::StrSplit(AbslView(text), '\n', absl::SkipEmpty());
  if (lines.empty()) return BadLine(1, "empty");
  std::vector<absl::string_view> head = absl::StrSplit(lines[0], ' ');
  int64_t ms = 0;
  if (head.size() < 3 || head.size() > 4 || absl::StrCat(head[0], " ", head[1]) != kHeader ||
      !absl::SimpleAtoi(head[2], &ms) || (head.size() == 4 && head[3].empty())) {
    return BadLine(1, absl::StrCat("expected '", kHeader, " <unix ms> [successor]'"));
  }
  Handover handover;
  handover.made = absl::FromUnixMillis(ms);
  if (head.size() == 4) handover.successor = std::string(head[3]);
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<absl::string_view> f = absl::StrSplit(lines[i], ' ');
    if (f.size() != 6) return BadLine(i + 1, "expected 'id host port ipuof_port rdma_port type'");
    LiveAgent a;
    a.id = std::string(f[0]);
    if (absl::Status s = fabric::ValidateId("id", a.id); !s.ok())
      return BadLine(i + 1, s.message());
    a.host = std::string(f[1]);
    if (a.host.empty()) return BadLine(i + 1, "empty host");
    if (!ParsePort(f[2], &a.port) || !ParsePort(f[3], &a.ipuof_port) ||
        !ParsePort(f[4], &a.rdma_port)) {
      return BadLine(i + 1, "a port is not 0..65535");
    }
    absl::StatusOr<fabric::MachineType> type =
        fabric::ParseMachineType(std::string_view(f[5].data(), f[5].size()));
    if (!type.ok()) return BadLine(i + 1, type.status().message());
    a.machine_type = *type;
    handover.agents.push_back(std::move(a));
  }
  return handover;
}

}  // namespace vipu::server
