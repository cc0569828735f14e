// The console's query and form parsing (server/console/query.h) on arbitrary
// bytes: no crash; accepted parameters are allowed names, within the size
// limits and free of control characters; every refusal is INVALID_ARGUMENT;
// the typed parameters stay in their ranges.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "server/console/query.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vipu::server;
  static const std::set<std::string> kAllowed = {"id", "minutes", "action", "user", "key"};
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)QueryOf(text);
  auto params = ParseParams(QueryOf(text).empty() ? text : std::string(QueryOf(text)), kAllowed);
  if (!params.ok()) {
    if (params.status().code() != absl::StatusCode::kInvalidArgument) abort();
    return 0;
  }
  for (const auto& [name, value] : *params) {
    if (!kAllowed.count(name) || value.size() > kMaxValueBytes) abort();
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20 || u == 0x7f) abort();
    }
  }
  auto minutes = IntParam(*params, "minutes", 1, 60, 60);
  if (minutes.ok() && (*minutes < 1 || *minutes > 60)) abort();
  auto id = PartitionIdParam(*params, "id");
  if (id.ok() && (id->empty() || id->size() > 64)) abort();
  (void)ActionParam(*params, "action");
  auto login = LoginParams(*params);
  if (login.ok() && (login->user_id.empty() || login->access_key.empty())) abort();
  return 0;
}
