// Decides whether a history of operations on the set of partitions is
// linearizable: whether every operation can be given one instant inside its
// own interval, such that, taken in the order of those instants, the
// operations behave as on one set held in one place.
//
// The model. A set of partition ids, empty at first; each id is created at
// most once in a history (a workload creates fresh ids; a client may send
// the same create again, and then expects ALREADY_EXISTS).
//   - create(p): adds p; kAlreadyExists if p is there (nothing done). A
//     create that succeeds for an id that was created and removed before is
//     a violation: the id came back.
//   - remove(p): deletes p; kNotFound if p is not there (nothing done).
//   - get(p): says whether p is there (kOk with `found`, or kNotFound).
//   - list: returns exactly the ids that are there.
// An operation whose outcome is unknown takes effect at one instant after
// its invocation, at any time, even after the client gave up, or never.
// A refused operation (kRefused) and a get or list whose answer was lost
// say nothing and change nothing; they are left out.
//
// What it promises. Exact: it says linearizable if and only if such an
// order exists, up to one assumption: configurations are remembered by a
// 128-bit fingerprint, so two different ones could be taken as one (and a
// violation missed) with probability about n^2 / 2^129 for n
// configurations. Two operations whose intervals merely touch (one
// completes at the instant the other is invoked) count as concurrent.
//
// The algorithm. Wing & Gong's search with Lowe's improvements, as in
// Knossos and Porcupine: the invocations and completions in time order in a
// linked list; the search orders an operation that has been invoked, at the
// earliest point where the model allows it, and backtracks when it reaches
// a completion whose operation it could not order; every configuration it
// has seen (the set of ordered operations and the state of the set) is
// remembered, so none is explored twice.
//   Operations of unknown outcome are not ordered on their own, which
// would double the configurations for each one in flight, and they stay in
// flight to the end. A lost create that took effect can always be moved
// to just before the first operation that needs its id there (and a lost
// remove, before the first that needs its id gone), so the search makes
// one take effect only when an operation needs it, if it was invoked
// before that point.
//   Before the whole search, each id is checked on its own with the
// operations on it and every list (as "is p there?"): P-compositionality
// (Horn & Kroening). Without lists that is the whole answer; with lists a
// failing id is already a violation, explained about that id alone; only
// then does the search run over everything, for what lists observe
// together.
//
// Cost. Time and memory grow with the configurations explored: about the
// operations times 2^(operations of known outcome in flight at once), far
// fewer when the results constrain the order. Each id's own check also
// walks every list made after the id was first touched (ids x lists). A
// generated history of 5,000 operations, five in flight at once, is
// checked in about 0.2 s. The search gives up with RESOURCE_EXHAUSTED after
// `max_configurations`.
//
// Thread-safety: a pure function of its arguments; call it from any thread.
#ifndef VIPU_TESTS_HISTORY_LINEARIZABILITY_H_
#define VIPU_TESTS_HISTORY_LINEARIZABILITY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tests/history/history.h"

namespace vipu::history {

struct CheckOptions {
  // The search explores at most this many configurations (each costs about
  // 50 bytes of memory) before it gives up.
  size_t max_configurations = 4'000'000;
};

struct CheckResult {
  bool linearizable = false;
  // Empty when linearizable. Otherwise, in words, which operation cannot be
  // ordered and why: its interval, what it observed, and what the set held
  // at the furthest point to which everything before it could be ordered.
  std::string explanation;
  // Indices into the history of the operation that cannot be ordered
  // first, then those the explanation names (the create or remove that
  // conflicts with it).
  std::vector<size_t> culprits;
  // Operations that took part (refused ones and unanswered reads left out).
  size_t operations_checked = 0;
  // Configurations explored, over every search run.
  size_t configurations = 0;
};

// Checks `history` (in any order) against the model above. Returns
// INVALID_ARGUMENT naming the operation when one fails ValidateOperation,
// and RESOURCE_EXHAUSTED (the history is neither proven nor refuted) when
// the search would need more than `options.max_configurations`.
absl::StatusOr<CheckResult> CheckLinearizable(const std::vector<Operation>& history,
                                              const CheckOptions& options = {});

}  // namespace vipu::history

#endif  // VIPU_TESTS_HISTORY_LINEARIZABILITY_H_
