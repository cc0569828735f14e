// The health pass's decision for one partition, and the rule for auto reset.
#include "server/control/health_decisions.h"

namespace vipu::server {

bool OperationInFlight(const fabric::Partition& p) {
  return p.ready_state == fabric::ReadyState::kPending ||
         p.operation_state == fabric::OperationState::kRemoving;
}

bool MayAutoReset(const fabric::Partition& p) {
  return p.ready_state == fabric::ReadyState::kError &&
         p.operation_state != fabric::OperationState::kRemoving && !p.disable_auto_reset &&
         p.auto_reset_retry_count < p.max_auto_reset_retries;
}

HealthAction DecideHealth(const fabric::Partition& p, const std::vector<std::string>& problems) {
  if (OperationInFlight(p)) return HealthAction::kNone;
  if (!problems.empty()) {
    if (p.ready_state != fabric::ReadyState::kError || p.errors != problems) {
      return HealthAction::kMarkFaulty;
    }
    return p.relocatable && MayAutoReset(p) ? HealthAction::kAutoReset : HealthAction::kNone;
  }
  return MayAutoReset(p) ? HealthAction::kAutoReset : HealthAction::kNone;
}

}  // namespace vipu::server
