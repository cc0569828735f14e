// The linearizability check of a set-of-partitions history: preparation,
// the search per id and over everything, and the words of a violation.
#include "tests/history/linearizability.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace vipu::history {
namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// An operation that takes part in the check.
struct Op {
  size_t index = 0;  // into the caller's history
  OpKind kind = OpKind::kGet;
  int id = -1;  // -1 for a list
  Result result = Result::kOk;
  bool found = false;       // get
  std::vector<int> listed;  // list: sorted, without repeats
  int64_t invoke = 0;
  int64_t complete = kNever;  // kNever for an unknown outcome
  bool unknown() const { return result == Result::kUnknown; }
  bool Lists(int p) const { return std::binary_search(listed.begin(), listed.end(), p); }
};

enum class IdState : uint8_t { kAbsent, kPresent, kRemoved };

// 64 bits of splitmix64: fingerprints of an operation's presence in a
// configuration and of an id's state, two independent halves of 128 bits.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Fingerprint {
  uint64_t a = 0, b = 0;
  void Toggle(uint64_t key) {
    a ^= Mix(2 * key);
    b ^= Mix(2 * key + 1);
  }
  Fingerprint operator^(const Fingerprint& o) const { return {a ^ o.a, b ^ o.b}; }
  bool operator==(const Fingerprint& o) const { return a == o.a && b == o.b; }
};
struct FingerprintHash {
  size_t operator()(const Fingerprint& f) const { return static_cast<size_t>(f.a); }
};

// The operations of unknown outcome on each id, which the search never
// orders on their own: see Search.
struct Unknowns {
  std::vector<const Op*> first_create;  // per id, the earliest invoked, or null
  std::vector<const Op*> first_remove;
};

// The set the search has built so far: each id's state and which operation
// put it there, with an undo log. Shared by the runs; each run leaves it as
// it found it.
class SetState {
 public:
  explicit SetState(int ids)
      : state_(ids, IdState::kAbsent),
        creator_(ids, nullptr),
        remover_(ids, nullptr),
        position_(ids, -1) {}

  IdState state(int p) const { return state_[p]; }
  bool present(int p) const { return state_[p] == IdState::kPresent; }
  const Op* creator(int p) const { return creator_[p]; }
  const Op* remover(int p) const { return remover_[p]; }
  size_t present_count() const { return members_.size(); }
  const std::vector<int>& members() const { return members_; }
  const Fingerprint& fingerprint() const { return fingerprint_; }
  int ids() const { return static_cast<int>(state_.size()); }

  // p is added by `creator` (absent before).
  void Add(int p, const Op* creator) {
    Log(p);
    Set(p, IdState::kPresent);
    creator_[p] = creator;
  }
  // p is deleted by `remover` (present before).
  void Delete(int p, const Op* remover) {
    Log(p);
    Set(p, IdState::kRemoved);
    remover_[p] = remover;
  }

  size_t mark() const { return log_.size(); }
  // The id of the k-th change in the log.
  int logged(size_t k) const { return log_[k].id; }
  void UndoTo(size_t mark) {
    while (log_.size() > mark) {
      const Saved& saved = log_.back();
      Set(saved.id, saved.state);
      creator_[saved.id] = saved.creator;
      remover_[saved.id] = saved.remover;
      log_.pop_back();
    }
  }

 private:
  struct Saved {
    int id;
    IdState state;
    const Op* creator;
    const Op* remover;
  };
  void Log(int p) { log_.push_back({p, state_[p], creator_[p], remover_[p]}); }
  void Set(int p, IdState s) {
    if (state_[p] == s) return;
    fingerprint_.Toggle(3 * static_cast<uint64_t>(p) + static_cast<uint64_t>(state_[p]));
    fingerprint_.Toggle(3 * static_cast<uint64_t>(p) + static_cast<uint64_t>(s));
    if (state_[p] == IdState::kPresent) {
      const int last = members_.back();
      members_[position_[p]] = last;
      position_[last] = position_[p];
      members_.pop_back();
      position_[p] = -1;
    }
    if (s == IdState::kPresent) {
      position_[p] = static_cast<int>(members_.size());
      members_.push_back(p);
    }
    state_[p] = s;
  }

  std::vector<IdState> state_;
  std::vector<const Op*> creator_;
  std::vector<const Op*> remover_;
  std::vector<int> members_;   // the present ids
  std::vector<int> position_;  // where each present id is in members_
  std::vector<Saved> log_;
  Fingerprint fingerprint_;
};

class Words {
 public:
  Words(const std::vector<Operation>& history, const std::vector<std::string>& names,
        int64_t origin)
      : history_(history), names_(names), origin_(origin) {}

  std::string Of(const Op& op) const { return DescribeOperation(history_[op.index], origin_); }
  const std::string& Name(int id) const { return names_[id]; }
  std::string Time(int64_t ns) const {
    return absl::StrFormat("%.6f s", static_cast<double>(ns - origin_) / 1e9);
  }

  // Why `op` (its completion reached) cannot take effect in `set`, about
  // the id `p` (for a list, one id it gets wrong).
  std::string Why(const Op& op, int p, const SetState& set) const {
    const std::string& name = Name(p);
    const IdState s = set.state(p);
    const std::string before = absl::StrCat(" before ", Time(op.complete), ", when it completed");
    std::string where;
    if (s == IdState::kAbsent) {
      where = absl::StrCat("no order that fits the other operations creates ", name, before);
    } else if (s == IdState::kPresent) {
      where = absl::StrCat(name, " was there: ", Of(*set.creator(p)),
                           ", and no order that fits the other operations removes it", before);
    } else {
      where =
          absl::StrCat(name, " was gone: ", Of(*set.creator(p)), ", then ", Of(*set.remover(p)));
    }
    switch (op.kind) {
      case OpKind::kCreate:
        if (op.result == Result::kOk && s == IdState::kRemoved) {
          return absl::StrCat("but an id is created at most once, and ", where);
        }
        return absl::StrCat("but ", where);
      case OpKind::kRemove:
      case OpKind::kGet:
        return absl::StrCat("but ", where);
      case OpKind::kList:
        if (s == IdState::kPresent) {
          return absl::StrCat("it misses ", name, ", but ", where);
        }
        return absl::StrCat("it shows ", name, ", but ", where);
    }
    return where;
  }

 private:
  const std::vector<Operation>& history_;
  const std::vector<std::string>& names_;
  const int64_t origin_;
};

// One search (Wing & Gong, Lowe) over the operations of known outcome in
// `ops`. With `only_id` set, lists are observations of that id alone.
//
// Operations of unknown outcome are not ordered on their own. A lost create
// of p that took effect can always be moved later, to just before the first
// operation that needs p there: nothing in between needs p there, an
// acknowledged create of p in between would have found it, and a lost
// operation has no completion to stay before. Likewise a lost remove, to
// just before the first operation that needs p not there. So the search
// makes one take effect only when an operation needs it, and only if one
// was invoked before the point being ordered. That keeps them from
// multiplying the configurations, at the price of the state: it is no
// longer a function of the ordered operations, and is part of the
// configuration.
class Search {
 public:
  struct Outcome {
    bool linearizable = false;
    bool exhausted = false;
    std::string explanation;
    std::vector<size_t> culprits;
    size_t configurations = 0;
  };

  Search(std::vector<const Op*> ops, int only_id, const Unknowns* unknowns, SetState* set,
         const Words* words, size_t max_configurations)
      : ops_(std::move(ops)),
        only_id_(only_id),
        unknowns_(unknowns),
        set_(set),
        words_(words),
        max_configurations_(max_configurations) {}

  Outcome Run() {
    BuildEntries();
    Outcome out;
    std::unordered_set<Fingerprint, FingerprintHash> seen;
    Fingerprint ordered;  // of the set of ordered operations
    struct Step {
      int entry;
      size_t mark;
      bool forced;  // a read that was ordered without trying anything else
    };
    std::vector<Step> stack;
    const size_t start = set_->mark();
    size_t left = ops_.size();
    size_t deepest = 0;
    bool blocked_once = false;
    bool fresh = true;  // a configuration not explored yet
    int cur = kNil;
    int64_t frontier = kNever;
    // Orders the call `entry` (its operation applied since `mark`), unless
    // the configuration was explored before; returns whether it did.
    auto order = [&](int entry, size_t mark, bool forced) {
      const int i = op_of_[entry];
      Fingerprint next = ordered;
      next.Toggle(kOpKeys + static_cast<uint64_t>(i));
      if (!seen.insert(next ^ set_->fingerprint()).second) return false;
      ordered = next;
      stack.push_back({entry, mark, forced});
      Lift(entry);
      ordered_[i] = true;
      --left;
      fresh = true;
      return true;
    };
    while (left > 0) {
      if (seen.size() > max_configurations_) {
        out.exhausted = true;
        break;
      }
      bool failed = false;
      if (fresh) {
        fresh = false;
        frontier = Frontier();
        // A read that holds now without changing anything is ordered now:
        // it changes nothing, so if any order from here works, one with
        // the read first does. No alternative to it needs trying.
        for (int e = next_[kHead]; e != kNil && is_call_[e]; e = next_[e]) {
          const Op& op = *ops_[op_of_[e]];
          if (!IsRead(op)) continue;
          const size_t mark = set_->mark();
          const bool holds = TryApply(op, frontier) && set_->mark() == mark;
          set_->UndoTo(mark);
          if (!holds) continue;
          if (!order(e, mark, /*forced=*/true)) failed = true;  // explored: it failed
          break;
        }
        if (fresh) continue;
        cur = next_[kHead];
      }
      if (!failed && is_call_[cur]) {
        const Op& op = *ops_[op_of_[cur]];
        const size_t mark = set_->mark();
        const int i = op_of_[cur];
        doomed_by_[i] = -1;
        if (TryApply(op, frontier)) {
          doomed_by_[i] = Doomed(mark, i, frontier);
          if (doomed_by_[i] < 0 && order(cur, mark, /*forced=*/false)) continue;
        }
        set_->UndoTo(mark);
        cur = next_[cur];
        continue;
      }
      if (!failed) {
        // The completion of an operation not yet ordered: every order
        // tried up to here fails.
        if (!blocked_once || stack.size() > deepest) {
          blocked_once = true;
          deepest = stack.size();
          Explain(op_of_[cur], frontier, &out);
        }
      }
      // Back to the last configuration with alternatives left.
      Step top{kNil, 0, true};
      while (top.forced && !stack.empty()) {
        top = stack.back();
        stack.pop_back();
        set_->UndoTo(top.mark);
        const int i = op_of_[top.entry];
        ordered.Toggle(kOpKeys + static_cast<uint64_t>(i));
        Unlift(top.entry);
        ordered_[i] = false;
        ++left;
      }
      if (top.forced) break;  // nothing left to try
      cur = next_[top.entry];
      frontier = Frontier();
    }
    out.linearizable = left == 0 && !out.exhausted;
    if (out.linearizable) {
      out.explanation.clear();
      out.culprits.clear();
    }
    out.configurations = seen.size();
    set_->UndoTo(start);
    return out;
  }

 private:
  static constexpr int kHead = 0;
  static constexpr int kNil = -1;
  // Operations' fingerprint keys, apart from those of ids' states.
  static constexpr uint64_t kOpKeys = uint64_t{1} << 62;

  // The events in time order; at one instant invocations come before
  // completions, so that touching intervals are concurrent.
  void BuildEntries() {
    struct Event {
      int64_t time;
      bool is_call;
      int op;
    };
    std::vector<Event> events;
    for (size_t i = 0; i < ops_.size(); ++i) {
      events.push_back({ops_[i]->invoke, true, static_cast<int>(i)});
      events.push_back({ops_[i]->complete, false, static_cast<int>(i)});
    }
    std::sort(events.begin(), events.end(), [](const Event& x, const Event& y) {
      if (x.time != y.time) return x.time < y.time;
      if (x.is_call != y.is_call) return x.is_call;
      return x.op < y.op;
    });
    ordered_.assign(ops_.size(), false);
    doomed_by_.assign(ops_.size(), -1);
    // The indexes Doomed reads, each in order of completion.
    ops_of_id_.clear();
    lists_showing_.clear();
    lists_.clear();
    std::vector<int> by_completion(ops_.size());
    for (size_t i = 0; i < ops_.size(); ++i) by_completion[i] = static_cast<int>(i);
    std::sort(by_completion.begin(), by_completion.end(),
              [this](int x, int y) { return ops_[x]->complete < ops_[y]->complete; });
    for (int i : by_completion) {
      const Op& op = *ops_[i];
      if (op.kind != OpKind::kList) {
        ops_of_id_[op.id].push_back(i);
        continue;
      }
      lists_.push_back(i);
      if (only_id_ >= 0) {
        if (op.Lists(only_id_)) lists_showing_[only_id_].push_back(i);
      } else {
        for (int p : op.listed) lists_showing_[p].push_back(i);
      }
    }
    const size_t n = events.size() + 1;  // entry 0 is the head
    next_.assign(n, kNil);
    prev_.assign(n, kNil);
    op_of_.assign(n, -1);
    is_call_.assign(n, false);
    match_.assign(n, kNil);
    std::vector<int> call_of(ops_.size(), kNil);
    for (size_t k = 0; k < events.size(); ++k) {
      const int e = static_cast<int>(k) + 1;
      op_of_[e] = events[k].op;
      is_call_[e] = events[k].is_call;
      prev_[e] = e - 1;
      next_[e - 1] = e;
      if (events[k].is_call) {
        call_of[events[k].op] = e;
      } else {
        match_[call_of[events[k].op]] = e;
      }
    }
  }

  void Remove(int e) {
    next_[prev_[e]] = next_[e];
    if (next_[e] != kNil) prev_[next_[e]] = prev_[e];
  }
  void Reinsert(int e) {
    next_[prev_[e]] = e;
    if (next_[e] != kNil) prev_[next_[e]] = e;
  }
  void Lift(int call) {
    Remove(call);
    Remove(match_[call]);
  }
  void Unlift(int call) {
    Reinsert(match_[call]);
    Reinsert(call);
  }

  // The latest instant the next operation can be ordered at: the first
  // completion still to come.
  int64_t Frontier() const {
    for (int e = next_[kHead]; e != kNil; e = next_[e]) {
      if (!is_call_[e]) return ops_[op_of_[e]]->complete;
    }
    return kNever;
  }

  static bool IsRead(const Op& op) {
    return op.kind == OpKind::kGet || op.kind == OpKind::kList ||
           op.result == Result::kAlreadyExists || op.result == Result::kNotFound;
  }

  // Whether an operation not yet ordered (other than `current`) can no
  // longer be right after the changes made since `mark`. An id now there
  // stays there until a remove deletes it, so a read that needs it absent
  // and completes before any remove not yet ordered was invoked is lost;
  // an id removed stays removed, so a read that needs it there is lost.
  // Finding that now spares exploring every order of the operations in
  // flight between here and that read. The lists looked at are bounded
  // (kLookahead): missing one only costs time.
  //   Returns the operation found lost, or -1.
  int Doomed(size_t mark, int current, int64_t frontier) const {
    constexpr int kLookahead = 64;
    for (size_t k = mark; k < set_->mark(); ++k) {
      const int p = set_->logged(k);
      const bool present = set_->present(p);
      if (!present && set_->state(p) != IdState::kRemoved) continue;
      const int64_t removal = present ? EarliestRemoval(p) : kNever;
      auto lost = [&](int i) {
        if (i == current || ordered_[i]) return false;
        const Op& op = *ops_[i];
        if (op.kind == OpKind::kList) {
          const bool shown = op.Lists(only_id_ >= 0 ? only_id_ : p);
          return present ? !shown : shown;
        }
        return present ? NeedsAbsent(op) : NeedsPresent(op);
      };
      auto it = ops_of_id_.find(p);
      if (it != ops_of_id_.end()) {
        for (int i : Pending(it->second, frontier)) {
          if (ops_[i]->complete >= removal) break;
          if (lost(i)) return i;
        }
      }
      const std::vector<int>* lists = &lists_;
      if (!present) {
        auto showing = lists_showing_.find(p);
        if (showing == lists_showing_.end()) continue;
        lists = &showing->second;
      }
      int looked = 0;
      for (int i : Pending(*lists, frontier)) {
        if (ops_[i]->complete >= removal || ++looked > kLookahead) break;
        if (lost(i)) return i;
      }
    }
    return -1;
  }

  // The operations of `ops` (in order of completion) from the first that
  // completes at or after `frontier`, as every operation not yet ordered
  // does.
  struct Range {
    const int* first;
    const int* last;
    const int* begin() const { return first; }
    const int* end() const { return last; }
  };
  Range Pending(const std::vector<int>& ops, int64_t frontier) const {
    auto from = std::lower_bound(ops.begin(), ops.end(), frontier,
                                 [this](int i, int64_t t) { return ops_[i]->complete < t; });
    return {ops.data() + (from - ops.begin()), ops.data() + ops.size()};
  }

  static bool NeedsAbsent(const Op& op) {
    return (op.kind == OpKind::kGet && !op.found) || op.result == Result::kNotFound ||
           (op.kind == OpKind::kCreate && op.result == Result::kOk);
  }
  static bool NeedsPresent(const Op& op) {
    // An acknowledged create needs p absent, which a removed id never is
    // again; so it is lost too.
    return (op.kind == OpKind::kGet && op.found) || op.result == Result::kAlreadyExists ||
           (op.kind != OpKind::kGet && op.result == Result::kOk);
  }

  // The earliest invocation of a remove of p not yet ordered, acknowledged
  // or lost: p cannot be deleted before it.
  int64_t EarliestRemoval(int p) const {
    const Op* lost = unknowns_->first_remove[p];
    int64_t earliest = lost != nullptr ? lost->invoke : kNever;
    auto it = ops_of_id_.find(p);
    if (it == ops_of_id_.end()) return earliest;
    for (int i : it->second) {
      const Op& op = *ops_[i];
      if (op.kind == OpKind::kRemove && op.result == Result::kOk && !ordered_[i]) {
        earliest = std::min(earliest, op.invoke);
      }
    }
    return earliest;
  }

  // Makes p there for an operation ordered before `frontier`, with a lost
  // create if need be; false if it cannot be.
  bool NeedPresent(int p, int64_t frontier) {
    if (set_->present(p)) return true;
    const Op* lost = unknowns_->first_create[p];
    if (set_->state(p) != IdState::kAbsent || lost == nullptr || lost->invoke > frontier) {
      return false;
    }
    set_->Add(p, lost);
    return true;
  }
  // Makes p not there, with a lost remove if need be.
  bool NeedNotPresent(int p, int64_t frontier) {
    if (!set_->present(p)) return true;
    const Op* lost = unknowns_->first_remove[p];
    if (lost == nullptr || lost->invoke > frontier) return false;
    set_->Delete(p, lost);
    return true;
  }

  // Orders `op` now (before `frontier`) if the model allows it, with the
  // lost changes it needs. On false, the caller undoes what was done.
  bool TryApply(const Op& op, int64_t frontier) {
    switch (op.kind) {
      case OpKind::kCreate:
        if (op.result == Result::kAlreadyExists) return NeedPresent(op.id, frontier);
        if (set_->state(op.id) != IdState::kAbsent) return false;
        set_->Add(op.id, &op);
        return true;
      case OpKind::kRemove:
        if (op.result == Result::kNotFound) return NeedNotPresent(op.id, frontier);
        if (!NeedPresent(op.id, frontier)) return false;
        set_->Delete(op.id, &op);
        return true;
      case OpKind::kGet:
        return op.found ? NeedPresent(op.id, frontier) : NeedNotPresent(op.id, frontier);
      case OpKind::kList:
        if (only_id_ >= 0) {
          return op.Lists(only_id_) ? NeedPresent(only_id_, frontier)
                                    : NeedNotPresent(only_id_, frontier);
        }
        for (int p : op.listed) {
          if (!NeedPresent(p, frontier)) return false;
        }
        if (set_->present_count() != op.listed.size()) {
          const std::vector<int> members = set_->members();
          for (int p : members) {
            if (!op.Lists(p) && !NeedNotPresent(p, frontier)) return false;
          }
        }
        return set_->present_count() == op.listed.size();
    }
    return false;
  }

  void Culprits(int p, Outcome* out) const {
    if (set_->creator(p) != nullptr) out->culprits.push_back(set_->creator(p)->index);
    if (set_->remover(p) != nullptr) out->culprits.push_back(set_->remover(p)->index);
  }

  // Words for `op`, whose completion the search reached without being able
  // to order it, in the set as it is now.
  void Explain(int i, int64_t frontier, Outcome* out) {
    const int lost = doomed_by_[i];
    if (lost < 0) {
      out->culprits.clear();
      Describe(*ops_[i], frontier, out);
      return;
    }
    // It could be ordered, but then another operation could not be: that
    // one is what the history gets wrong, once this one took effect.
    const size_t mark = set_->mark();
    TryApply(*ops_[i], frontier);
    out->culprits.clear();
    Describe(*ops_[lost], frontier, out);
    set_->UndoTo(mark);
  }

  // Words for `op` in the set as it is now, where it cannot take effect.
  void Describe(const Op& op, int64_t frontier, Outcome* out) {
    out->culprits.push_back(op.index);
    std::string text = absl::StrCat(words_->Of(op), op.kind == OpKind::kList ? "; " : ", ");
    if (op.kind != OpKind::kList) {
      absl::StrAppend(&text, words_->Why(op, op.id, *set_));
      Culprits(op.id, out);
    } else if (only_id_ >= 0) {
      absl::StrAppend(&text, words_->Why(op, only_id_, *set_));
      Culprits(only_id_, out);
    } else {
      // The ids it gets wrong (that no lost change can mend), the first few
      // in words.
      std::vector<int> wrong;
      for (int p : op.listed) {
        const size_t mark = set_->mark();
        if (!NeedPresent(p, frontier)) wrong.push_back(p);
        set_->UndoTo(mark);
      }
      const std::vector<int> members = set_->members();
      for (int p : members) {
        if (op.Lists(p)) continue;
        const size_t mark = set_->mark();
        if (!NeedNotPresent(p, frontier)) wrong.push_back(p);
        set_->UndoTo(mark);
      }
      if (wrong.empty()) {
        absl::StrAppend(&text,
                        "it matches no order of the operations around it: each order that "
                        "makes it right makes another operation wrong");
      }
      constexpr size_t kNamed = 3;
      for (size_t k = 0; k < wrong.size() && k < kNamed; ++k) {
        absl::StrAppend(&text, k == 0 ? "" : "; ", words_->Why(op, wrong[k], *set_));
        Culprits(wrong[k], out);
      }
      if (wrong.size() > kNamed) {
        absl::StrAppend(&text, "; and ", wrong.size() - kNamed, " more ids");
      }
    }
    out->explanation = std::move(text);
  }

  const std::vector<const Op*> ops_;
  const int only_id_;
  const Unknowns* const unknowns_;
  SetState* const set_;
  const Words* const words_;
  const size_t max_configurations_;

  // The linked list of events: entry 0 is the head.
  std::vector<int> next_, prev_, op_of_, match_;
  std::vector<bool> is_call_;
  std::vector<bool> ordered_;  // per operation, whether it is ordered
  // Per operation, the one that its last try to order it would have lost
  // (Doomed), or -1.
  std::vector<int> doomed_by_;
  // In order of completion: per id its operations and the lists that show
  // it; every list.
  std::unordered_map<int, std::vector<int>> ops_of_id_;
  std::unordered_map<int, std::vector<int>> lists_showing_;
  std::vector<int> lists_;
};

}  // namespace

absl::StatusOr<CheckResult> CheckLinearizable(const std::vector<Operation>& history,
                                              const CheckOptions& options) {
  CheckResult result;
  int64_t origin = kNever;
  for (size_t i = 0; i < history.size(); ++i) {
    if (absl::Status s = ValidateOperation(history[i]); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("operation ", i, ": ", s.message()));
    }
    origin = std::min(origin, history[i].invoke_ns);
  }
  if (history.empty()) {
    result.linearizable = true;
    return result;
  }

  // Interned ids, and the operations that say or change something.
  std::unordered_map<std::string, int> ids;
  std::vector<std::string> names;
  auto intern = [&](const std::string& name) {
    auto [it, added] = ids.emplace(name, static_cast<int>(names.size()));
    if (added) names.push_back(name);
    return it->second;
  };
  std::vector<Op> ops;
  for (size_t i = 0; i < history.size(); ++i) {
    const Operation& h = history[i];
    const bool read = h.kind == OpKind::kGet || h.kind == OpKind::kList;
    if (h.result == Result::kRefused || (read && h.result == Result::kUnknown)) continue;
    Op op;
    op.index = i;
    op.kind = h.kind;
    op.result = h.result;
    op.found = h.found;
    if (h.kind == OpKind::kGet && h.result == Result::kNotFound) {
      op.result = Result::kOk;
      op.found = false;
    }
    op.invoke = h.invoke_ns;
    op.complete = h.result == Result::kUnknown ? kNever : h.complete_ns;
    if (h.kind == OpKind::kList) {
      for (const std::string& name : h.listed) op.listed.push_back(intern(name));
      std::sort(op.listed.begin(), op.listed.end());
      op.listed.erase(std::unique(op.listed.begin(), op.listed.end()), op.listed.end());
    } else {
      op.id = intern(h.partition);
    }
    ops.push_back(std::move(op));
  }
  const int id_count = static_cast<int>(names.size());

  // The operations of known outcome on each id, the lists, and the
  // earliest lost create and remove of each id.
  std::vector<std::vector<const Op*>> of_id(id_count);
  std::vector<int64_t> first_touch(id_count, kNever);
  std::vector<const Op*> lists;
  std::vector<const Op*> definite;
  Unknowns unknowns;
  unknowns.first_create.assign(id_count, nullptr);
  unknowns.first_remove.assign(id_count, nullptr);
  for (const Op& op : ops) {
    if (op.kind == OpKind::kList) {
      lists.push_back(&op);
      definite.push_back(&op);
      continue;
    }
    first_touch[op.id] = std::min(first_touch[op.id], op.invoke);
    if (!op.unknown()) {
      of_id[op.id].push_back(&op);
      definite.push_back(&op);
      continue;
    }
    const Op*& first =
        op.kind == OpKind::kCreate ? unknowns.first_create[op.id] : unknowns.first_remove[op.id];
    if (first == nullptr || op.invoke < first->invoke) first = &op;
  }
  result.operations_checked = ops.size();

  SetState set(id_count);
  const Words words(history, names, origin);
  auto finish = [&](Search::Outcome outcome) -> absl::StatusOr<CheckResult> {
    result.configurations += outcome.configurations;
    if (outcome.exhausted) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the history of ", history.size(), " operations is neither proven nor ",
          "refuted linearizable: a search needed more than ", options.max_configurations,
          " configurations, the limit (", result.configurations, " explored in all)"));
    }
    result.linearizable = outcome.linearizable;
    result.explanation = std::move(outcome.explanation);
    result.culprits = std::move(outcome.culprits);
    return result;
  };

  // Each id on its own, with the lists during which it can change. p
  // changes only inside the interval of an acknowledged create or remove of
  // it, or after the invocation of one of unknown outcome; a list outside
  // all of those sees p in a state that no order can alter, and is checked
  // against it without a search.
  auto refute = [&](const Op& list, int p, const std::string& why, const Op* other) {
    result.linearizable = false;
    result.explanation = absl::StrCat(words.Of(list), "; it ", list.Lists(p) ? "shows " : "misses ",
                                      names[p], ", but ", why);
    result.culprits = {list.index};
    if (other != nullptr) result.culprits.push_back(other->index);
    return result;
  };
  for (int p = 0; p < id_count; ++p) {
    std::vector<const Op*> creates, removes;
    for (const Op* op : of_id[p]) {
      if (op->result != Result::kOk) continue;
      if (op->kind == OpKind::kCreate) creates.push_back(op);
      if (op->kind == OpKind::kRemove) removes.push_back(op);
    }
    // Two acknowledged creates or removes of one id: the search says why.
    const bool simple = creates.size() <= 1 && removes.size() <= 1;
    const Op* create = creates.empty() ? nullptr : creates[0];
    const Op* remove = removes.empty() ? nullptr : removes[0];
    const Op* lost_create = unknowns.first_create[p];
    const Op* lost_remove = unknowns.first_remove[p];
    auto before = [](const Op* op, int64_t t) { return op != nullptr && op->invoke <= t; };
    std::vector<const Op*> run = of_id[p];
    for (const Op* list : lists) {
      if (!simple) {
        if (list->complete >= first_touch[p]) run.push_back(list);
        continue;
      }
      if (remove != nullptr && list->invoke > remove->complete) {
        if (list->Lists(p)) {
          return refute(
              *list, p,
              absl::StrCat(names[p], " was gone: ", words.Of(*remove), ", before it was invoked"),
              remove);
        }
      } else if (create != nullptr && list->invoke > create->complete &&
                 !before(remove, list->complete) && !before(lost_remove, list->complete)) {
        if (!list->Lists(p)) {
          return refute(*list, p,
                        absl::StrCat(names[p], " was there: ", words.Of(*create),
                                     ", before it was invoked, and no remove of it had been sent "
                                     "before it completed"),
                        create);
        }
      } else if (!before(create, list->complete) && !before(lost_create, list->complete)) {
        if (list->Lists(p)) {
          return refute(*list, p,
                        absl::StrCat("nothing that could create ", names[p],
                                     " had been sent before it completed"),
                        nullptr);
        }
      } else {
        run.push_back(list);
      }
    }
    Search search(std::move(run), p, &unknowns, &set, &words, options.max_configurations);
    Search::Outcome outcome = search.Run();
    if (!outcome.linearizable) return finish(std::move(outcome));
    result.configurations += outcome.configurations;
  }
  if (lists.empty()) {
    result.linearizable = true;
    return result;
  }
  // Lists see every id at one instant: only the whole history can say
  // whether their instants agree.
  Search search(std::move(definite), -1, &unknowns, &set, &words, options.max_configurations);
  absl::StatusOr<CheckResult> whole = finish(search.Run());
  if (whole.ok() && !whole->linearizable) {
    whole->explanation = absl::StrCat(
        "each id's operations can be ordered alone, but not together with every list; the "
        "furthest order found stops at ",
        whole->explanation);
  }
  return whole;
}

}  // namespace vipu::history
