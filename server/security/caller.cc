// Caller: the system caller and what a caller may use and see.
#include "server/security/caller.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace vipu::server {

const Caller& Caller::System() {
  static const Caller* system = new Caller();
  return *system;
}

bool Caller::MayUseAllocation(const std::string& allocation_id) const {
  if (Unrestricted() || allocations.empty()) return true;
  return std::find(allocations.begin(), allocations.end(), allocation_id) != allocations.end();
}

bool Caller::MaySee(const fabric::Partition& partition, bool shared) const {
  if (Unrestricted()) return true;
  if (!MayUseAllocation(partition.allocation_id)) return false;
  return partition.owner == user_id || shared;
}

std::string Caller::Name() const {
  if (authenticated) return user_id;
  return peer.empty() ? std::string("anonymous") : absl::StrCat("anonymous (", peer, ")");
}

}  // namespace vipu::server
