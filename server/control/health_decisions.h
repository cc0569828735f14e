// What the health pass does with one partition, decided from the partition
// and the problems found on its machines, IPUs and links: the one rule for
// when an auto reset is allowed lives here. Pure functions; no state.
#ifndef VIPU_SERVER_CONTROL_HEALTH_DECISIONS_H_
#define VIPU_SERVER_CONTROL_HEALTH_DECISIONS_H_

#include <string>
#include <vector>

#include "fabric/types.h"

namespace vipu::server {

// True while an operation of its own is in flight (PS_PENDING or
// POS_REMOVING): that operation reports its outcome, the health pass leaves
// the partition alone.
bool OperationInFlight(const fabric::Partition& p);

// True when an automatic reset of `p` may start: it is PS_ERROR, not being
// removed, auto reset is enabled for it and it has retries left
// (auto_reset_retry_count below max_auto_reset_retries).
bool MayAutoReset(const fabric::Partition& p);

enum class HealthAction {
  kNone,        // nothing to do: healthy, or busy with an operation of its own
  kMarkFaulty,  // record the problems: PS_ERROR with them as its errors
  kAutoReset,   // start an automatic reset (a relocatable one moves)
};

// The action for `p` given `problems` (PartitionProblems; empty when
// healthy). OperationInFlight: kNone. Faults not yet recorded, or
// recorded differently: kMarkFaulty. Recorded faults that last: kAutoReset
// for a relocatable partition that MayAutoReset (it moves to healthy IPUs
// instead of waiting). No problems left: kAutoReset when MayAutoReset.
HealthAction DecideHealth(const fabric::Partition& p, const std::vector<std::string>& problems);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_HEALTH_DECISIONS_H_
