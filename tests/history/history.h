// A history of operations on the set of partitions, as clients saw them:
// what each client asked, when it asked, when it heard back and what it
// heard. Fault tests record one under load (HistoryRecorder) and hand it to
// the linearizability checker (linearizability.h); soak runs save it to a
// file (history_file.h).
//
// Times are nanoseconds of one monotonic clock (std::chrono::steady_clock
// in HistoryRecorder), so every operation of one history must be timed by
// the same process's clock.
#ifndef VIPU_TESTS_HISTORY_HISTORY_H_
#define VIPU_TESTS_HISTORY_HISTORY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/mutex.h"

namespace vipu::history {

enum class OpKind { kCreate, kRemove, kGet, kList };

// What the client learned from the answer.
enum class Result {
  // Create: the id was added. Remove: it was deleted. Get and list: they
  // answered (see Operation::found and Operation::listed).
  kOk,
  // Create refused because the id was there; nothing done.
  kAlreadyExists,
  // Remove refused because the id was not there; nothing done. A get that
  // answers NOT_FOUND may say this too: it means "not found".
  kNotFound,
  // Refused with nothing done and nothing said about the set: a client
  // error (INVALID_ARGUMENT, PERMISSION_DENIED, ...), a full disk, or an
  // UNAVAILABLE that carries the server's "nothing done" marker.
  kRefused,
  // The answer was lost (a deadline, a closed socket, an UNAVAILABLE
  // without the "nothing done" marker, INTERNAL): the change may or may not
  // have happened, and may take effect at any time after the invocation,
  // even after the client gave up.
  kUnknown,
};

// One operation of one client. `partition` is empty for a list.
struct Operation {
  int client = 0;
  OpKind kind = OpKind::kGet;
  std::string partition;
  int64_t invoke_ns = 0;    // just before the request was sent
  int64_t complete_ns = 0;  // just after the answer (or the give-up) arrived
  Result result = Result::kUnknown;
  bool found = false;               // get with kOk: whether the id was there
  std::vector<std::string> listed;  // list with kOk: every id it returned
};

// "create", "remove", "get", "list"; "ok", "already_exists", "not_found",
// "refused", "unknown". These are also the words of the history file.
const char* OpKindName(OpKind kind);
const char* ResultName(Result result);

// The Result a client records for an answer `status`. `nothing_done` is
// true when the answer carried the server's marker that the call was not
// acted on (an UNAVAILABLE with retry-after-ms from a member that refused
// it). Only codes that the server promises change nothing are kRefused;
// anything it cannot vouch for (INTERNAL, UNKNOWN, DEADLINE_EXCEEDED,
// CANCELLED, ABORTED, UNAVAILABLE without the marker) is kUnknown.
Result ResultOfStatus(const absl::Status& status, bool nothing_done);

// Returns INVALID_ARGUMENT naming the first field that no history may hold:
// an id that is empty (or not, for a list) or has whitespace or a comma, a
// completion before the invocation, a result that the kind cannot have
// (kAlreadyExists for a remove, get or list; kNotFound for a create or
// list), ids listed by anything but an answered list, or `found` set on
// anything but an answered get.
absl::Status ValidateOperation(const Operation& op);

// One line in words, for messages: "get p3 by client 2 at [1.000200 s,
// 1.000900 s] found p3", with times in seconds after `origin_ns`. An
// operation of unknown outcome reads "create p3 by client 2 at [1.000200 s,
// gave up 1.500000 s] with its outcome unknown".
std::string DescribeOperation(const Operation& op, int64_t origin_ns);

// Collects the operations of many client threads as they happen. Each
// client calls Invoke just before it sends a request and one of the
// Complete methods once it has the answer (or gives up).
//
// Thread-safe: any thread may call any method at any time. A handle is
// completed once, by the thread that got it (completing it twice keeps the
// first completion).
class HistoryRecorder {
 public:
  using Handle = size_t;

  // `now_ns` reads the clock (nanoseconds); the default is the steady clock.
  explicit HistoryRecorder(std::function<int64_t()> now_ns = nullptr);
  HistoryRecorder(const HistoryRecorder&) = delete;
  HistoryRecorder& operator=(const HistoryRecorder&) = delete;

  // Records that `client` is about to ask for `kind` on `partition` (empty
  // for a list), stamped with the clock now.
  Handle Invoke(int client, OpKind kind, std::string partition = "") ABSL_LOCKS_EXCLUDED(mu_);

  // The answer, stamped with the clock now. Complete takes any result; for
  // an answered get, CompleteGet says whether the id was found, and for an
  // answered list, CompleteList gives the ids it returned.
  void Complete(Handle handle, Result result) ABSL_LOCKS_EXCLUDED(mu_);
  void CompleteGet(Handle handle, bool found) ABSL_LOCKS_EXCLUDED(mu_);
  void CompleteList(Handle handle, std::vector<std::string> ids) ABSL_LOCKS_EXCLUDED(mu_);

  // Every operation so far, in the order of invocation. One still waiting
  // for its answer is kUnknown, completed now: whatever it does, it may do
  // later.
  std::vector<Operation> Operations() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry {
    Operation op;
    bool completed = false;
  };
  // Fills in the completion of `handle` unless it was completed already.
  void Finish(Handle handle, Result result, bool found, std::vector<std::string> ids)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Constant after construction.
  const std::function<int64_t()> now_ns_;

  mutable Mutex mu_;
  std::vector<Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vipu::history

#endif  // VIPU_TESTS_HISTORY_HISTORY_H_
