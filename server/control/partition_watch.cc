// PartitionWatch: readers waiting for a partition's next announced change.
#include "server/control/partition_watch.h"

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
  if (it == entries_.end()) return;
  ++it->second.changes;
  it->second.changed.SignalAll();
}

size_t PartitionWatch::WatchedForTesting() const {
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
  Entry& e = entries_[partition_id];
  while (e.changes == seen) {
    if (!e.changed.WaitWithDeadline(&mu_, deadline)) return e.changes != seen;
  }
  return true;
}

}  // namespace vipu::server
