// The server's configuration file (/etc/vipu/vipu-server.hcl): flat HCL, one
// `key = value` per line, the keys being the long flags without `--`. Values
// are quoted ("...", with \" and \\ escapes) or one bare word; `#` and `//`
// start comments. A flag given on the command line wins over the file.
//
// The CLI has a reader of the same format (cli/hcl.h); the server may not
// depend on cli/ (DESIGN.md arrows), so this one is the server's own and
// keeps the line of every entry for error messages.
#ifndef VIPU_SERVER_CONFIG_FILE_H_
#define VIPU_SERVER_CONFIG_FILE_H_

#include <CLI/CLI.hpp>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vipu::server {

inline constexpr char kDefaultConfigPath[] = "/etc/vipu/vipu-server.hcl";

struct ConfigEntry {
  std::string key;
  std::string value;
  int line = 0;  // 1-based line in the file
};

// Parses `text`. A malformed line, a key outside `allowed_keys` or a key
// given twice is INVALID_ARGUMENT naming `file_name:line`.
absl::StatusOr<std::vector<ConfigEntry>> ParseConfigText(absl::string_view text,
                                                         absl::string_view file_name,
                                                         const std::set<std::string>& allowed_keys);

// Reads `path`; NOT_FOUND when it does not exist, INVALID_ARGUMENT when it
// cannot be read or parsed.
absl::StatusOr<std::vector<ConfigEntry>> ReadConfigFile(const std::string& path,
                                                        const std::set<std::string>& allowed_keys);

// Keys the file may set: every long option of `app` except config, help and
// version.
std::set<std::string> ConfigurableKeys(const CLI::App& app);

// After app.parse(): sets every option the command line left unset from the
// file at `path`, through the option's own validators (a range check failing
// is INVALID_ARGUMENT naming file:line and the key). A missing file is OK
// unless `must_exist` (then NOT_FOUND). Flags take "true"/"false".
absl::Status ApplyConfigFile(CLI::App& app, const std::string& path, bool must_exist);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONFIG_FILE_H_
