// The named state transitions of a partition.
#include "server/control/partition_transitions.h"

#include <utility>

#include "absl/time/clock.h"

namespace vipu::server {

void ToPending(fabric::Partition* p, uint64_t generation, fabric::OperationState operation,
               int64_t now_ms) {
  p->generation = generation;
  p->ready_state = fabric::ReadyState::kPending;
  p->operation_state = operation;
  p->errors.clear();
  p->updated_unix_ms = now_ms;
}

void ToActive(fabric::Partition* p, int64_t now_ms) {
  p->ready_state = fabric::ReadyState::kActive;
  p->operation_state = fabric::OperationState::kIdle;
  p->errors.clear();
  p->updated_unix_ms = now_ms;
}

void ToError(fabric::Partition* p, std::vector<std::string> errors, int64_t now_ms) {
  p->ready_state = fabric::ReadyState::kError;
  p->operation_state = fabric::OperationState::kFailed;
  p->errors = std::move(errors);
  p->updated_unix_ms = now_ms;
}

void ToRemoving(fabric::Partition* p, int64_t now_ms) {
  p->operation_state = fabric::OperationState::kRemoving;
  p->updated_unix_ms = now_ms;
}

void ToOutcome(fabric::Partition* p, std::vector<std::string> errors, int64_t now_ms) {
  if (errors.empty()) {
    ToActive(p, now_ms);
  } else {
    ToError(p, std::move(errors), now_ms);
  }
}

int64_t NowUnixMs() { return absl::ToUnixMillis(absl::Now()); }

}  // namespace vipu::server
