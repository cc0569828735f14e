// The mark of a refusal made before anything was done: the server had not
// acted on the call (a leader that cannot vouch for its lease refused it),
// so a client may send it again, even a change, to this member or another.
// The mark is a payload of the absl::Status, so it passes through every
// layer that returns the status unchanged; a layer that rewrites the status
// drops it, which is the safe side (the outcome is then unknown). The gRPC
// edge sends it as the trailing metadata `retry-after-ms` (wire/status.h).
//
// Free functions without state; safe from any thread.
#ifndef VIPU_BASE_NOTHING_DONE_H_
#define VIPU_BASE_NOTHING_DONE_H_

#include <cstdint>

#include "absl/status/status.h"

namespace vipu {

// `status` (not OK) marked as refused before anything was done, asking the
// client to wait `retry_after_ms` first. OK stays OK, unmarked.
absl::Status NothingDone(absl::Status status, int64_t retry_after_ms);

// The wait in milliseconds a NothingDone status asks for, or -1 for any
// other status.
int64_t NothingDoneRetryAfterMs(const absl::Status& status);

}  // namespace vipu

#endif  // VIPU_BASE_NOTHING_DONE_H_
