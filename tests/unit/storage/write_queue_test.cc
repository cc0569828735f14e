// WriteQueue: groups in order, the re-entry refusal, draining on destruction,
// throwing callbacks, the counters, the gathering window and the group limit.
#include "storage/write_queue.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "tests/unit/support/storage_test_util.h"

namespace vipu::storage {
namespace {

using test_util::WaitFor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr auto kDeadline = std::chrono::seconds(30);

// A condition to wait for, with a deadline, instead of sleeping.
class Flag {
 public:
  void Set() {
    std::lock_guard<std::mutex> lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  // False when it was not set within the deadline.
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kDeadline, [this] { return set_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// What the writer did: the groups it was handed (their sizes) and the
// callbacks it ran (their labels), in order.
class Log {
 public:
  void Group(size_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    groups_.push_back(size);
  }
  void Ran(int label) {
    std::lock_guard<std::mutex> lock(mu_);
    ran_.push_back(label);
  }
  std::vector<size_t> groups() {
    std::lock_guard<std::mutex> lock(mu_);
    return groups_;
  }
  std::vector<int> ran() {
    std::lock_guard<std::mutex> lock(mu_);
    return ran_;
  }

 private:
  std::mutex mu_;
  std::vector<size_t> groups_;
  std::vector<int> ran_;
};

// A group function as a store's simplest: runs every callback, commits the
// group once when any succeeded, and answers each with its callback's
// status. The callbacks of these tests never use their transaction.
WriteQueue::GroupFn Committer(Log* log) {
  return [log](WriteQueue::Group& group) {
    log->Group(group.size());
    SqliteTxn unused(nullptr);
    std::vector<absl::Status> results;
    bool any_ok = false;
    for (size_t i = 0; i < group.size(); ++i) {
      results.push_back(group.Run(i, unused));
      any_ok = any_ok || results.back().ok();
    }
    if (any_ok) group.Committed(absl::ZeroDuration(), group.size());
    for (size_t i = 0; i < group.size(); ++i) group.Answer(i, results[i]);
  };
}

// A callback that records its label.
WriteQueue::WriteFn Labelled(Log* log, int label) {
  return [log, label](WriteTxn&) {
    log->Ran(label);
    return absl::OkStatus();
  };
}

// Holds the writer inside one callback until released, so that the writes
// queued meanwhile wait for the next group.
class Blocker {
 public:
  explicit Blocker(WriteQueue& queue) {
    queue.WriteAsync(
        [this](WriteTxn&) {
          running_.Set();
          released_.Wait();
          return absl::OkStatus();
        },
        [this](absl::Status) { answered_.Set(); });
    EXPECT_TRUE(running_.Wait()) << "the writer never ran the blocking write";
  }
  ~Blocker() { Release(); }
  void Release() {
    released_.Set();
    EXPECT_TRUE(answered_.Wait());
  }

 private:
  Flag running_;
  Flag released_;
  Flag answered_;
};

// Counts the answers each labelled write gets.
class Answers {
 public:
  WriteQueue::DoneFn For(int label) {
    return [this, label](absl::Status s) {
      std::lock_guard<std::mutex> lock(mu_);
      ++count_[label];
      last_[label] = std::move(s);
    };
  }
  int count(int label) {
    std::lock_guard<std::mutex> lock(mu_);
    return count_[label];
  }
  absl::Status last(int label) {
    std::lock_guard<std::mutex> lock(mu_);
    return last_[label];
  }
  size_t total() {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& [label, c] : count_) n += static_cast<size_t>(c);
    return n;
  }

 private:
  std::mutex mu_;
  std::map<int, int> count_;
  std::map<int, absl::Status> last_;
};

TEST(WriteQueueTest, GroupsRunInQueueOrder) {
  Log log;
  WriteQueueOptions options;
  options.max_group_size = 3;
  WriteQueue queue(options, Committer(&log));
  Answers answers;
  {
    Blocker blocker(queue);
    for (int i = 0; i < 8; ++i) queue.WriteAsync(Labelled(&log, i), answers.For(i));
    ASSERT_TRUE(WaitFor([&] { return queue.pending_writes() == 8; }, kDeadline));
  }
  ASSERT_TRUE(WaitFor([&] { return answers.total() == 8; }, kDeadline));
  EXPECT_THAT(log.ran(), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_THAT(log.groups(), ElementsAre(1, 3, 3, 2));
}

TEST(WriteQueueTest, WriteFromACallbackIsRefused) {
  Log log;
  WriteQueue queue({}, Committer(&log));
  absl::Status inner;
  absl::Status outer = queue.Write([&](WriteTxn&) {
    inner = queue.Write([](WriteTxn&) { return absl::OkStatus(); });
    return absl::OkStatus();
  });
  EXPECT_TRUE(outer.ok()) << outer;
  EXPECT_EQ(inner.code(), absl::StatusCode::kFailedPrecondition) << inner;
  EXPECT_EQ(inner.message(), "Store::Write called from inside a Write callback");
  EXPECT_EQ(queue.writes(), 1u) << "the refused write was never queued";
}

TEST(WriteQueueTest, WriteFromADoneIsRefusedAndWriteAsyncIsQueued) {
  Log log;
  WriteQueue queue({}, Committer(&log));
  absl::Status inner;
  Flag chained;
  absl::Status chained_status;
  queue.WriteAsync(Labelled(&log, 1), [&](absl::Status) {
    inner = queue.Write(Labelled(&log, 99));
    queue.WriteAsync(Labelled(&log, 2), [&](absl::Status s) {
      chained_status = std::move(s);
      chained.Set();
    });
  });
  ASSERT_TRUE(chained.Wait());
  EXPECT_EQ(inner.code(), absl::StatusCode::kFailedPrecondition) << inner;
  EXPECT_THAT(inner.message(), HasSubstr("inside a Write callback"));
  EXPECT_TRUE(chained_status.ok()) << chained_status;
  EXPECT_THAT(log.ran(), ElementsAre(1, 2));
}

TEST(WriteQueueTest, DestructionAnswersEveryQueuedWriteOnce) {
  constexpr int kWrites = 20;
  Log log;
  auto queue = std::make_unique<WriteQueue>(WriteQueueOptions{}, Committer(&log));
  Answers answers;
  auto blocker = std::make_unique<Blocker>(*queue);
  for (int i = 0; i < kWrites; ++i) {
    // Each answer queues one more write while the queue may be closing: it
    // is run or refused, and answered once either way.
    queue->WriteAsync(Labelled(&log, i), [&, i, q = queue.get()](absl::Status s) {
      answers.For(i)(std::move(s));
      q->WriteAsync(Labelled(&log, 100 + i), answers.For(100 + i));
    });
  }
  std::thread destroyer([&] { queue.reset(); });
  blocker->Release();
  destroyer.join();
  for (int i = 0; i < kWrites; ++i) {
    EXPECT_EQ(answers.count(i), 1) << i;
    EXPECT_TRUE(answers.last(i).ok()) << i << ": " << answers.last(i);
    EXPECT_EQ(answers.count(100 + i), 1) << 100 + i;
    const absl::Status follow_up = answers.last(100 + i);
    EXPECT_TRUE(follow_up.ok() || absl::IsUnavailable(follow_up)) << follow_up;
  }
  blocker.reset();
}

TEST(WriteQueueTest, ThrowingCallbackIsInternalAndSparesItsGroup) {
  Log log;
  WriteQueue queue({}, Committer(&log));
  Answers answers;
  {
    Blocker blocker(queue);
    queue.WriteAsync([](WriteTxn&) -> absl::Status { throw std::runtime_error("boom"); },
                     answers.For(1));
    queue.WriteAsync([](WriteTxn&) -> absl::Status { throw 42; }, answers.For(2));
    queue.WriteAsync(Labelled(&log, 3), answers.For(3));
    ASSERT_TRUE(WaitFor([&] { return queue.pending_writes() == 3; }, kDeadline));
  }
  ASSERT_TRUE(WaitFor([&] { return answers.total() == 3; }, kDeadline));
  EXPECT_EQ(answers.last(1).code(), absl::StatusCode::kInternal);
  EXPECT_THAT(answers.last(1).message(), HasSubstr("write callback threw: boom"));
  EXPECT_EQ(answers.last(2).code(), absl::StatusCode::kInternal);
  EXPECT_THAT(answers.last(2).message(), HasSubstr("non-standard exception"));
  EXPECT_TRUE(answers.last(3).ok()) << answers.last(3);
  EXPECT_THAT(log.groups(), ElementsAre(1, 3));
}

TEST(WriteQueueTest, CountersAndCommitObserver) {
  Log log;
  WriteQueue queue({}, Committer(&log));
  std::mutex mu;
  std::vector<size_t> observed;
  queue.SetCommitObserver([&](double seconds, size_t writes) {
    EXPECT_GE(seconds, 0.0);
    std::lock_guard<std::mutex> lock(mu);
    observed.push_back(writes);
  });
  Answers answers;
  {
    Blocker blocker(queue);
    EXPECT_EQ(queue.writes(), 1u) << "the blocking callback is running";
    EXPECT_EQ(queue.commits(), 0u);
    queue.WriteAsync(Labelled(&log, 1), answers.For(1));
    queue.WriteAsync([](WriteTxn&) { return absl::AbortedError("no"); }, answers.For(2));
    queue.WriteAsync(Labelled(&log, 3), answers.For(3));
    ASSERT_TRUE(WaitFor([&] { return queue.pending_writes() == 3; }, kDeadline));
  }
  ASSERT_TRUE(WaitFor([&] { return answers.total() == 3; }, kDeadline));
  EXPECT_EQ(queue.pending_writes(), 0u);
  EXPECT_EQ(queue.writes(), 4u);
  EXPECT_EQ(queue.commits(), 2u);
  // A group whose callbacks all fail commits nothing.
  ASSERT_EQ(queue.Write([](WriteTxn&) { return absl::AbortedError("no"); }).code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(queue.writes(), 5u);
  EXPECT_EQ(queue.commits(), 2u);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_THAT(observed, ElementsAre(1, 3));
}

TEST(WriteQueueTest, WindowGathersWritesIntoOneGroup) {
  Log log;
  WriteQueueOptions options;
  // Long enough that only a full group ends it in this test.
  options.gather_window = absl::Seconds(60);
  options.max_group_size = 5;
  WriteQueue queue(options, Committer(&log));
  Answers answers;
  for (int i = 0; i < 5; ++i) queue.WriteAsync(Labelled(&log, i), answers.For(i));
  ASSERT_TRUE(WaitFor([&] { return answers.total() == 5; }, kDeadline));
  EXPECT_THAT(log.groups(), ElementsAre(5));
  EXPECT_THAT(log.ran(), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_EQ(queue.commits(), 1u);
}

TEST(WriteQueueTest, ClosingEndsTheWindow) {
  Log log;
  WriteQueueOptions options;
  options.gather_window = absl::Seconds(60);
  auto queue = std::make_unique<WriteQueue>(options, Committer(&log));
  Answers answers;
  queue->WriteAsync(Labelled(&log, 1), answers.For(1));
  const auto started = std::chrono::steady_clock::now();
  queue.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - started, kDeadline);
  EXPECT_EQ(answers.count(1), 1);
  EXPECT_TRUE(answers.last(1).ok()) << answers.last(1);
}

TEST(WriteQueueTest, AdmitRefusesBeforeQueueing) {
  Log log;
  WriteQueueOptions options;
  options.admit = [] { return absl::UnavailableError("not leading"); };
  WriteQueue queue(options, Committer(&log));
  Answers answers;
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id answered_on;
  queue.WriteAsync(Labelled(&log, 1), [&](absl::Status s) {
    answered_on = std::this_thread::get_id();
    answers.For(1)(std::move(s));
  });
  EXPECT_EQ(answers.count(1), 1) << "answered at once";
  EXPECT_EQ(answered_on, caller);
  EXPECT_TRUE(absl::IsUnavailable(answers.last(1))) << answers.last(1);
  EXPECT_TRUE(absl::IsUnavailable(queue.Write(Labelled(&log, 2))));
  EXPECT_TRUE(log.ran().empty());
  EXPECT_EQ(queue.writes(), 0u);
}

TEST(WriteQueueTest, AwaitIdleReturnsOnlyOnceTheWritesTakenAreAnswered) {
  absl::Notification release;
  std::atomic<bool> answered{false};
  WriteQueue queue({}, [&](WriteQueue::Group& group) {
    release.WaitForNotification();
    for (size_t i = 0; i < group.size(); ++i) group.Answer(i, absl::OkStatus());
  });
  queue.WriteAsync([](WriteTxn&) { return absl::OkStatus(); },
                   [&](absl::Status) { answered.store(true); });
  absl::Notification idle;
  std::thread waiter([&] {
    queue.AwaitIdle();
    idle.Notify();
  });
  // Whether the writer has taken the write yet or not, it is not answered.
  EXPECT_FALSE(idle.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  release.Notify();
  waiter.join();
  EXPECT_TRUE(answered.load());
  queue.AwaitIdle();  // idle already: returns at once
}

TEST(WriteQueueTest, UnansweredWriteIsAnsweredInternal) {
  WriteQueue queue({}, [](WriteQueue::Group&) {});
  absl::Status s = queue.Write([](WriteTxn&) { return absl::OkStatus(); });
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
}

}  // namespace
}  // namespace vipu::storage
