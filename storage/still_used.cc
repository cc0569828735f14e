// StillUsedError: the stores' one wording for a delete refused while rows use it.
#include "storage/still_used.h"

#include "absl/strings/str_cat.h"
#include "base/absl_view.h"

namespace vipu::storage {

absl::Status StillUsedError(std::string_view kind, std::string_view id, int64_t count,
                            std::string_view user, std::string_view first) {
  return absl::FailedPreconditionError(
      absl::StrCat(AbslView(kind), " ", AbslView(id), " has ", count, " ", AbslView(user),
                   count == 1 ? "" : "s", " (", AbslView(first), "); remove them first"));
}

}  // namespace vipu::storage
