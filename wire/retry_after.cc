// RetryAfterOf: the retry-after-ms a server sent in a reply's trailing metadata.
#include "wire/retry_after.h"

#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "wire/metadata_keys.h"

namespace vipu::wire {

std::optional<std::chrono::milliseconds> RetryAfterOf(const grpc::ClientContext& context) {
  const auto& trailing = context.GetServerTrailingMetadata();
  const auto it = trailing.find(kRetryAfterMetadata);
  if (it == trailing.end()) return std::nullopt;
  int64_t ms = 0;
  if (!absl::SimpleAtoi(absl::string_view(it->second.data(), it->second.size()), &ms) || ms < 0) {
    ms = 0;
  }
  return std::chrono::milliseconds(ms);
}

}  // namespace vipu::wire
