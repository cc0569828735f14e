// The server's configuration file (/etc/vipu/vipu-server.hcl): flat HCL
// (hcl/hcl.h, the reader the CLI uses too), the keys being the long flags
// without `--`. A key given twice is refused. A flag given on the command
// line wins over the file.
#ifndef VIPU_SERVER_DAEMON_CONFIG_FILE_H_
#define VIPU_SERVER_DAEMON_CONFIG_FILE_H_

#include <CLI/CLI.hpp>
#include <set>
#include <string>

#include "absl/status/status.h"

namespace vipu::server {

inline constexpr char kDefaultConfigPath[] = "/etc/vipu/vipu-server.hcl";

// Keys the file may set: every long option of `app` except config, help and
// version.
std::set<std::string> ConfigurableKeys(const CLI::App& app);

// After app.parse(): sets every option the command line left unset from the
// file at `path`, through the option's own validators (a range check failing
// is INVALID_ARGUMENT naming file:line and the key). A missing file is OK
// unless `must_exist` (then NOT_FOUND). Flags take "true"/"false".
absl::Status ApplyConfigFile(CLI::App& app, const std::string& path, bool must_exist);

}  // namespace vipu::server

#endif  // VIPU_SERVER_DAEMON_CONFIG_FILE_H_
