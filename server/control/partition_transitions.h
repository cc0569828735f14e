// The moves of a partition between states, each in one place: every part of
// the controller that changes a partition's state goes through one of these,
// so a state always comes with the fields that belong to it (errors,
// generation, timestamps). They change the value only; the caller writes it.
#ifndef VIPU_SERVER_CONTROL_PARTITION_TRANSITIONS_H_
#define VIPU_SERVER_CONTROL_PARTITION_TRANSITIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/types.h"

namespace vipu::server {

// PS_PENDING at `generation` with `operation` (POS_CREATING for a create or
// a move, POS_RESETTING for a reset in place); errors cleared.
void ToPending(fabric::Partition* p, uint64_t generation, fabric::OperationState operation,
               int64_t now_ms);
// PS_ACTIVE/POS_IDLE: every machine holds it; errors cleared.
void ToActive(fabric::Partition* p, int64_t now_ms);
// PS_ERROR/POS_FAILED with `errors`, one per machine, IPU or link at fault.
void ToError(fabric::Partition* p, std::vector<std::string> errors, int64_t now_ms);
// POS_REMOVING: the agents are releasing it; the ready state is kept.
void ToRemoving(fabric::Partition* p, int64_t now_ms);
// The outcome of configuring or resetting: ToActive without errors, else
// ToError.
void ToOutcome(fabric::Partition* p, std::vector<std::string> errors, int64_t now_ms);

// The current time as partitions store it.
int64_t NowUnixMs();

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_PARTITION_TRANSITIONS_H_
