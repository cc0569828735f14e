// The writer side that every Store shares: a queue of write callbacks, one
// writer thread that takes them in groups, and the answers. Each store gives
// it the one thing that differs, how a group is run and committed (SQLite: one
// transaction with a SAVEPOINT per callback; etcd: fenced transactions of
// the keys the callbacks touched).
//
// What it promises, for Store's contract (storage/store.h):
//   - Writes are taken in the order they were queued, in groups: a group is
//     what is queued when the writer is free, gathered for up to
//     `gather_window` after the first, and at most `max_group_size` writes.
//     Groups run one after another on the writer thread.
//   - Every write queued gets its answer exactly once: a Write returns it, a
//     WriteAsync's `done` is called with it. Destroying the queue runs every
//     write already queued before it returns; a write offered while it is
//     being destroyed is answered at once with UNAVAILABLE.
//   - A blocking Write on the writer thread (from inside a write callback, a
//     `done` or the commit observer) would wait for itself: it is refused
//     with FAILED_PRECONDITION "Store::Write called from inside a Write
//     callback", and nothing is queued. WriteAsync from there is queued.
//   - A callback that throws is an INTERNAL error, like one that returns it.
//
// Ownership: owns the queued callbacks and the writer thread; the group
// function (and whatever it uses) must outlive the queue, which stops the
// thread in its destructor: declare the queue after what its group function
// uses.
//
// Thread-safety: every method may be called from any thread. The group
// function, the `done`s and the commit observer run on the writer thread,
// one at a time; they must not destroy the queue.
#ifndef VIPU_STORAGE_WRITE_QUEUE_H_
#define VIPU_STORAGE_WRITE_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "storage/store.h"

namespace vipu::storage {

struct WriteQueueOptions {
  // The writer thread's name (the kernel keeps 15 characters).
  std::string thread_name = "vipu-writer";
  // Once a write is queued, how long the writer waits for more to join its
  // group (a group that reaches max_group_size stops waiting; closing ends
  // the wait). Zero: a group is what is queued when the writer is free.
  absl::Duration gather_window = absl::ZeroDuration();
  // The most writes in one group; 0: no limit.
  size_t max_group_size = 0;
  // Asked on the calling thread before a write is queued, under the
  // queue's lock (so it must be quick and must not write): a write it
  // refuses is answered with its status at once (WriteAsync: `done` on the
  // calling thread) and never queued. Empty: every write is queued.
  std::function<absl::Status()> admit;
};

class WriteQueue {
 public:
  using WriteFn = std::function<absl::Status(WriteTxn&)>;
  using DoneFn = std::function<void(absl::Status)>;

  // The writes the writer took together, handed to the group function. It
  // runs their callbacks (Run), reports each commit (Committed) and answers
  // each write (Answer), in whatever order its commit needs. Valid only
  // during the call; used only on the writer thread.
  class Group {
   public:
    Group(const Group&) = delete;
    Group& operator=(const Group&) = delete;

    size_t size() const { return items_.size(); }
    // Runs write i's callback against `txn`, at most once: what it returns,
    // or INTERNAL when it throws. Counted in writes().
    absl::Status Run(size_t i, WriteTxn& txn);
    // A durable commit of `writes` writes that took `took`: counted in
    // commits() and told to the commit observer. Call before answering them,
    // so that whoever hears OK sees the commit counted.
    void Committed(absl::Duration took, size_t writes);
    // Gives write i its answer, once (later answers are ignored); its
    // callback is not run after this. A write the group function leaves
    // unanswered is answered INTERNAL when it returns.
    void Answer(size_t i, absl::Status status);

   private:
    friend class WriteQueue;
    struct Item {
      WriteFn owned;                      // a WriteAsync's callback
      const WriteFn* borrowed = nullptr;  // a Write's, on its caller's stack
      DoneFn done;
      bool answered = false;
    };
    explicit Group(WriteQueue* queue) : queue_(queue) {}
    void AnswerTheRest();

    WriteQueue* const queue_;
    std::vector<Item> items_;
  };
  using GroupFn = std::function<void(Group& group)>;

  // Starts the writer thread, which hands each group to `run_group`.
  WriteQueue(WriteQueueOptions options, GroupFn run_group);
  // Runs and answers every write queued, then stops the writer thread. Must
  // not be called on the writer thread.
  ~WriteQueue();
  WriteQueue(const WriteQueue&) = delete;
  WriteQueue& operator=(const WriteQueue&) = delete;

  // Queues `fn` and waits for its answer: what the group function answered
  // (fn's error, the commit's error, or OK once committed). FAILED_PRECONDITION
  // on the writer thread; admit's error; UNAVAILABLE while the queue is
  // being destroyed. `fn` is borrowed until Write returns.
  absl::Status Write(const WriteFn& fn);
  // Queues `fn`; `done` gets its answer, once, on the writer thread, or at
  // once on the calling thread with admit's error or, while the queue is
  // being destroyed, UNAVAILABLE.
  void WriteAsync(WriteFn fn, DoneFn done);

  // Waits until no write is queued or being run. Once admit refuses every
  // new write, that is every write admitted before the call answered. Must
  // not be called on the writer thread.
  void AwaitIdle();

  // Commits reported, callbacks run, and writes queued and not yet taken
  // into a group.
  uint64_t commits() const { return commits_.load(std::memory_order_relaxed); }
  uint64_t writes() const { return writes_.load(std::memory_order_relaxed); }
  uint64_t pending_writes() const;
  // Called by Group::Committed with the commit's seconds and writes.
  // Replaces any previous observer; empty: none.
  void SetCommitObserver(std::function<void(double seconds, size_t writes)> observer);

 private:
  using Item = Group::Item;

  // Admits and queues `item`, or answers it at once.
  void Submit(Item item);
  void WriterLoop();
  // Moves the next group into `items`, waiting for one; false once stopping
  // with nothing queued.
  bool TakeGroup(std::vector<Item>* items);
  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !queue_.empty();
  }
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty() && !running_; }
  bool GroupFullOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool OnWriterThread() const { return std::this_thread::get_id() == writer_id_.load(); }

  // Constant after construction.
  const WriteQueueOptions options_;
  const GroupFn run_group_;

  mutable Mutex mu_;
  std::deque<Item> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;  // a group taken and not yet answered

  Mutex observer_mu_;
  std::function<void(double, size_t)> observer_ ABSL_GUARDED_BY(observer_mu_);

  std::atomic<uint64_t> commits_{0};
  std::atomic<uint64_t> writes_{0};
  // Set by the writer thread as it starts.
  std::atomic<std::thread::id> writer_id_{};
  std::thread thread_;  // last: it starts once everything above exists
};

}  // namespace vipu::storage

#endif  // VIPU_STORAGE_WRITE_QUEUE_H_
