// The flat HCL subset of the V-IPU configuration files (vipu-cli.hcl,
// vipu-server.hcl): one `key = value` per line, the value quoted ("...",
// with \" and \\ escapes) or one bare word; `#` and `//` start a comment
// outside quotes; blank lines are skipped. Nested blocks are not part of the
// format. The CLI and the server both read it through this library, so the
// two files cannot drift apart in what they accept.
#ifndef VIPU_HCL_HCL_H_
#define VIPU_HCL_HCL_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace vipu::hcl {

struct Entry {
  std::string key;
  std::string value;
  int line = 0;  // 1-based line in the file
};

// Parses `text`; entries come in file order, each key at most once. A
// malformed line, a key outside `allowed_keys` or a key given twice is
// INVALID_ARGUMENT "<file_name>:<line>: <what>" (a repeat names the line of
// the first setting too), so that a typo in a key never falls back silently
// to a default and neither of two settings is ignored silently.
absl::StatusOr<std::vector<Entry>> Parse(absl::string_view text, absl::string_view file_name,
                                         const std::set<std::string>& allowed_keys);

// The bytes of the file at `path`: NOT_FOUND when it does not exist,
// INVALID_ARGUMENT when it is a directory or cannot be read. Messages are
// "<path>: <reason>"; callers prefix what named the file (a flag, ...).
absl::StatusOr<std::string> ReadText(const std::string& path);

}  // namespace vipu::hcl

#endif  // VIPU_HCL_HCL_H_
