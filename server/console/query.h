// Parsing of what a browser sends the console: query strings and
// application/x-www-form-urlencoded bodies, and the typed parameters the
// handlers take from them. Pure functions of their input (fuzzed by
// tests/fuzz/console_query_fuzzer.cc); every refusal is INVALID_ARGUMENT
// naming the parameter.
#ifndef VIPU_SERVER_CONSOLE_QUERY_H_
#define VIPU_SERVER_CONSOLE_QUERY_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace vipu::server {

inline constexpr size_t kMaxQueryBytes = 4096;
inline constexpr size_t kMaxValueBytes = 1024;

using Params = std::map<std::string, std::string>;

// Splits "a=1&b=x%20y" into {a: "1", b: "x y"} ('+' is a space). Refused:
// more than kMaxQueryBytes, a name outside `allowed`, a name given twice, a
// pair without '=', a bad %-escape, a decoded value longer than
// kMaxValueBytes or holding a control character. "" gives no parameters.
absl::StatusOr<Params> ParseParams(std::string_view text, const std::set<std::string>& allowed);

// The query of a request target ("/api/x?a=1" -> "a=1"; none -> "").
std::string_view QueryOf(std::string_view target);

// A partition id parameter: required, and a valid id (fabric::ValidateId).
absl::StatusOr<std::string> PartitionIdParam(const Params& params, const std::string& name);

// An integer parameter in [min, max]; `fallback` when absent.
absl::StatusOr<int64_t> IntParam(const Params& params, const std::string& name, int64_t min,
                                 int64_t max, int64_t fallback);

// What a console action does to a partition.
enum class PartitionAction { kRemove, kReset };
// "remove" or "reset".
absl::StatusOr<PartitionAction> ActionParam(const Params& params, const std::string& name);

// The login form: a user id (fabric::ValidateId) and a non-empty access key.
struct Login {
  std::string user_id;
  std::string access_key;
};
absl::StatusOr<Login> LoginParams(const Params& params);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONSOLE_QUERY_H_
