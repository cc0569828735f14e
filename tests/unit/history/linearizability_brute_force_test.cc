// CheckLinearizable against the definition itself: on thousands of small
// random histories, its verdict equals that of trying every order of the
// operations and every choice of which lost changes took effect.
#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/history/history_file.h"
#include "tests/history/linearizability.h"

namespace vipu::history {
namespace {

enum class State { kAbsent, kPresent, kRemoved };

// Whether `ops`, in this order, behave as the model says. A lost change
// among them took effect, so it must change the set.
bool Legal(const std::vector<Operation>& ops, const std::vector<int>& order) {
  std::map<std::string, State> set;
  for (int i : order) {
    const Operation& op = ops[i];
    State& s = set[op.partition];
    switch (op.kind) {
      case OpKind::kCreate:
        if (op.result == Result::kAlreadyExists) {
          if (s != State::kPresent) return false;
        } else {
          if (s != State::kAbsent) return false;
          s = State::kPresent;
        }
        break;
      case OpKind::kRemove:
        if (op.result == Result::kNotFound) {
          if (s == State::kPresent) return false;
        } else {
          if (s != State::kPresent) return false;
          s = State::kRemoved;
        }
        break;
      case OpKind::kGet:
        if (op.found != (s == State::kPresent)) return false;
        break;
      case OpKind::kList: {
        std::vector<std::string> present;
        for (const auto& [id, state] : set) {
          if (state == State::kPresent && !id.empty()) present.push_back(id);
        }
        std::vector<std::string> listed = op.listed;
        std::sort(listed.begin(), listed.end());
        listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
        if (present != listed) return false;
        break;
      }
    }
  }
  return true;
}

// Every order consistent with real time (a completed before b was invoked
// puts a first; a lost change has no completion), for every subset of the
// lost changes.
bool BruteForce(const std::vector<Operation>& history) {
  std::vector<Operation> definite, lost;
  for (const Operation& op : history) {
    const bool read = op.kind == OpKind::kGet || op.kind == OpKind::kList;
    if (op.result == Result::kRefused || (read && op.result == Result::kUnknown)) continue;
    Operation copy = op;
    if (copy.kind == OpKind::kGet && copy.result == Result::kNotFound) {
      copy.result = Result::kOk;
      copy.found = false;
    }
    (copy.result == Result::kUnknown ? lost : definite).push_back(copy);
  }
  for (uint32_t subset = 0; subset < (1u << lost.size()); ++subset) {
    std::vector<Operation> ops = definite;
    for (size_t k = 0; k < lost.size(); ++k) {
      if (subset & (1u << k)) ops.push_back(lost[k]);
    }
    std::vector<int> order(ops.size());
    for (size_t i = 0; i < ops.size(); ++i) order[i] = static_cast<int>(i);
    do {
      bool respects_time = true;
      for (size_t x = 0; x < order.size() && respects_time; ++x) {
        for (size_t y = x + 1; y < order.size(); ++y) {
          const Operation& later = ops[order[x]];
          const Operation& earlier = ops[order[y]];
          if (earlier.result != Result::kUnknown && earlier.complete_ns < later.invoke_ns) {
            respects_time = false;
            break;
          }
        }
      }
      if (respects_time && Legal(ops, order)) return true;
    } while (std::next_permutation(order.begin(), order.end()));
  }
  return false;
}

Operation RandomOperation(std::mt19937_64& rng, int client) {
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const std::vector<std::string> ids = {"a", "b", "c"};
  Operation op;
  op.client = client;
  op.invoke_ns = uniform(0, 20);
  op.complete_ns = op.invoke_ns + uniform(0, 8);
  op.kind = static_cast<OpKind>(uniform(0, 3));
  if (op.kind != OpKind::kList) op.partition = ids[uniform(0, 2)];
  const int dice = uniform(0, 9);
  switch (op.kind) {
    case OpKind::kCreate:
      op.result = dice < 5   ? Result::kOk
                  : dice < 7 ? Result::kAlreadyExists
                  : dice < 9 ? Result::kUnknown
                             : Result::kRefused;
      break;
    case OpKind::kRemove:
      op.result = dice < 5   ? Result::kOk
                  : dice < 7 ? Result::kNotFound
                  : dice < 9 ? Result::kUnknown
                             : Result::kRefused;
      break;
    case OpKind::kGet:
      op.result = dice < 8 ? Result::kOk : dice < 9 ? Result::kNotFound : Result::kUnknown;
      op.found = op.result == Result::kOk && uniform(0, 1) == 1;
      break;
    case OpKind::kList:
      op.result = dice < 9 ? Result::kOk : Result::kUnknown;
      if (op.result == Result::kOk) {
        for (const std::string& id : ids) {
          if (uniform(0, 1) == 1) op.listed.push_back(id);
        }
      }
      break;
  }
  return op;
}

TEST(HistoryBruteForceTest, VerdictEqualsTryingEveryOrderOnSmallRandomHistories) {
  std::mt19937_64 rng(20261127);
  int legal = 0, illegal = 0;
  for (int round = 0; round < 2500; ++round) {
    const int count = std::uniform_int_distribution<int>(1, 7)(rng);
    std::vector<Operation> history;
    for (int i = 0; i < count; ++i) history.push_back(RandomOperation(rng, i));
    absl::StatusOr<CheckResult> checked = CheckLinearizable(history);
    ASSERT_TRUE(checked.ok()) << checked.status();
    const bool expected = BruteForce(history);
    std::string text;
    for (const Operation& op : history) text += FormatOperation(op) + "\n";
    ASSERT_EQ(checked->linearizable, expected) << "round " << round << ":\n"
                                               << text << checked->explanation;
    (expected ? legal : illegal)++;
  }
  // Both verdicts were exercised, not just one.
  EXPECT_GT(legal, 250);
  EXPECT_GT(illegal, 250);
}

}  // namespace
}  // namespace vipu::history
