// NothingDone: the "refused before anything was done" mark as a status payload.
#include "base/nothing_done.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace vipu {
namespace {
constexpr char kNothingDoneUrl[] = "type.vipu.dev/nothing-done";
}  // namespace

absl::Status NothingDone(absl::Status status, int64_t retry_after_ms) {
  if (!status.ok()) status.SetPayload(kNothingDoneUrl, absl::Cord(absl::StrCat(retry_after_ms)));
  return status;
}

int64_t NothingDoneRetryAfterMs(const absl::Status& status) {
  const auto payload = status.GetPayload(kNothingDoneUrl);
  int64_t ms = -1;
  if (!payload || !absl::SimpleAtoi(std::string(*payload), &ms)) return -1;
  return ms;
}

}  // namespace vipu
