// The words of a history's operations, their validation, and the recorder.
#include "tests/history/history.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace vipu::history {

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kCreate:
      return "create";
    case OpKind::kRemove:
      return "remove";
    case OpKind::kGet:
      return "get";
    case OpKind::kList:
      return "list";
  }
  return "?";
}

const char* ResultName(Result result) {
  switch (result) {
    case Result::kOk:
      return "ok";
    case Result::kAlreadyExists:
      return "already_exists";
    case Result::kNotFound:
      return "not_found";
    case Result::kRefused:
      return "refused";
    case Result::kUnknown:
      return "unknown";
  }
  return "?";
}

Result ResultOfStatus(const absl::Status& status, bool nothing_done) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return Result::kOk;
    case absl::StatusCode::kAlreadyExists:
      return Result::kAlreadyExists;
    case absl::StatusCode::kNotFound:
      return Result::kNotFound;
    // Refused after validation and before anything changed.
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kUnimplemented:
      return Result::kRefused;
    case absl::StatusCode::kUnavailable:
      return nothing_done ? Result::kRefused : Result::kUnknown;
    default:
      return Result::kUnknown;
  }
}

namespace {

absl::Status CheckId(const std::string& id, const char* what) {
  if (id.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " has no partition id"));
  for (char c : id) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',') {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " names partition id \"", id, "\", which has whitespace or a comma"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateOperation(const Operation& op) {
  const std::string what = absl::StrCat(OpKindName(op.kind), " by client ", op.client);
  if (op.complete_ns < op.invoke_ns) {
    return absl::InvalidArgumentError(absl::StrCat(what, " completes at ", op.complete_ns,
                                                   " ns, before its invocation at ", op.invoke_ns,
                                                   " ns"));
  }
  if (op.kind == OpKind::kList) {
    if (!op.partition.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " names partition \"", op.partition, "\"; a list names none"));
    }
    for (const std::string& id : op.listed) {
      if (absl::Status s = CheckId(id, what.c_str()); !s.ok()) return s;
    }
  } else {
    if (absl::Status s = CheckId(op.partition, what.c_str()); !s.ok()) return s;
  }
  const bool answered_list = op.kind == OpKind::kList && op.result == Result::kOk;
  if (!answered_list && !op.listed.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " (", ResultName(op.result), ") lists ids; only an answered list can"));
  }
  if (op.found && !(op.kind == OpKind::kGet && op.result == Result::kOk)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " (", ResultName(op.result), ") says found; only an answered get can"));
  }
  if (op.result == Result::kAlreadyExists && op.kind != OpKind::kCreate) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has result already_exists, which only a create can have"));
  }
  if (op.result == Result::kNotFound && op.kind != OpKind::kRemove && op.kind != OpKind::kGet) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has result not_found, which only a remove or a get can have"));
  }
  return absl::OkStatus();
}

std::string DescribeOperation(const Operation& op, int64_t origin_ns) {
  auto seconds = [origin_ns](int64_t ns) {
    return absl::StrFormat("%.6f s", static_cast<double>(ns - origin_ns) / 1e9);
  };
  std::string text = OpKindName(op.kind);
  if (!op.partition.empty()) absl::StrAppend(&text, " ", op.partition);
  absl::StrAppend(&text, " by client ", op.client, " at [", seconds(op.invoke_ns), ", ");
  if (op.result == Result::kUnknown) {
    absl::StrAppend(&text, "gave up ", seconds(op.complete_ns), "]");
  } else {
    absl::StrAppend(&text, seconds(op.complete_ns), "]");
  }
  switch (op.result) {
    case Result::kOk:
      if (op.kind == OpKind::kGet) {
        absl::StrAppend(&text, op.found ? " found " : " did not find ", op.partition);
      } else if (op.kind == OpKind::kList) {
        // A soak run's lists are long; a message names the first few.
        constexpr size_t kShown = 8;
        if (op.listed.size() <= kShown) {
          absl::StrAppend(&text, " returned {", absl::StrJoin(op.listed, ","), "}");
        } else {
          std::vector<std::string> first(op.listed.begin(), op.listed.begin() + kShown);
          absl::StrAppend(&text, " returned ", op.listed.size(), " ids {",
                          absl::StrJoin(first, ","), ",...}");
        }
      } else {
        absl::StrAppend(&text, " acknowledged");
      }
      break;
    case Result::kAlreadyExists:
      absl::StrAppend(&text, " got ALREADY_EXISTS");
      break;
    case Result::kNotFound:
      absl::StrAppend(&text, op.kind == OpKind::kGet ? " did not find " : " got NOT_FOUND",
                      op.kind == OpKind::kGet ? op.partition : "");
      break;
    case Result::kRefused:
      absl::StrAppend(&text, " refused with nothing done");
      break;
    case Result::kUnknown:
      absl::StrAppend(&text, " with its outcome unknown");
      break;
  }
  return text;
}

HistoryRecorder::HistoryRecorder(std::function<int64_t()> now_ns)
    : now_ns_(now_ns ? std::move(now_ns) : [] {
        return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
      }) {}

HistoryRecorder::Handle HistoryRecorder::Invoke(int client, OpKind kind, std::string partition) {
  MutexLock lock(&mu_);
  Entry entry;
  entry.op.client = client;
  entry.op.kind = kind;
  entry.op.partition = std::move(partition);
  // Read under the lock, so that the order of the entries is the order of
  // their invocation times.
  entry.op.invoke_ns = now_ns_();
  entries_.push_back(std::move(entry));
  return entries_.size() - 1;
}

void HistoryRecorder::Complete(Handle handle, Result result) { Finish(handle, result, false, {}); }

void HistoryRecorder::CompleteGet(Handle handle, bool found) {
  Finish(handle, Result::kOk, found, {});
}

void HistoryRecorder::CompleteList(Handle handle, std::vector<std::string> ids) {
  Finish(handle, Result::kOk, false, std::move(ids));
}

void HistoryRecorder::Finish(Handle handle, Result result, bool found,
                             std::vector<std::string> ids) {
  const int64_t now = now_ns_();
  MutexLock lock(&mu_);
  if (handle >= entries_.size() || entries_[handle].completed) return;
  Entry& entry = entries_[handle];
  entry.completed = true;
  entry.op.complete_ns = now;
  entry.op.result = result;
  entry.op.found = found;
  entry.op.listed = std::move(ids);
}

std::vector<Operation> HistoryRecorder::Operations() const {
  const int64_t now = now_ns_();
  MutexLock lock(&mu_);
  std::vector<Operation> ops;
  ops.reserve(entries_.size());
  for (const Entry& entry : entries_) {
    ops.push_back(entry.op);
    if (!entry.completed) {
      ops.back().result = Result::kUnknown;
      ops.back().complete_ns = std::max(now, entry.op.invoke_ns);
    }
  }
  return ops;
}

}  // namespace vipu::history
