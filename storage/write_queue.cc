// WriteQueue: the queue, the writer thread that groups writes, and the answers.
#include "storage/write_queue.h"

#include <algorithm>
#include <exception>
#include <future>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/thread_name.h"

namespace vipu::storage {

absl::Status WriteQueue::Group::Run(size_t i, WriteTxn& txn) {
  Item& item = items_[i];
  const WriteFn& fn = item.borrowed != nullptr ? *item.borrowed : item.owned;
  queue_->writes_.fetch_add(1, std::memory_order_relaxed);
  try {
    return fn(txn);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("write callback threw: ", e.what()));
  } catch (...) {
    return absl::InternalError("write callback threw a non-standard exception");
  }
}

void WriteQueue::Group::Committed(absl::Duration took, size_t writes) {
  queue_->commits_.fetch_add(1, std::memory_order_relaxed);
  MutexLock lock(&queue_->observer_mu_);
  if (queue_->observer_) queue_->observer_(absl::ToDoubleSeconds(took), writes);
}

void WriteQueue::Group::Answer(size_t i, absl::Status status) {
  Item& item = items_[i];
  if (item.answered) return;
  item.answered = true;
  // A waiting Write returns once told and its callback goes with its stack:
  // nothing of a borrowed one is touched after this.
  item.borrowed = nullptr;
  DoneFn done = std::move(item.done);
  done(std::move(status));
  item.owned = nullptr;  // what it captured goes now, as its write is over
}

void WriteQueue::Group::AnswerTheRest() {
  for (size_t i = 0; i < items_.size(); ++i) {
    if (items_[i].answered) continue;
    Answer(i, absl::InternalError("the store's writer finished a group without answering a write"));
  }
}

WriteQueue::WriteQueue(WriteQueueOptions options, GroupFn run_group)
    : options_(std::move(options)), run_group_(std::move(run_group)) {
  thread_ = std::thread([this] { WriterLoop(); });
  NameThread(thread_, options_.thread_name);
}

WriteQueue::~WriteQueue() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();  // the writer runs what is queued before it exits
}

absl::Status WriteQueue::Write(const WriteFn& fn) {
  if (OnWriterThread()) {
    return absl::FailedPreconditionError("Store::Write called from inside a Write callback");
  }
  // A future (libstdc++, which ThreadSanitizer sees) rather than abseil's
  // Notification: Debian's abseil is not instrumented, and the caller's
  // stack that `fn` reads must be seen handed back. Shared, so that the
  // promise outlives set_value even once this Write has returned.
  auto finished = std::make_shared<std::promise<absl::Status>>();
  std::future<absl::Status> result = finished->get_future();
  Item item;
  item.borrowed = &fn;
  item.done = [finished](absl::Status s) { finished->set_value(std::move(s)); };
  Submit(std::move(item));
  return result.get();
}

void WriteQueue::WriteAsync(WriteFn fn, DoneFn done) {
  Item item;
  item.owned = std::move(fn);
  item.done = std::move(done);
  Submit(std::move(item));
}

void WriteQueue::Submit(Item item) {
  absl::Status refused;
  {
    MutexLock lock(&mu_);
    // Admitted under the lock: a write admitted before admit starts to
    // refuse is queued before AwaitIdle can look.
    if (options_.admit) refused = options_.admit();
    if (refused.ok() && !stopping_) {
      queue_.push_back(std::move(item));
      return;
    }
  }
  item.done(refused.ok() ? absl::UnavailableError("the store is closing") : std::move(refused));
}

void WriteQueue::AwaitIdle() {
  MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &WriteQueue::Idle));
}

uint64_t WriteQueue::pending_writes() const {
  MutexLock lock(&mu_);
  return queue_.size();
}

void WriteQueue::SetCommitObserver(std::function<void(double, size_t)> observer) {
  MutexLock lock(&observer_mu_);
  observer_ = std::move(observer);
}

void WriteQueue::WriterLoop() {
  writer_id_.store(std::this_thread::get_id());
  while (true) {
    Group group(this);
    if (!TakeGroup(&group.items_)) return;
    run_group_(group);
    group.AnswerTheRest();
    MutexLock lock(&mu_);
    running_ = false;
  }
}

bool WriteQueue::TakeGroup(std::vector<Item>* items) {
  MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &WriteQueue::HasWorkOrStopping));
  if (queue_.empty()) return false;  // stopping, and everything queued is answered
  if (options_.gather_window > absl::ZeroDuration() && !stopping_) {
    mu_.AwaitWithTimeout(absl::Condition(this, &WriteQueue::GroupFullOrStopping),
                         options_.gather_window);
  }
  size_t n = queue_.size();
  if (options_.max_group_size > 0) n = std::min(n, options_.max_group_size);
  items->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    items->push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  running_ = true;
  return true;
}

bool WriteQueue::GroupFullOrStopping() const {
  return stopping_ || (options_.max_group_size > 0 && queue_.size() >= options_.max_group_size);
}

}  // namespace vipu::storage
