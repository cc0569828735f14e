// The text form of a history: one line per operation, read and written.
#include "tests/history/history_file.h"

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace vipu::history {
namespace {

constexpr char kHeader[] =
    "# vipu history: client invoke_ns complete_ns kind partition result [answer]";

bool HasAnswer(const Operation& op) {
  return op.result == Result::kOk && (op.kind == OpKind::kGet || op.kind == OpKind::kList);
}

template <typename Enum>
bool ParseWord(absl::string_view word, Enum last, const char* (*name)(Enum), Enum* out) {
  for (int i = 0; i <= static_cast<int>(last); ++i) {
    if (word == name(static_cast<Enum>(i))) {
      *out = static_cast<Enum>(i);
      return true;
    }
  }
  return false;
}

}  // namespace

std::string FormatOperation(const Operation& op) {
  std::string line =
      absl::StrCat(op.client, " ", op.invoke_ns, " ", op.complete_ns, " ", OpKindName(op.kind), " ",
                   op.partition.empty() ? "-" : op.partition, " ", ResultName(op.result));
  if (HasAnswer(op)) {
    if (op.kind == OpKind::kGet) {
      absl::StrAppend(&line, op.found ? " found" : " absent");
    } else {
      absl::StrAppend(&line, " ", op.listed.empty() ? "-" : absl::StrJoin(op.listed, ","));
    }
  }
  return line;
}

absl::StatusOr<Operation> ParseOperation(absl::string_view line) {
  std::vector<absl::string_view> fields = absl::StrSplit(line, ' ');
  if (fields.size() < 6 || fields.size() > 7) {
    return absl::InvalidArgumentError(
        absl::StrCat("has ", fields.size(),
                     " fields; expected 6 or 7 separated by single spaces: client "
                     "invoke_ns complete_ns kind partition result [answer]"));
  }
  for (size_t i = 0; i < fields.size(); ++i) {
    if (fields[i].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("field ", i + 1, " is empty; fields are separated by single spaces"));
    }
  }
  Operation op;
  if (!absl::SimpleAtoi(fields[0], &op.client)) {
    return absl::InvalidArgumentError(
        absl::StrCat("client \"", fields[0], "\" is not a whole number"));
  }
  if (!absl::SimpleAtoi(fields[1], &op.invoke_ns)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invoke_ns \"", fields[1], "\" is not a whole number of nanoseconds"));
  }
  if (!absl::SimpleAtoi(fields[2], &op.complete_ns)) {
    return absl::InvalidArgumentError(
        absl::StrCat("complete_ns \"", fields[2], "\" is not a whole number of nanoseconds"));
  }
  if (!ParseWord(fields[3], OpKind::kList, &OpKindName, &op.kind)) {
    return absl::InvalidArgumentError(
        absl::StrCat("kind \"", fields[3], "\" is none of create, remove, get, list"));
  }
  if (fields[4] != "-") op.partition = std::string(fields[4]);
  if (!ParseWord(fields[5], Result::kUnknown, &ResultName, &op.result)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "result \"", fields[5], "\" is none of ok, already_exists, not_found, refused, unknown"));
  }
  const bool answer = fields.size() == 7;
  if (answer != HasAnswer(op)) {
    return absl::InvalidArgumentError(
        answer ? absl::StrCat("has an answer \"", fields[6], "\", which only an answered get or ",
                              "list has")
               : absl::StrCat("an answered ", OpKindName(op.kind), " needs its answer (",
                              op.kind == OpKind::kGet ? "found or absent" : "ids, or -", ")"));
  }
  if (answer && op.kind == OpKind::kGet) {
    if (fields[6] != "found" && fields[6] != "absent") {
      return absl::InvalidArgumentError(
          absl::StrCat("get answer \"", fields[6], "\" is neither found nor absent"));
    }
    op.found = fields[6] == "found";
  } else if (answer && fields[6] != "-") {
    for (absl::string_view id : absl::StrSplit(fields[6], ',')) {
      op.listed.emplace_back(id);
    }
  }
  if (absl::Status s = ValidateOperation(op); !s.ok()) return s;
  return op;
}

absl::Status WriteHistory(const std::vector<Operation>& history, std::ostream& out) {
  for (size_t i = 0; i < history.size(); ++i) {
    if (absl::Status s = ValidateOperation(history[i]); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("operation ", i, ": ", s.message()));
    }
  }
  out << kHeader << "\n";
  for (const Operation& op : history) out << FormatOperation(op) << "\n";
  out.flush();
  if (!out) return absl::InternalError("writing the history failed");
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Operation>> ReadHistory(std::istream& in, absl::string_view source) {
  std::vector<Operation> history;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    absl::string_view text = absl::StripSuffix(line, "\r");
    if (text.empty() || text[0] == '#') continue;
    absl::StatusOr<Operation> op = ParseOperation(text);
    if (!op.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", number, ": ", op.status().message()));
    }
    history.push_back(*std::move(op));
  }
  if (in.bad()) return absl::InternalError(absl::StrCat(source, ": reading failed"));
  return history;
}

absl::Status WriteHistoryFile(const std::string& path, const std::vector<Operation>& history) {
  for (size_t i = 0; i < history.size(); ++i) {
    if (absl::Status s = ValidateOperation(history[i]); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not written: operation ", i, ": ", s.message()));
    }
  }
  // Written beside it and renamed, so a reader never sees half a history.
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::trunc);
    if (!out) {
      const int error = errno;
      return absl::ErrnoToStatus(error, absl::StrCat("cannot write ", partial));
    }
    if (absl::Status s = WriteHistory(history, out); !s.ok()) {
      std::remove(partial.c_str());
      return absl::Status(s.code(), absl::StrCat(partial, ": ", s.message()));
    }
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(partial.c_str());
    return absl::ErrnoToStatus(error, absl::StrCat("cannot rename ", partial, " to ", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Operation>> ReadHistoryFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    const int error = errno;
    return absl::ErrnoToStatus(error, absl::StrCat("cannot read ", path));
  }
  return ReadHistory(in, path);
}

}  // namespace vipu::history
