// vipu::Mutex: waits end when the condition holds, time out when it does not,
// and the object may go as soon as a waiter returns; CondVar wakes its own
// waiters only.
#include <gtest/gtest.h>

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
// ends, while the thread that released it may still be in Unlock.
TEST(MutexTest, ObjectMayGoAsSoonAsTheWaiterReturns) {
  for (int i = 0; i < 200; ++i) {
    auto flag = std::make_unique<Flag>();
    Flag* f = flag.get();
    std::thread setter([f] { f->Set(); });
    {
      MutexLock lock(&f->mu);
      f->mu.Await(absl::Condition(&f->set));
    }
    flag.reset();  // the setter may still be inside Unlock
    setter.join();
  }
}

}  // namespace
}  // namespace vipu

namespace vipu {
namespace {

TEST(CondVarTest, SignalWakesAWaiterThatChecksItsCondition) {
  Mutex mu;
  CondVar cv;
  bool ready = false;
  std::thread waiter([&] {
    MutexLock lock(&mu);
    while (!ready) cv.Wait(&mu);
  });
  {
    MutexLock lock(&mu);
    ready = true;
    cv.Signal();
  }
  waiter.join();
  SUCCEED();
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
  std::thread awaiter([&] {
    MutexLock lock(&mu);
    mu.Await(absl::Condition(&changed));
    done = true;
    cv.Signal();
  });
  MutexLock lock(&mu);
  changed = true;
  while (!done) cv.Wait(&mu);
  awaiter.join();  // it released the mutex before it ends
}

}  // namespace
}  // namespace vipu
