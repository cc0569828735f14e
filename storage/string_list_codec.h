// Encodes a list of strings (a partition's errors) as one TEXT column: a
// JSON array of strings. Any bytes round-trip: control characters, quotes
// and backslashes are escaped, other bytes (UTF-8 or not) are kept as is.
#ifndef VIPU_STORAGE_STRING_LIST_CODEC_H_
#define VIPU_STORAGE_STRING_LIST_CODEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace vipu::storage {

std::string EncodeStringList(const std::vector<std::string>& items);
// INVALID_ARGUMENT naming the offset when `text` is not what Encode writes
// (a JSON array of strings; \uXXXX escapes up to U+FFFF and surrogate pairs
// are accepted).
absl::StatusOr<std::vector<std::string>> DecodeStringList(std::string_view text);

}  // namespace vipu::storage

#endif  // VIPU_STORAGE_STRING_LIST_CODEC_H_
