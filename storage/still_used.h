// The refusal both stores give when a delete would orphan rows that name
// the one being deleted, in one wording so that clients see the same text
// whichever store the server runs on.
#ifndef VIPU_STORAGE_STILL_USED_H_
#define VIPU_STORAGE_STILL_USED_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace vipu::storage {

// FAILED_PRECONDITION "<kind> <id> has <count> <user>[s] (<first>); remove
// them first", e.g. "cluster pod16 has 2 partitions (p1); remove them
// first". `first` is the lowest id among the `count` users.
absl::Status StillUsedError(std::string_view kind, std::string_view id, int64_t count,
                            std::string_view user, std::string_view first);

}  // namespace vipu::storage

#endif  // VIPU_STORAGE_STILL_USED_H_
