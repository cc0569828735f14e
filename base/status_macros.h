// Early return on error, for functions that return absl::Status or
// absl::StatusOr<T>: the checks that would otherwise be written out by hand
// after every call that can fail.
//
//   RETURN_IF_ERROR(store.Write(...));
//   ASSIGN_OR_RETURN(Partition p, store.GetPartition(id));
//
// The error is returned unchanged: the message already says what failed, and
// callers that want to add to it say so where they call. Header only; the
// macros hold no state.
#ifndef VIPU_BASE_STATUS_MACROS_H_
#define VIPU_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace vipu::status_internal {

inline const absl::Status& AsStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& AsStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace vipu::status_internal

#define VIPU_STATUS_CONCAT_INNER_(a, b) a##b
#define VIPU_STATUS_CONCAT_(a, b) VIPU_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status or an absl::StatusOr) once and returns its
// status from the enclosing function when it is not OK.
#define RETURN_IF_ERROR(expr)                                     \
  do {                                                            \
    const auto& vipu_status_ref_ = (expr);                        \
    if (!vipu_status_ref_.ok()) {                                 \
      return ::vipu::status_internal::AsStatus(vipu_status_ref_); \
    }                                                             \
  } while (false)

// Evaluates `rexpr` (an absl::StatusOr<T>) once; returns its status from the
// enclosing function when it is not OK, otherwise moves its value into `lhs`
// (a declaration such as `auto x` or `Partition p`, or an existing lvalue).
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  VIPU_ASSIGN_OR_RETURN_IMPL_(VIPU_STATUS_CONCAT_(vipu_status_or_, __LINE__), lhs, rexpr)

#define VIPU_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr)  \
  auto statusor = (rexpr);                                 \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = *std::move(statusor)

#endif  // VIPU_BASE_STATUS_MACROS_H_
