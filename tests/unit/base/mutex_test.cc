// vipu::Mutex: waits end when the condition holds, time out when it does not,
// and the object may go as soon as a waiter returns; CondVar wakes its own
// waiters only.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"

namespace vipu {
namespace {

struct Flag {
  Mutex mu;
  bool set ABSL_GUARDED_BY(mu) = false;
  int count ABSL_GUARDED_BY(mu) = 0;

  void Set() ABSL_LOCKS_EXCLUDED(mu) {
    MutexLock lock(&mu);
    set = true;
  }
  bool CountReached3() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return count >= 3; }
};

TEST(MutexTest, AwaitReturnsOnceAnotherThreadMakesTheConditionTrue) {
  Flag flag;
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(20));
    flag.Set();
  });
  {
    MutexLock lock(&flag.mu);
    flag.mu.Await(absl::Condition(&flag.set));
    EXPECT_TRUE(flag.set);
  }
  setter.join();
}

TEST(MutexTest, AwaitWithTimeoutGivesUpWhenTheConditionStaysFalse) {
  Flag flag;
  MutexLock lock(&flag.mu);
  const absl::Time start = absl::Now();
  EXPECT_FALSE(flag.mu.AwaitWithTimeout(absl::Condition(&flag.set), absl::Milliseconds(50)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(50));
}

TEST(MutexTest, AwaitWithDeadlineInThePastReportsTheCondition) {
  Flag flag;
  MutexLock lock(&flag.mu);
  EXPECT_FALSE(flag.mu.AwaitWithDeadline(absl::Condition(&flag.set), absl::InfinitePast()));
  flag.set = true;
  EXPECT_TRUE(flag.mu.AwaitWithDeadline(absl::Condition(&flag.set), absl::InfinitePast()));
}

TEST(MutexTest, InfiniteTimeoutWaitsWithoutADeadline) {
  Flag flag;
  std::thread setter([&] {
    absl::SleepFor(absl::Milliseconds(20));
    flag.Set();
  });
  {
    MutexLock lock(&flag.mu);
    EXPECT_TRUE(flag.mu.AwaitWithTimeout(absl::Condition(&flag.set), absl::InfiniteDuration()));
    EXPECT_TRUE(flag.mu.AwaitWithDeadline(absl::Condition(&flag.set), absl::InfiniteFuture()));
  }
  setter.join();
}

// A thread that changes the state and then waits itself releases the mutex
// inside its wait; the others must see the change.
TEST(MutexTest, ReleaseInsideAWaitWakesTheOtherWaiters) {
  Flag flag;
  std::thread waiter([&] {
    MutexLock lock(&flag.mu);
    flag.mu.Await(absl::Condition(&flag.set));
    ++flag.count;
  });
  absl::SleepFor(absl::Milliseconds(20));  // lets the waiter wait first
  MutexLock lock(&flag.mu);
  flag.set = true;
  flag.count += 2;
  EXPECT_TRUE(
      flag.mu.AwaitWithTimeout(absl::Condition(&flag, &Flag::CountReached3), absl::Seconds(10)));
  waiter.join();
}

// The latch pattern: the waiter destroys the object as soon as its wait
// ends, while the thread that released it may still be in Unlock. Each
// round, the waiter is inside its wait before the other thread takes the
// mutex and sets the flag, and nothing else wakes it: the setter's Unlock
// must end the wait. The object is freed at once: a touch after that by the
// releasing thread is a use after free, which the sanitizer build reports.
TEST(MutexTest, ObjectMayGoAsSoonAsTheWaiterReturns) {
  struct Latch {
    Mutex mu;
    bool set ABSL_GUARDED_BY(mu) = false;
  };
  for (int i = 0; i < 200; ++i) {
    auto latch = std::make_unique<Latch>();
    Latch* l = latch.get();
    std::promise<void> locked;
    std::thread setter([l, waiter_locked = locked.get_future()] {
      waiter_locked.wait();
      // The waiter holds the mutex from before `locked` until inside its
      // wait: this Lock returns once it waits. Lock wakes nobody.
      MutexLock lock(&l->mu);
      l->set = true;
    });
    bool woken;  // by the setter's Unlock, not by the deadline
    {
      MutexLock lock(&l->mu);
      locked.set_value();
      const absl::Time deadline = absl::Now() + absl::Seconds(30);
      woken = l->mu.AwaitWithDeadline(absl::Condition(&l->set), deadline) && absl::Now() < deadline;
    }
    latch.reset();  // the setter may still be inside Unlock
    setter.join();
    ASSERT_TRUE(woken) << "round " << i << ": the wait ended by its deadline";
  }
}

}  // namespace
}  // namespace vipu

namespace vipu {
namespace {

TEST(CondVarTest, SignalWakesAWaiterThatChecksItsCondition) {
  Mutex mu;
  CondVar cv;
  bool waiting = false, ready = false, done = false;
  bool signalled = true;  // false once the waiter's wait ends by its deadline
  int wakes = 0;
  std::thread waiter([&] {
    MutexLock lock(&mu);
    waiting = true;
    // The deadline only bounds the test if Signal wakes nobody (longer than
    // the waits below, which then fail first).
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (!ready && signalled) {
      signalled = cv.WaitWithDeadline(&mu, deadline);
      if (signalled) ++wakes;
    }
    done = true;
  });
  {
    MutexLock lock(&mu);
    // The waiter set `waiting` with the mutex held and releases it only
    // inside its wait: once this thread sees it, the waiter is waiting.
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&waiting), absl::Seconds(30)));
    // A signal while its condition is false: the waiter wakes, finds it
    // false and waits again.
    cv.Signal();
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(
                                        +[](int* w) { return *w >= 1; }, &wakes),
                                    absl::Seconds(30)));
    EXPECT_FALSE(done);
    ready = true;
    cv.Signal();
  }
  waiter.join();
  MutexLock lock(&mu);
  EXPECT_TRUE(signalled) << "the waiter's wait ended by its deadline, not by Signal";
  EXPECT_TRUE(done);
  EXPECT_GE(wakes, 2);
}

TEST(CondVarTest, DeadlinePassesWithoutSignal) {
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  EXPECT_FALSE(cv.WaitWithDeadline(&mu, absl::Now() + absl::Milliseconds(10)));
  EXPECT_FALSE(cv.WaitWithDeadline(&mu, absl::InfinitePast()));
}

TEST(CondVarTest, SignalAllWakesEveryWaiter) {
  Mutex mu;
  CondVar cv;
  bool go = false;
  int woken = 0;
  std::vector<std::thread> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.emplace_back([&] {
      MutexLock lock(&mu);
      while (!go) cv.Wait(&mu);
      ++woken;
    });
  }
  {
    MutexLock lock(&mu);
    go = true;
    cv.SignalAll();
  }
  for (auto& t : waiters) t.join();
  EXPECT_EQ(woken, 4);
}

TEST(CondVarTest, WaitingReleasesTheMutexForAwaitWaiters) {
  // A thread in CondVar::Wait must let a thread in Mutex::Await see the
  // change made before the wait.
  Mutex mu;
  CondVar cv;
  bool changed = false, done = false;
  std::promise<void> locked;
  std::future<void> awaiter_locked = locked.get_future();
  std::thread awaiter([&] {
    MutexLock lock(&mu);
    locked.set_value();
    mu.Await(absl::Condition(&changed));
    done = true;
    cv.Signal();
  });
  awaiter_locked.wait();
  {
    // The awaiter holds the mutex from before `locked` until inside its
    // Await: this Lock returns once it waits, and wakes nobody. From then
    // on only a release by this thread can let it see the change.
    MutexLock lock(&mu);
    changed = true;
    // This thread releases the mutex only inside CondVar's wait.
    const absl::Time deadline = absl::Now() + absl::Seconds(30);
    bool in_time = true;
    while (!done && in_time) in_time = cv.WaitWithDeadline(&mu, deadline);
    EXPECT_TRUE(done) << "the Await waiter did not see the change while this thread waited";
  }  // Unlock ends the awaiter's wait if CondVar's wait did not
  awaiter.join();
}

}  // namespace
}  // namespace vipu
