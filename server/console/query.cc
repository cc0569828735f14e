// Query-string and form parsing of the console's HTTP handlers.
#include "server/console/query.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "fabric/validation.h"

namespace vipu::server {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Printable for logs and messages: at most 40 bytes, control bytes escaped.
std::string Shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || u >= 0x80) {
      absl::StrAppend(&out, "\\x", absl::Hex(u, absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  if (text.size() > 40) out += "...";
  return out;
}

absl::StatusOr<std::string> Decode(std::string_view name, std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%') {
      const int hi = i + 2 < text.size() ? HexValue(text[i + 1]) : -1;
      const int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(std::string(name), ": bad %-escape in '", Shown(text), "'"));
      }
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(name), ": control character in the value"));
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

absl::StatusOr<Params> ParseParams(std::string_view text, const std::set<std::string>& allowed) {
  if (text.size() > kMaxQueryBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("query: longer than ", kMaxQueryBytes, " bytes (", text.size(), ")"));
  }
  Params params;
  if (text.empty()) return params;
  for (absl::string_view split : absl::StrSplit(absl::string_view(text.data(), text.size()), '&')) {
    const std::string_view pair(split.data(), split.size());
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("query: expected name=value, got '", Shown(pair), "'"));
    }
    const std::string_view name = pair.substr(0, eq);
    if (allowed.count(std::string(name)) == 0) {
      std::string known;
      for (const std::string& a : allowed) absl::StrAppend(&known, known.empty() ? "" : ", ", a);
      return absl::InvalidArgumentError(absl::StrCat("query: unknown parameter '", Shown(name),
                                                     "'; expected ",
                                                     known.empty() ? std::string("none") : known));
    }
    ASSIGN_OR_RETURN(std::string value, Decode(name, pair.substr(eq + 1)));
    if (value.size() > kMaxValueBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(name), ": longer than ", kMaxValueBytes, " bytes"));
    }
    if (!params.emplace(std::string(name), std::move(value)).second) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(name), ": given more than once"));
    }
  }
  return params;
}

std::string_view QueryOf(std::string_view target) {
  const size_t q = target.find('?');
  return q == std::string_view::npos ? std::string_view() : target.substr(q + 1);
}

absl::StatusOr<std::string> PartitionIdParam(const Params& params, const std::string& name) {
  auto it = params.find(name);
  if (it == params.end()) return absl::InvalidArgumentError(absl::StrCat(name, ": required"));
  RETURN_IF_ERROR(fabric::ValidateId(name, it->second));
  return it->second;
}

absl::StatusOr<int64_t> IntParam(const Params& params, const std::string& name, int64_t min,
                                 int64_t max, int64_t fallback) {
  auto it = params.find(name);
  if (it == params.end()) return fallback;
  int64_t value = 0;
  if (!absl::SimpleAtoi(it->second, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": expected an integer in ", min, "..",
                                                   max, ", got '", Shown(it->second), "'"));
  }
  return value;
}

absl::StatusOr<PartitionAction> ActionParam(const Params& params, const std::string& name) {
  auto it = params.find(name);
  if (it == params.end()) return absl::InvalidArgumentError(absl::StrCat(name, ": required"));
  if (it->second == "remove") return PartitionAction::kRemove;
  if (it->second == "reset") return PartitionAction::kReset;
  return absl::InvalidArgumentError(
      absl::StrCat(name, ": expected remove or reset, got '", Shown(it->second), "'"));
}

absl::StatusOr<Login> LoginParams(const Params& params) {
  Login login;
  auto user = params.find("user");
  if (user == params.end() || user->second.empty()) {
    return absl::InvalidArgumentError("user: required");
  }
  RETURN_IF_ERROR(fabric::ValidateId("user", user->second));
  auto key = params.find("key");
  if (key == params.end() || key->second.empty()) {
    return absl::InvalidArgumentError("key: required");
  }
  login.user_id = user->second;
  login.access_key = key->second;
  return login;
}

}  // namespace vipu::server
