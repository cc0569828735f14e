// Parses the flat `key = value` HCL of vipu-cli.hcl and vipu-server.hcl, and reads the files.
#include "hcl/hcl.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace vipu::hcl {
namespace {

bool IsKeyChar(char c) { return absl::ascii_isalnum(c) || c == '-' || c == '_'; }

// Cuts a trailing `#` or `//` comment that is not inside quotes.
absl::string_view StripComment(absl::string_view s) {
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
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

// The value after '=': a quoted string (escapes resolved) or one bare word.
// On failure, returns the reason (without file and line) in `error`.
bool ParseValue(absl::string_view value, const std::string& key, std::string* out,
                std::string* error) {
  if (!value.empty() && value.front() == '"') {
    size_t i = 1;
    bool closed = false;
    for (; i < value.size(); ++i) {
      const char c = value[i];
      if (c == '\\' && i + 1 < value.size()) {
        out->push_back(value[++i]);
      } else if (c == '"') {
        closed = true;
        break;
      } else {
        out->push_back(c);
      }
    }
    if (!closed) {
      *error = absl::StrCat("unterminated string for key '", key, "'");
    } else if (i + 1 != value.size()) {
      *error = absl::StrCat("unexpected text after the value of key '", key, "'");
    }
    return error->empty();
  }
  if (value.empty()) {
    *error = absl::StrCat("missing value for key '", key, "'");
    return false;
  }
  for (char c : value) {
    if (absl::ascii_isspace(c) || c == '"') {
      *error = absl::StrCat("bare value of key '", key, "' must be one word; quote it");
      return false;
    }
  }
  *out = std::string(value);
  return true;
}

}  // namespace

absl::StatusOr<std::vector<Entry>> Parse(absl::string_view text, absl::string_view file_name,
                                         const std::set<std::string>& allowed_keys) {
  std::vector<Entry> entries;
  std::map<std::string, int> seen;  // key -> line of its first setting
  int line_number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_number;
    auto fail = [&](const std::string& what) {
      return absl::InvalidArgumentError(absl::StrCat(file_name, ":", line_number, ": ", what));
    };
    absl::string_view line = absl::StripAsciiWhitespace(StripComment(raw));
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) return fail("expected `key = value`");
    std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
    if (key.empty()) return fail("missing key before '='");
    for (char c : key) {
      if (!IsKeyChar(c)) return fail(absl::StrCat("invalid key '", key, "'"));
    }
    if (allowed_keys.count(key) == 0) {
      return fail(absl::StrCat("unknown key '", key,
                               "' (known keys: ", absl::StrJoin(allowed_keys, ", "), ")"));
    }
    if (auto it = seen.find(key); it != seen.end()) {
      return fail(absl::StrCat("key '", key, "' is already set on line ", it->second));
    }
    std::string value;
    std::string error;
    if (!ParseValue(absl::StripAsciiWhitespace(line.substr(eq + 1)), key, &value, &error)) {
      return fail(error);
    }
    seen.emplace(key, line_number);
    entries.push_back({std::move(key), std::move(value), line_number});
  }
  return entries;
}

absl::StatusOr<std::string> ReadText(const std::string& path) {
  // An ifstream opens a directory and then reads nothing: refuse it here
  // rather than parse it as an empty file.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory"));
  }
  std::ifstream in(path);
  if (!in) {
    const int error = errno;
    std::string what = absl::StrCat(path, ": ", std::strerror(error));
    if (error == ENOENT) return absl::NotFoundError(what);
    return absl::InvalidArgumentError(what);
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace vipu::hcl
