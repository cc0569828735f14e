// ApplyConfigFile: vipu-server.hcl's keys applied to the flags the command line left unset.
#include "server/daemon/config_file.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "hcl/hcl.h"

namespace vipu::server {

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
  absl::StatusOr<std::string> text = hcl::ReadText(path);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status()) && !must_exist) return absl::OkStatus();
    return absl::Status(text.status().code(),
                        absl::StrCat("--config: cannot read ", text.status().message()));
  }
  ASSIGN_OR_RETURN(const std::vector<hcl::Entry> entries,
                   hcl::Parse(*text, path, ConfigurableKeys(app)));
  for (const hcl::Entry& entry : entries) {
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
