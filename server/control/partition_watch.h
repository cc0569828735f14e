// Lets a reader wait for a partition to change instead of polling it: the
// controller announces each change it commits in the background (an outcome
// of configure or reset, a removal), and a status read of a pending
// partition sleeps until the next announcement or a deadline.
#ifndef VIPU_SERVER_CONTROL_PARTITION_WATCH_H_
#define VIPU_SERVER_CONTROL_PARTITION_WATCH_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace vipu::server {

// Only partitions somebody watches have an entry, so the memory is bounded by
// the readers waiting at once, not by the partitions ever created.
// Announcements for unwatched partitions cost one map lookup. Thread-safe.
class PartitionWatch {
 public:
  PartitionWatch() = default;
  PartitionWatch(const PartitionWatch&) = delete;
  PartitionWatch& operator=(const PartitionWatch&) = delete;

  // A reader's interest in one partition, from before it reads the state
  // until it stops waiting: a change announced after Watch() and before
  // Wait() is not missed. Borrows the PartitionWatch, which must outlive it.
  // Used by its one reader; the watch's lock guards what it shares.
  class Ticket {
   public:
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { watch_->Unwatch(id_); }

    // Returns true as soon as a change of the partition has been announced
    // since this ticket was taken, false once `deadline` passes without one.
    bool Wait(absl::Time deadline) { return watch_->Wait(id_, seen_, deadline); }

   private:
    friend class PartitionWatch;
    Ticket(PartitionWatch* watch, std::string id, uint64_t seen)
        : watch_(watch), id_(std::move(id)), seen_(seen) {}
    PartitionWatch* watch_;
    std::string id_;
    uint64_t seen_;
  };

  Ticket Watch(const std::string& partition_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Wakes every reader waiting on `partition_id`.
  void Announce(const std::string& partition_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Partitions with at least one reader (tests).
  size_t WatchedForTesting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    uint64_t changes = 0;
    int readers = 0;
    // Announce wakes the readers of this partition only: with one wait per
    // client, waking every reader on every change would cost a wake-up per
    // client per change.
    vipu::CondVar changed;
  };
  void Unwatch(const std::string& partition_id) ABSL_LOCKS_EXCLUDED(mu_);
  bool Wait(const std::string& partition_id, uint64_t seen, absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_);

  mutable vipu::Mutex mu_;
  std::map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_PARTITION_WATCH_H_
