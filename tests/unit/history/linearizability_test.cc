// CheckLinearizable on hand-written histories, legal and not, and on long
// histories generated from a sequential run with and without one mutation.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/history/linearizability.h"

namespace vipu::history {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Times in the hand-written histories are in microseconds.
constexpr int64_t kUs = 1000;

Operation Op(int client, int64_t from_us, int64_t to_us, OpKind kind, std::string partition,
             Result result) {
  Operation op;
  op.client = client;
  op.kind = kind;
  op.partition = std::move(partition);
  op.invoke_ns = from_us * kUs;
  op.complete_ns = to_us * kUs;
  op.result = result;
  return op;
}
Operation Create(int client, int64_t from, int64_t to, std::string p, Result r = Result::kOk) {
  return Op(client, from, to, OpKind::kCreate, std::move(p), r);
}
Operation Remove(int client, int64_t from, int64_t to, std::string p, Result r = Result::kOk) {
  return Op(client, from, to, OpKind::kRemove, std::move(p), r);
}
Operation Get(int client, int64_t from, int64_t to, std::string p, bool found) {
  Operation op = Op(client, from, to, OpKind::kGet, std::move(p), Result::kOk);
  op.found = found;
  return op;
}
Operation List(int client, int64_t from, int64_t to, std::vector<std::string> ids) {
  Operation op = Op(client, from, to, OpKind::kList, "", Result::kOk);
  op.listed = std::move(ids);
  return op;
}

CheckResult Check(const std::vector<Operation>& history) {
  absl::StatusOr<CheckResult> result = CheckLinearizable(history);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? *result : CheckResult{};
}

#define EXPECT_LINEARIZABLE(history)                \
  do {                                              \
    const CheckResult r_ = Check(history);          \
    EXPECT_TRUE(r_.linearizable) << r_.explanation; \
    EXPECT_THAT(r_.explanation, IsEmpty());         \
  } while (false)

TEST(HistoryLinearizabilityTest, EmptyHistoryIsLinearizable) { EXPECT_LINEARIZABLE({}); }

TEST(HistoryLinearizabilityTest, SequentialLifeOfOnePartitionIsLinearizable) {
  EXPECT_LINEARIZABLE((std::vector<Operation>{
      List(1, 0, 10, {}),
      Create(1, 20, 30, "p1"),
      Get(2, 40, 50, "p1", true),
      Create(2, 60, 70, "p1", Result::kAlreadyExists),
      List(3, 80, 90, {"p1"}),
      Remove(1, 100, 110, "p1"),
      Get(2, 120, 130, "p1", false),
      Remove(3, 140, 150, "p1", Result::kNotFound),
      List(3, 160, 170, {}),
  }));
}

TEST(HistoryLinearizabilityTest, StaleReadAfterAcknowledgedRemoveIsAViolation) {
  const std::vector<Operation> history = {
      Create(1, 0, 10, "p3"),
      Remove(1, 20, 30, "p3"),
      Get(2, 40, 50, "p3", true),
  };
  const CheckResult r = Check(history);
  EXPECT_FALSE(r.linearizable);
  EXPECT_THAT(r.explanation,
              AllOf(HasSubstr("get p3 by client 2 at [0.000040 s, 0.000050 s] found p3"),
                    HasSubstr("p3 was gone"), HasSubstr("remove p3 by client 1")));
  ASSERT_FALSE(r.culprits.empty());
  EXPECT_EQ(r.culprits[0], 2u);
  EXPECT_THAT(r.culprits, Contains(1u));
}

TEST(HistoryLinearizabilityTest, ReadConcurrentWithRemoveMaySeeEither) {
  EXPECT_LINEARIZABLE((std::vector<Operation>{
      Create(1, 0, 10, "p3"),
      Remove(1, 20, 60, "p3"),
      Get(2, 30, 40, "p3", true),
      Get(3, 30, 40, "p3", false),
  }));
}

TEST(HistoryLinearizabilityTest, AcknowledgedCreateMissingFromLaterListIsAViolation) {
  const CheckResult r = Check({
      Create(1, 0, 10, "p1"),
      Create(2, 0, 10, "p2"),
      List(3, 20, 30, {"p2"}),
  });
  EXPECT_FALSE(r.linearizable);
  EXPECT_THAT(r.explanation, AllOf(HasSubstr("list by client 3"), HasSubstr("it misses p1"),
                                   HasSubstr("create p1 by client 1")));
}

TEST(HistoryLinearizabilityTest, CreateAcknowledgedTwiceIsAViolation) {
  const CheckResult r = Check({
      Create(1, 0, 10, "p1"),
      Create(2, 20, 30, "p1"),
  });
  EXPECT_FALSE(r.linearizable);
  EXPECT_THAT(r.explanation, AllOf(HasSubstr("create p1 by client 2"), HasSubstr("p1 was there")));
  // Concurrent, no order helps either: one of them must have found p1.
  EXPECT_FALSE(Check({Create(1, 0, 10, "p1"), Create(2, 5, 15, "p1")}).linearizable);
}

TEST(HistoryLinearizabilityTest, CreateAcknowledgedAgainAfterRemoveIsAViolation) {
  // Each id is created at most once: an acknowledged create of a removed
  // id brought it back.
  const CheckResult r = Check({
      Create(1, 0, 10, "p1"),
      Remove(1, 20, 30, "p1"),
      Create(2, 40, 50, "p1"),
  });
  EXPECT_FALSE(r.linearizable);
  EXPECT_THAT(r.explanation, HasSubstr("an id is created at most once"));
}

TEST(HistoryLinearizabilityTest, ListShowingRemovedIdAfterRemoveCompletedIsAViolation) {
  const CheckResult r = Check({
      Create(1, 0, 10, "p1"),
      Create(1, 20, 30, "p2"),
      Remove(2, 40, 50, "p1"),
      List(3, 60, 70, {"p1", "p2"}),
  });
  EXPECT_FALSE(r.linearizable);
  EXPECT_THAT(r.explanation, AllOf(HasSubstr("it shows p1"), HasSubstr("p1 was gone")));
  // Overlapping the remove, the list may come first.
  EXPECT_LINEARIZABLE((std::vector<Operation>{
      Create(1, 0, 10, "p1"),
      Create(1, 20, 30, "p2"),
      Remove(2, 40, 65, "p1"),
      List(3, 60, 70, {"p1", "p2"}),
  }));
}

TEST(HistoryLinearizabilityTest, ConcurrentOperationsLegalOnlyInOneOrder) {
  // The get can only come after the create it overlaps.
  EXPECT_LINEARIZABLE((std::vector<Operation>{
      Create(1, 0, 100, "p1"),
      Get(2, 10, 20, "p1", true),
      Get(3, 30, 40, "p1", true),
  }));
  // The remove must come after the get that found p1 and before the one
  // that did not: only one order of the three works.
  EXPECT_LINEARIZABLE((std::vector<Operation>{
      Create(1, 0, 5, "p1"),
      Remove(1, 10, 100, "p1"),
      Get(3, 50, 60, "p1", false),
      Get(2, 20, 30, "p1", true),
  }));
  // Swap the two reads and no order works.
  const CheckResult r = Check({
      Create(1, 0, 5, "p1"),
      Remove(1, 10, 100, "p1"),
      Get(2, 20, 30, "p1", false),
      Get(3, 50, 60, "p1", true),
  });
  EXPECT_FALSE(r.linearizable);
  EXPECT_THAT(r.explanation, HasSubstr("get p1 by client"));
}

TEST(HistoryLinearizabilityTest, ListsThatDisagreeOnTheOrderOfTwoCreatesAreAViolation) {
  // Each id alone is fine; together the first list puts p1 before p2 and
  // the second p2 before p1.
  const CheckResult r = Check({
      Create(1, 0, 100, "p1"),
      Create(2, 0, 100, "p2"),
      List(3, 10, 90, {"p1"}),
      List(4, 10, 90, {"p2"}),
  });
  EXPECT_FALSE(r.linearizable);
  EXPECT_THAT(r.explanation, HasSubstr("list by client"));
  // One list seeing one of them first is fine.
  EXPECT_LINEARIZABLE((std::vector<Operation>{
      Create(1, 0, 100, "p1"),
      Create(2, 0, 100, "p2"),
      List(3, 10, 90, {"p1"}),
      List(4, 10, 90, {"p1", "p2"}),
  }));
}

TEST(HistoryLinearizabilityTest, UnknownCreateThatShowsUpLaterIsLegal) {
  EXPECT_LINEARIZABLE((std::vector<Operation>{
      Create(1, 0, 10, "p1", Result::kUnknown),
      List(2, 100, 110, {"p1"}),
      Get(3, 200, 210, "p1", true),
  }));
  // Even after lists that did not see it: it may take effect after the
  // client gave up.
  EXPECT_LINEARIZABLE((std::vector<Operation>{
      Create(1, 0, 10, "p1", Result::kUnknown),
      List(2, 20, 30, {}),
      Get(3, 40, 50, "p1", false),
      List(2, 60, 70, {"p1"}),
  }));
  // And a retry that finds it there.
  EXPECT_LINEARIZABLE((std::vector<Operation>{
      Create(1, 0, 10, "p1", Result::kUnknown),
      Create(1, 20, 30, "p1", Result::kAlreadyExists),
  }));
}

TEST(HistoryLinearizabilityTest, UnknownCreateNeverSeenIsLegal) {
  EXPECT_LINEARIZABLE((std::vector<Operation>{
      Create(1, 0, 10, "p1", Result::kUnknown),
      Get(2, 20, 30, "p1", false),
      List(3, 40, 50, {}),
  }));
}

TEST(HistoryLinearizabilityTest, LostAcknowledgedCreateIsAViolation) {
  const CheckResult r = Check({
      Create(1, 0, 10, "p1"),
      Get(2, 20, 30, "p1", false),
  });
  EXPECT_FALSE(r.linearizable);
  EXPECT_THAT(r.explanation, AllOf(HasSubstr("get p1 by client 2"), HasSubstr("did not find p1"),
                                   HasSubstr("p1 was there")));
  EXPECT_EQ(r.culprits, (std::vector<size_t>{1, 0}));
}

TEST(HistoryLinearizabilityTest, ReadThatSeesAnIdBeforeItsCreateWasSentIsAViolation) {
  const CheckResult r = Check({
      List(2, 0, 10, {"p1"}),
      Create(1, 20, 30, "p1"),
  });
  EXPECT_FALSE(r.linearizable);
  EXPECT_THAT(r.explanation, HasSubstr("nothing that could create p1 had been sent"));
  EXPECT_FALSE(Check({Get(2, 0, 10, "p1", true), Create(1, 20, 30, "p1")}).linearizable);
}

TEST(HistoryLinearizabilityTest, UnknownCreateCannotBringBackARemovedId) {
  // The first create's answer was lost, the retry found p1 there, p1 was
  // removed; the lost create cannot make it reappear.
  const CheckResult r = Check({
      Create(1, 0, 10, "p1", Result::kUnknown),
      Create(1, 20, 30, "p1", Result::kAlreadyExists),
      Remove(2, 40, 50, "p1"),
      List(3, 60, 70, {"p1"}),
  });
  EXPECT_FALSE(r.linearizable);
  EXPECT_THAT(r.explanation, HasSubstr("it shows p1"));
}

TEST(HistoryLinearizabilityTest, UnknownRemoveMayTakeEffectOrNot) {
  EXPECT_LINEARIZABLE((std::vector<Operation>{
      Create(1, 0, 10, "p1"),
      Remove(1, 20, 30, "p1", Result::kUnknown),
      Get(2, 40, 50, "p1", true),
      Get(2, 60, 70, "p1", false),
      Remove(1, 80, 90, "p1", Result::kNotFound),
  }));
  // But once gone, gone.
  EXPECT_FALSE(Check({
                         Create(1, 0, 10, "p1"),
                         Remove(1, 20, 30, "p1", Result::kUnknown),
                         Get(2, 40, 50, "p1", false),
                         Get(2, 60, 70, "p1", true),
                     })
                   .linearizable);
}

TEST(HistoryLinearizabilityTest, DefiniteFailuresAreObservations) {
  EXPECT_FALSE(Check({Create(1, 0, 10, "p1", Result::kAlreadyExists)}).linearizable);
  EXPECT_FALSE(
      Check({Create(1, 0, 10, "p1"), Remove(2, 20, 30, "p1", Result::kNotFound)}).linearizable);
  // A get that answers NOT_FOUND says "not found".
  Operation get = Op(2, 20, 30, OpKind::kGet, "p1", Result::kNotFound);
  EXPECT_FALSE(Check({Create(1, 0, 10, "p1"), get}).linearizable);
}

TEST(HistoryLinearizabilityTest, RefusedAndUnansweredReadsSayNothing) {
  Operation lost_get = Get(2, 20, 30, "p1", false);
  lost_get.result = Result::kUnknown;
  Operation lost_list = List(2, 20, 30, {});
  lost_list.listed.clear();
  lost_list.result = Result::kUnknown;
  const CheckResult r = Check({
      Create(1, 0, 10, "p1", Result::kRefused),
      Remove(1, 0, 10, "p2", Result::kRefused),
      lost_get,
      lost_list,
      List(3, 40, 50, {}),
  });
  EXPECT_TRUE(r.linearizable) << r.explanation;
  EXPECT_EQ(r.operations_checked, 1u);
  // A refused create is not a create.
  EXPECT_FALSE(
      Check({Create(1, 0, 10, "p1", Result::kRefused), List(3, 40, 50, {"p1"})}).linearizable);
}

TEST(HistoryLinearizabilityTest, InvalidOperationIsRefusedWithItsIndex) {
  Operation backwards = Create(1, 50, 40, "p1");
  absl::StatusOr<CheckResult> r = CheckLinearizable({Create(1, 0, 10, "p0"), backwards});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), AllOf(HasSubstr("operation 1"), HasSubstr("before")));
  Operation list_with_id = List(1, 0, 10, {});
  list_with_id.partition = "p1";
  EXPECT_EQ(CheckLinearizable({list_with_id}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckLinearizable({Remove(1, 0, 10, "p1", Result::kAlreadyExists)}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckLinearizable({Create(1, 0, 10, "")}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HistoryLinearizabilityTest, SearchBeyondItsLimitIsUndecided) {
  // Twenty creates at once and a list that saw them all: proving it takes
  // one configuration per create, more than the limit given.
  std::vector<Operation> history;
  std::vector<std::string> all;
  for (int i = 0; i < 20; ++i) {
    history.push_back(Create(i, 0, 100, "p" + std::to_string(i)));
    all.push_back("p" + std::to_string(i));
  }
  history.push_back(List(30, 10, 190, all));
  EXPECT_LINEARIZABLE(history);
  CheckOptions options;
  options.max_configurations = 10;
  absl::StatusOr<CheckResult> r = CheckLinearizable(history, options);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr("neither proven nor refuted"), HasSubstr("more than 10")));
}

// A history from a sequential run of the model: operation k takes effect
// at (k + 1) microseconds and its interval is stretched by up to `jitter`
// on each side, so each overlaps its neighbours. Changes whose answer is
// lost take effect at their own point, a little later (even after the
// client gave up), or never.
struct Generated {
  std::vector<Operation> history;
  std::vector<int64_t> point;             // each operation's instant
  std::map<std::string, size_t> creator;  // id -> the operation that added it
  std::map<std::string, size_t> remover;  // id -> the operation that deleted it
};

Generated Generate(uint64_t seed, int count, int64_t jitter_ns) {
  std::mt19937_64 rng(seed);
  auto uniform = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Generated g;
  std::set<std::string> present;
  std::vector<std::string> known;
  int next_id = 0;
  std::multimap<int64_t, size_t> delayed;  // lost changes, by when they take effect
  auto apply = [&](const Operation& op, size_t index) {
    if (op.kind == OpKind::kCreate && !present.count(op.partition) &&
        !g.creator.count(op.partition)) {
      present.insert(op.partition);
      g.creator[op.partition] = index;
    } else if (op.kind == OpKind::kRemove && present.erase(op.partition) > 0) {
      g.remover[op.partition] = index;
    }
  };
  auto pick = [&](const auto& ids) {
    auto it = ids.begin();
    std::advance(it, uniform(0, static_cast<int64_t>(ids.size()) - 1));
    return *it;
  };
  for (int k = 0; k < count; ++k) {
    const int64_t at = (k + 1) * 1000;
    for (auto it = delayed.begin(); it != delayed.end() && it->first < at;) {
      apply(g.history[it->second], it->second);
      it = delayed.erase(it);
    }
    Operation op;
    op.client = k % 8;
    op.invoke_ns = at - uniform(1, jitter_ns);
    op.complete_ns = at + uniform(1, jitter_ns);
    const int64_t dice = uniform(0, 99);
    if (dice < 25 || present.empty()) {
      op.kind = OpKind::kCreate;
      op.partition = "p" + std::to_string(next_id++);
      known.push_back(op.partition);
      op.result = Result::kOk;
    } else if (dice < 30) {
      op.kind = OpKind::kCreate;
      op.partition = pick(present);
      op.result = Result::kAlreadyExists;
    } else if (dice < 48) {
      op.kind = OpKind::kRemove;
      op.partition = pick(present);
      op.result = Result::kOk;
    } else if (dice < 51) {
      op.kind = OpKind::kRemove;
      op.partition = pick(known);
      op.result = present.count(op.partition) ? Result::kOk : Result::kNotFound;
    } else if (dice < 76) {
      op.kind = OpKind::kGet;
      op.partition = pick(known);
      op.result = Result::kOk;
      op.found = present.count(op.partition) > 0;
    } else if (dice < 86) {
      op.kind = OpKind::kList;
      op.result = Result::kOk;
      op.listed.assign(present.begin(), present.end());
      std::shuffle(op.listed.begin(), op.listed.end(), rng);
    } else if (dice < 92) {
      op.kind = OpKind::kCreate;
      op.partition = "p" + std::to_string(next_id++);
      known.push_back(op.partition);
      op.result = Result::kUnknown;
    } else if (dice < 96) {
      op.kind = OpKind::kRemove;
      op.partition = pick(present);
      op.result = Result::kUnknown;
    } else {
      op.kind = dice < 98 ? OpKind::kCreate : OpKind::kRemove;
      op.partition = pick(known);
      op.result = Result::kRefused;
    }
    const size_t index = g.history.size();
    if (op.result == Result::kUnknown) {
      const int64_t when = uniform(0, 3);
      if (when == 0) {
        // never
      } else if (when == 1) {
        apply(op, index);
      } else {
        delayed.emplace(at + uniform(1, 20 * jitter_ns), index);
      }
    } else if (op.result == Result::kOk) {
      apply(op, index);
    }
    g.history.push_back(op);
    g.point.push_back(at);
  }
  return g;
}

constexpr int kOps = 5000;
constexpr int64_t kJitter = 2500;  // each interval overlaps about five others
// The mutation tests below change one operation of this same history.
constexpr uint64_t kSeed = 1;

TEST(HistoryLinearizabilityTest, GeneratedLegalHistoryOf5000OperationsIsLinearizable) {
  const Generated g = Generate(kSeed, kOps, kJitter);
  const CheckResult r = Check(g.history);
  EXPECT_TRUE(r.linearizable) << r.explanation;
  EXPECT_GT(r.operations_checked, static_cast<size_t>(kOps) * 9 / 10);
}

TEST(HistoryLinearizabilityTest, GeneratedLegalHistoryWithThirtyInFlightIsLinearizable) {
  const Generated g = Generate(3, 2000, 6 * kJitter);
  const CheckResult r = Check(g.history);
  EXPECT_TRUE(r.linearizable) << r.explanation;
}

// Whether `id` was certainly there throughout operation `i`: an
// acknowledged create of it completed before `i` was invoked, and an
// operation invoked after `i` completed still saw it (so no remove, even
// one whose answer was lost, can have taken effect before).
bool SurelyPresent(const Generated& g, const std::string& id, size_t i) {
  auto created = g.creator.find(id);
  if (created == g.creator.end()) return false;
  const Operation& create = g.history[created->second];
  if (create.result != Result::kOk || create.complete_ns >= g.history[i].invoke_ns) return false;
  for (size_t j = i + 1; j < g.history.size(); ++j) {
    const Operation& later = g.history[j];
    if (later.invoke_ns <= g.history[i].complete_ns || later.result != Result::kOk) continue;
    if ((later.kind == OpKind::kGet && later.partition == id && later.found) ||
        (later.kind == OpKind::kList &&
         std::find(later.listed.begin(), later.listed.end(), id) != later.listed.end())) {
      return true;
    }
  }
  return false;
}

TEST(HistoryLinearizabilityTest, GeneratedHistoryWithAFlippedReadIsAViolation) {
  Generated g = Generate(kSeed, kOps, kJitter);
  // A get in the middle that found an id surely there, now says it did not.
  size_t target = g.history.size();
  for (size_t i = g.history.size() / 2; i < g.history.size(); ++i) {
    const Operation& op = g.history[i];
    if (op.kind == OpKind::kGet && op.found && SurelyPresent(g, op.partition, i)) {
      target = i;
      break;
    }
  }
  ASSERT_LT(target, g.history.size());
  g.history[target].found = false;
  const CheckResult r = Check(g.history);
  EXPECT_FALSE(r.linearizable);
  ASSERT_FALSE(r.culprits.empty());
  EXPECT_EQ(r.culprits[0], target) << r.explanation;
  EXPECT_THAT(r.explanation, HasSubstr("did not find"));
}

TEST(HistoryLinearizabilityTest, GeneratedHistoryWithAListMissingAnIdIsAViolation) {
  Generated g = Generate(kSeed, kOps, kJitter);
  size_t target = g.history.size();
  for (size_t i = g.history.size() / 2; i < g.history.size() && target == g.history.size(); ++i) {
    Operation& op = g.history[i];
    if (op.kind != OpKind::kList) continue;
    for (size_t j = 0; j < op.listed.size(); ++j) {
      if (SurelyPresent(g, op.listed[j], i)) {
        op.listed.erase(op.listed.begin() + static_cast<std::ptrdiff_t>(j));
        target = i;
        break;
      }
    }
  }
  ASSERT_LT(target, g.history.size());
  const CheckResult r = Check(g.history);
  EXPECT_FALSE(r.linearizable);
  ASSERT_FALSE(r.culprits.empty());
  EXPECT_EQ(r.culprits[0], target) << r.explanation;
  EXPECT_THAT(r.explanation, HasSubstr("it misses"));
}

TEST(HistoryLinearizabilityTest, GeneratedHistoryWithAResurrectedIdIsAViolation) {
  // A list shows again an id whose remove was acknowledged before it began.
  Generated g = Generate(kSeed, kOps, kJitter);
  size_t target = g.history.size();
  std::string ghost;
  for (size_t i = g.history.size() / 2; i < g.history.size() && ghost.empty(); ++i) {
    if (g.history[i].kind != OpKind::kList) continue;
    for (const auto& [id, index] : g.remover) {
      const Operation& remove = g.history[index];
      if (remove.result == Result::kOk && remove.complete_ns < g.history[i].invoke_ns) {
        ghost = id;
        g.history[i].listed.push_back(ghost);
        target = i;
        break;
      }
    }
  }
  ASSERT_LT(target, g.history.size());
  const CheckResult r = Check(g.history);
  EXPECT_FALSE(r.linearizable);
  ASSERT_FALSE(r.culprits.empty());
  EXPECT_EQ(r.culprits[0], target) << r.explanation;
  EXPECT_THAT(r.explanation, HasSubstr("it shows " + ghost));
}

}  // namespace
}  // namespace vipu::history
