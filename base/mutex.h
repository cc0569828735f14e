// The lock every component uses: a std::mutex that clang's thread safety
// analysis checks (-Wthread-safety, with ABSL_GUARDED_BY and friends) and
// that ThreadSanitizer sees.
//
// Why not absl::Mutex, which has the annotations: Debian's abseil is not
// built with TSan, so its Lock and Unlock (atomics and futexes inside the
// library) are invisible to scripts/tsan.sh, and every access an absl::Mutex
// guards would be reported as a race. std::mutex and std::condition_variable
// go through pthread calls that TSan intercepts.
//
// The interface is the part of absl::Mutex's that we use, so code reads the
// same: Lock/Unlock, MutexLock, and waiting until an absl::Condition holds,
// re-evaluated whenever the mutex is released, optionally with a timeout or
// a deadline. The waits never poll.
//
// Await wakes every waiter of the mutex on each release, which is simple and
// right while waiters are few. Where many threads wait for different things
// (idle workers, readers of one partition each), CondVar wakes only the
// threads that wait on it.
#ifndef VIPU_BASE_MUTEX_H_
#define VIPU_BASE_MUTEX_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"  // absl::Condition
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace vipu {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    // Waiters are woken while the mutex is still held: once it is released,
    // a waiter whose condition now holds may return and destroy this object
    // (a latch on its stack, an object whose destructor waited).
    if (waiters_ > 0) cv_.notify_all();
    mu_.unlock();
  }

  // Releases the mutex until `cond` holds, then returns with it held again.
  void Await(const absl::Condition& cond) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    Wait(cond, nullptr);
  }
  // Same, giving up after `timeout` (measured on the steady clock); returns
  // whether `cond` holds.
  bool AwaitWithTimeout(const absl::Condition& cond, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    if (timeout >= kForever) {
      Wait(cond, nullptr);
      return true;
    }
    const auto until = std::chrono::steady_clock::now() +
                       absl::ToChronoNanoseconds(std::max(timeout, absl::ZeroDuration()));
    return Wait(cond, &until);
  }
  bool AwaitWithDeadline(const absl::Condition& cond, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    return AwaitWithTimeout(cond, deadline - absl::Now());
  }

 private:
  friend class CondVar;

  // Longer waits than this are waits without a deadline (a steady-clock
  // time point this far ahead would overflow).
  static constexpr absl::Duration kForever = absl::Hours(24 * 365 * 100);

  bool Wait(const absl::Condition& cond, const std::chrono::steady_clock::time_point* until) {
    std::unique_lock<std::mutex> lock(mu_, std::adopt_lock);
    // The caller may have changed what others wait for: this release inside
    // the wait must wake them as Unlock would.
    if (waiters_ > 0) cv_.notify_all();
    ++waiters_;
    bool holds = true;
    if (until == nullptr) {
      cv_.wait(lock, [&cond] { return cond.Eval(); });
    } else {
      holds = cv_.wait_until(lock, *until, [&cond] { return cond.Eval(); });
    }
    --waiters_;
    lock.release();  // held again, and still the caller's to release
    return holds;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int waiters_ = 0;  // threads inside Wait; changed and read with mu_ held
};

// A condition variable used with one Mutex: Signal wakes one of its waiters,
// SignalAll all of them, and no other thread. Waits may end spuriously, so
// callers wait in a loop on their condition. Thread-safe; must outlive its
// waiters.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu` until signalled, then returns with it held again.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { WaitUntil(mu, nullptr); }
  // Same, giving up at `deadline`; returns false when the deadline passed.
  bool WaitWithDeadline(Mutex* mu, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (deadline == absl::InfiniteFuture()) {
      WaitUntil(mu, nullptr);
      return true;
    }
    const absl::Duration left = std::max(deadline - absl::Now(), absl::ZeroDuration());
    if (left >= Mutex::kForever) {
      WaitUntil(mu, nullptr);
      return true;
    }
    const auto until = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(left);
    return WaitUntil(mu, &until);
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  bool WaitUntil(Mutex* mu, const std::chrono::steady_clock::time_point* until) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    // This release must wake the mutex's Await waiters as Unlock would.
    if (mu->waiters_ > 0) mu->cv_.notify_all();
    bool in_time = true;
    if (until == nullptr) {
      cv_.wait(lock);
    } else {
      in_time = cv_.wait_until(lock, *until) == std::cv_status::no_timeout;
    }
    lock.release();  // held again, and still the caller's to release
    return in_time;
  }

  std::condition_variable cv_;
};

// Holds a Mutex for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

}  // namespace vipu

#endif  // VIPU_BASE_MUTEX_H_
