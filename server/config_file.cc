#include "server/config_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace vipu::server {
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

}  // namespace

absl::StatusOr<std::vector<ConfigEntry>> ParseConfigText(
    absl::string_view text, absl::string_view file_name,
    const std::set<std::string>& allowed_keys) {
  std::vector<ConfigEntry> entries;
  std::map<std::string, int> seen;
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
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(eq + 1));
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
    std::string parsed;
    if (!value.empty() && value.front() == '"') {
      size_t i = 1;
      bool closed = false;
      for (; i < value.size(); ++i) {
        const char c = value[i];
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
    seen[key] = line_number;
    entries.push_back({std::move(key), std::move(parsed), line_number});
  }
  return entries;
}

absl::StatusOr<std::vector<ConfigEntry>> ReadConfigFile(const std::string& path,
                                                        const std::set<std::string>& allowed_keys) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("--config: ", path, " is a directory"));
  }
  std::ifstream in(path);
  if (!in) {
    const int error = errno;
    std::string what = absl::StrCat("--config: cannot read ", path, ": ", std::strerror(error));
    if (error == ENOENT) return absl::NotFoundError(what);
    return absl::InvalidArgumentError(what);
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseConfigText(buffer.str(), path, allowed_keys);
}

std::set<std::string> ConfigurableKeys(const CLI::App& app) {
  std::set<std::string> keys;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) {
      if (name != "config" && name != "help" && name != "version") keys.insert(name);
    }
  }
  return keys;
}

absl::Status ApplyConfigFile(CLI::App& app, const std::string& path, bool must_exist) {
  auto entries = ReadConfigFile(path, ConfigurableKeys(app));
  if (!entries.ok()) {
    if (absl::IsNotFound(entries.status()) && !must_exist) return absl::OkStatus();
    return entries.status();
  }
  for (const ConfigEntry& entry : *entries) {
    CLI::Option* option = app.get_option_no_throw("--" + entry.key);
    if (option == nullptr || option->count() > 0) continue;  // the command line wins
    try {
      option->add_result(entry.value);
      option->run_callback();
    } catch (const CLI::Error& e) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", entry.line, ": ", entry.key, ": ", e.what()));
    }
  }
  return absl::OkStatus();
}

}  // namespace vipu::server
