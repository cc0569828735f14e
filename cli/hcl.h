// A flat reader for the CLI's HCL configuration files (vipu-cli.hcl): one
// `key = value` per line, the value quoted ("...") or bare, `#` and `//`
// comments, blank lines. Nested blocks are not part of the format.
#ifndef VIPU_CLI_HCL_H_
#define VIPU_CLI_HCL_H_

#include <map>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vipu::cli {

// Parses `text`. Keys outside `allowed_keys` and malformed lines are
// INVALID_ARGUMENT naming `file_name:line`, so a typo in a key never falls
// back silently to a default. A repeated key keeps its last value.
absl::StatusOr<std::map<std::string, std::string>> ParseHcl(
    absl::string_view text, absl::string_view file_name, const std::set<std::string>& allowed_keys);

// Reads and parses the file at `path`; NOT_FOUND when it does not exist.
absl::StatusOr<std::map<std::string, std::string>> ReadHclFile(
    const std::string& path, const std::set<std::string>& allowed_keys);

}  // namespace vipu::cli

#endif  // VIPU_CLI_HCL_H_
