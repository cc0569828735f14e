// HistoryRecorder: what it stamps, what an unanswered operation becomes,
// and histories recorded by real threads against an in-memory set, one
// right and one that serves stale reads; and ResultOfStatus.
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/history/history.h"
#include "tests/history/linearizability.h"

namespace vipu::history {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(HistoryRecorderTest, StampsInvocationAndCompletionWithItsClock) {
  std::atomic<int64_t> now{100};
  HistoryRecorder recorder([&now] { return now.load(); });
  const HistoryRecorder::Handle create = recorder.Invoke(1, OpKind::kCreate, "p1");
  now = 150;
  const HistoryRecorder::Handle get = recorder.Invoke(2, OpKind::kGet, "p1");
  const HistoryRecorder::Handle list = recorder.Invoke(3, OpKind::kList);
  now = 200;
  recorder.Complete(create, Result::kOk);
  now = 250;
  recorder.CompleteGet(get, true);
  recorder.CompleteList(list, {"p1"});
  // A second completion does not change the first.
  now = 999;
  recorder.Complete(create, Result::kUnknown);

  const std::vector<Operation> ops = recorder.Operations();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].client, 1);
  EXPECT_EQ(ops[0].kind, OpKind::kCreate);
  EXPECT_EQ(ops[0].partition, "p1");
  EXPECT_EQ(ops[0].invoke_ns, 100);
  EXPECT_EQ(ops[0].complete_ns, 200);
  EXPECT_EQ(ops[0].result, Result::kOk);
  EXPECT_EQ(ops[1].invoke_ns, 150);
  EXPECT_EQ(ops[1].complete_ns, 250);
  EXPECT_TRUE(ops[1].found);
  EXPECT_EQ(ops[2].kind, OpKind::kList);
  EXPECT_THAT(ops[2].listed, ElementsAre("p1"));
}

TEST(HistoryRecorderTest, UnansweredOperationIsUnknownUntilItIsAnswered) {
  std::atomic<int64_t> now{10};
  HistoryRecorder recorder([&now] { return now.load(); });
  const HistoryRecorder::Handle handle = recorder.Invoke(1, OpKind::kRemove, "p1");
  now = 40;
  std::vector<Operation> ops = recorder.Operations();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].result, Result::kUnknown);
  EXPECT_EQ(ops[0].complete_ns, 40);
  now = 50;
  recorder.Complete(handle, Result::kNotFound);
  ops = recorder.Operations();
  EXPECT_EQ(ops[0].result, Result::kNotFound);
  EXPECT_EQ(ops[0].complete_ns, 50);
}

TEST(HistoryRecorderTest, UnknownHandleIsIgnored) {
  HistoryRecorder recorder;
  recorder.Complete(7, Result::kOk);
  EXPECT_TRUE(recorder.Operations().empty());
}

// A set behind a lock, as a server would hold it. With `stale_gets`, a get
// answers from a copy that never sees removes.
class LockedSet {
 public:
  explicit LockedSet(bool stale_gets) : stale_gets_(stale_gets) {}
  absl::Status Create(const std::string& id) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    if (!ids_.insert(id).second) return absl::AlreadyExistsError(id);
    ever_.insert(id);
    return absl::OkStatus();
  }
  absl::Status Remove(const std::string& id) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    if (ids_.erase(id) == 0) return absl::NotFoundError(id);
    return absl::OkStatus();
  }
  bool Get(const std::string& id) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    return (stale_gets_ ? ever_ : ids_).count(id) > 0;
  }
  std::vector<std::string> List() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    return {ids_.begin(), ids_.end()};
  }

 private:
  const bool stale_gets_;
  Mutex mu_;
  std::set<std::string> ids_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> ever_ ABSL_GUARDED_BY(mu_);
};

// Eight clients, each creating its own ids, reading them and each other's
// set, and removing them.
std::vector<Operation> RecordUnderLoad(LockedSet* set) {
  HistoryRecorder recorder;
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([c, set, &recorder] {
      for (int i = 0; i < 40; ++i) {
        const std::string id = "c" + std::to_string(c) + "-" + std::to_string(i);
        HistoryRecorder::Handle h = recorder.Invoke(c, OpKind::kCreate, id);
        recorder.Complete(h, ResultOfStatus(set->Create(id), false));
        h = recorder.Invoke(c, OpKind::kGet, id);
        recorder.CompleteGet(h, set->Get(id));
        h = recorder.Invoke(c, OpKind::kList);
        recorder.CompleteList(h, set->List());
        h = recorder.Invoke(c, OpKind::kCreate, id);
        recorder.Complete(h, ResultOfStatus(set->Create(id), false));
        h = recorder.Invoke(c, OpKind::kRemove, id);
        recorder.Complete(h, ResultOfStatus(set->Remove(id), false));
        h = recorder.Invoke(c, OpKind::kGet, id);
        recorder.CompleteGet(h, set->Get(id));
      }
    });
  }
  for (std::thread& t : clients) t.join();
  return recorder.Operations();
}

TEST(HistoryRecorderTest, ThreadsOfALockedSetRecordALinearizableHistory) {
  LockedSet set(/*stale_gets=*/false);
  const std::vector<Operation> history = RecordUnderLoad(&set);
  ASSERT_EQ(history.size(), 8u * 40 * 6);
  absl::StatusOr<CheckResult> r = CheckLinearizable(history);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->linearizable) << r->explanation;
}

TEST(HistoryRecorderTest, ThreadsOfASetWithStaleReadsRecordAViolation) {
  LockedSet set(/*stale_gets=*/true);
  absl::StatusOr<CheckResult> r = CheckLinearizable(RecordUnderLoad(&set));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->linearizable);
  EXPECT_THAT(r->explanation, HasSubstr("was gone"));
}

TEST(HistoryResultOfStatusTest, OnlyCodesThatPromiseNothingDoneAreRefusals) {
  EXPECT_EQ(ResultOfStatus(absl::OkStatus(), false), Result::kOk);
  EXPECT_EQ(ResultOfStatus(absl::AlreadyExistsError(""), false), Result::kAlreadyExists);
  EXPECT_EQ(ResultOfStatus(absl::NotFoundError(""), false), Result::kNotFound);
  EXPECT_EQ(ResultOfStatus(absl::InvalidArgumentError(""), false), Result::kRefused);
  EXPECT_EQ(ResultOfStatus(absl::ResourceExhaustedError(""), false), Result::kRefused);
  EXPECT_EQ(ResultOfStatus(absl::UnavailableError(""), true), Result::kRefused);
  EXPECT_EQ(ResultOfStatus(absl::UnavailableError(""), false), Result::kUnknown);
  EXPECT_EQ(ResultOfStatus(absl::DeadlineExceededError(""), false), Result::kUnknown);
  EXPECT_EQ(ResultOfStatus(absl::InternalError(""), false), Result::kUnknown);
  EXPECT_EQ(ResultOfStatus(absl::CancelledError(""), false), Result::kUnknown);
  // The marker belongs to UNAVAILABLE: a deadline is unknown whatever it says.
  EXPECT_EQ(ResultOfStatus(absl::DeadlineExceededError(""), true), Result::kUnknown);
}

}  // namespace
}  // namespace vipu::history
