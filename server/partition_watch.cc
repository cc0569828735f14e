// PartitionWatch: readers waiting for a partition's next announced change.
#include "server/partition_watch.h"

namespace vipu::server {

PartitionWatch::Ticket PartitionWatch::Watch(const std::string& partition_id) {
  vipu::MutexLock lock(&mu_);
  Entry& e = entries_[partition_id];
  ++e.readers;
  return Ticket(this, partition_id, e.changes);
}

void PartitionWatch::Announce(const std::string& partition_id) {
  vipu::MutexLock lock(&mu_);
  auto it = entries_.find(partition_id);
  // Waiters re-check their condition when the mutex is released.
  if (it != entries_.end()) ++it->second.changes;
}

size_t PartitionWatch::watched() const {
  vipu::MutexLock lock(&mu_);
  return entries_.size();
}

void PartitionWatch::Unwatch(const std::string& partition_id) {
  vipu::MutexLock lock(&mu_);
  auto it = entries_.find(partition_id);
  if (it != entries_.end() && --it->second.readers == 0) entries_.erase(it);
}

bool PartitionWatch::Wait(const std::string& partition_id, uint64_t seen, absl::Time deadline) {
  vipu::MutexLock lock(&mu_);
  // The ticket keeps the entry alive, so the reference stays valid while
  // the mutex is released inside the wait.
  struct Changed {
    const uint64_t* changes;
    uint64_t seen;
    bool operator()() const { return *changes != seen; }
  } changed{&entries_[partition_id].changes, seen};
  return mu_.AwaitWithDeadline(absl::Condition(&changed), deadline);
}

}  // namespace vipu::server
