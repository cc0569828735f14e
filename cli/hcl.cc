#include "cli/hcl.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace vipu::cli {
namespace {

bool IsKeyChar(char c) { return absl::ascii_isalnum(c) || c == '-' || c == '_'; }

// Removes a trailing `#` or `//` comment outside quotes.
absl::string_view StripComment(absl::string_view s) {
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quoted && c == '\\') {
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && (c == '#' || (c == '/' && i + 1 < s.size() && s[i + 1] == '/'))) {
      return s.substr(0, i);
    }
  }
  return s;
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ParseHcl(
    absl::string_view text, absl::string_view file_name,
    const std::set<std::string>& allowed_keys) {
  std::map<std::string, std::string> values;
  int line_number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_number;
    auto fail = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(file_name, ":", line_number, ": ", what));
    };
    absl::string_view line = absl::StripAsciiWhitespace(StripComment(raw));
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) return fail("expected `key = value`");
    std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(eq + 1));
    if (key.empty()) return fail("missing key before '='");
    for (char c : key) {
      if (!IsKeyChar(c)) return fail(absl::StrCat("invalid key '", key, "'"));
    }
    if (allowed_keys.count(key) == 0) {
      return fail(absl::StrCat("unknown key '", key,
                               "' (known keys: ", absl::StrJoin(allowed_keys, ", "), ")"));
    }
    std::string parsed;
    if (!value.empty() && value.front() == '"') {
      size_t i = 1;
      bool closed = false;
      for (; i < value.size(); ++i) {
        char c = value[i];
        if (c == '\\' && i + 1 < value.size()) {
          parsed.push_back(value[++i]);
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          parsed.push_back(c);
        }
      }
      if (!closed) return fail(absl::StrCat("unterminated string for key '", key, "'"));
      if (i + 1 != value.size()) {
        return fail(absl::StrCat("unexpected text after the value of key '", key, "'"));
      }
    } else {
      if (value.empty()) return fail(absl::StrCat("missing value for key '", key, "'"));
      for (char c : value) {
        if (absl::ascii_isspace(c) || c == '"') {
          return fail(absl::StrCat("bare value of key '", key, "' must be one word; quote it"));
        }
      }
      parsed = std::string(value);
    }
    values[key] = std::move(parsed);
  }
  return values;
}

absl::StatusOr<std::map<std::string, std::string>> ReadHclFile(
    const std::string& path, const std::set<std::string>& allowed_keys) {
  std::ifstream in(path);
  if (!in) {
    int error = errno;
    std::string what = absl::StrCat("config file ", path, ": ", std::strerror(error));
    if (error == ENOENT) return absl::NotFoundError(what);
    return absl::InvalidArgumentError(what);
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseHcl(buffer.str(), path, allowed_keys);
}

}  // namespace vipu::cli
