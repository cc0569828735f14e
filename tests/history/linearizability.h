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
// tests/unit/history/linearizability_brute_force_test.cc holds its verdict against trying
// every order of small random histories.
//
// The algorithm. Wing & Gong's search with Lowe's improvements, as in
// Knossos and Porcupine: the invocations and completions in time order in a
// linked list; the search orders an operation that has been invoked, at the
// earliest point where the model allows it, and backtracks when it reaches
// a completion whose operation it could not order; every configuration it
// has seen (the set of ordered operations and the state of the set) is
// remembered, so none is explored twice. Three reductions keep it small,
// none of which changes the verdict:
//   - Operations of unknown outcome are not ordered on their own (each in
//     flight to the end would double the configurations). A lost create
//     that took effect can always be moved to just before the first
//     operation that needs its id there, and a lost remove to just before
//     the first that needs its id gone; so one takes effect only when an
//     operation needs it, if it was invoked before that point.
//   - A read (get, list, or a create or remove that changed nothing) that
//     holds now is ordered now, with no alternative tried: it changes
//     nothing, so if any order from here works, one with it first does.
//   - A change is not tried when it dooms an operation not yet ordered: an
//     id made present that a pending read needs absent, when no remove can
//     be invoked before that read completes; an id removed that a pending
//     read needs present.
// Before the whole search, each id is checked on its own with the
// operations on it and the lists that see it (as "is p there?"):
// P-compositionality (Horn & Kroening). A list during which p cannot change
// (outside every acknowledged create or remove of p, and before any of
// unknown outcome) is checked against p's one possible state without a
// search. Without lists that is the whole answer; with lists, a failing id
// is already a violation, explained about that id alone, and only then does
// the search run over everything, for what lists observe together.
//
// Cost. Time and memory grow with the configurations explored, about 50
// bytes each. Without the reductions that is about the operations times
// 2^(operations in flight); with them, a legal history whose clients each
// wait for one answer before the next request needs a few configurations
// per operation, however many clients are in flight, and a list costs time
// in the number of ids it returns. Histories built to be hard (many
// changes in flight that only lists can order, then a contradiction) can
// still take exponential time: the search gives up with RESOURCE_EXHAUSTED
// once one search needs more than `max_configurations`.
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
  // Each search (one per id, one over everything) explores at most this
  // many configurations (about 50 bytes of memory each) before it gives up.
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
