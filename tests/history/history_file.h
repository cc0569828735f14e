// The text form of a history, so that a soak run can save what its clients
// saw and `history-check FILE` can judge it later. One line per operation,
// fields separated by one space:
//
//   CLIENT INVOKE_NS COMPLETE_NS KIND PARTITION RESULT [ANSWER]
//
// KIND and RESULT are the words of OpKindName and ResultName; PARTITION is
// "-" for a list. ANSWER is there for an answered get ("found" or "absent")
// and an answered list (its ids joined by commas, "-" for none), and for
// nothing else. Blank lines and lines that start with '#' are skipped.
//
//   # vipu history: client invoke_ns complete_ns kind partition result [answer]
//   1 1000 2000 create p1 ok
//   2 1500 9000 remove p1 unknown
//   3 1600 2500 get p1 ok found
//   4 3000 4000 list - ok p1,p3
//
// Thread-safety: free functions without shared state.
#ifndef VIPU_TESTS_HISTORY_HISTORY_FILE_H_
#define VIPU_TESTS_HISTORY_HISTORY_FILE_H_

#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tests/history/history.h"

namespace vipu::history {

// The line of `op`, without a newline. `op` must pass ValidateOperation.
std::string FormatOperation(const Operation& op);

// The operation of one line. Returns INVALID_ARGUMENT naming the field that
// is missing, extra or wrong, or the ValidateOperation failure.
absl::StatusOr<Operation> ParseOperation(absl::string_view line);

// Writes a header comment and one line per operation. Returns
// INVALID_ARGUMENT (nothing written) when an operation fails
// ValidateOperation, INTERNAL when the stream fails.
absl::Status WriteHistory(const std::vector<Operation>& history, std::ostream& out);

// Reads every line of `in`; errors name `source` and the line number.
absl::StatusOr<std::vector<Operation>> ReadHistory(std::istream& in, absl::string_view source);

// The same for a file. Writing replaces the file only once every
// operation is known to be valid; returns NOT_FOUND or PERMISSION_DENIED
// (with the path and the system's reason) when it cannot be opened.
absl::Status WriteHistoryFile(const std::string& path, const std::vector<Operation>& history);
absl::StatusOr<std::vector<Operation>> ReadHistoryFile(const std::string& path);

}  // namespace vipu::history

#endif  // VIPU_TESTS_HISTORY_HISTORY_FILE_H_
