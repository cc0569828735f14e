// `vipu` and `vipu-admin` command lines, run in-process (cli/common/command_line.h):
// one argument per input line, the first line picks the program. The server
// address is pinned to a closed loopback port with a 1 s timeout, so any
// command that gets past parsing fails fast without touching the network
// beyond 127.0.0.1. The documented contract is checked: exit 0, 1 or 2, and
// a failure is exactly one line on stderr.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "cli/common/command_line.h"

namespace {

// Flags that would point the CLI somewhere else or make it wait.
bool Dropped(const std::string& arg) {
  if (arg.size() > 1 && arg[0] == '-' && arg[1] != '-' && arg.find('H') != std::string::npos) {
    return true;  // -H, -Hhost, or -H combined with other short flags
  }
  for (const char* f : {"--api-host", "--api-port", "--api-timeout", "--config"}) {
    if (arg.rfind(f, 0) == 0) return true;
  }
  return false;
}

const vipu::cli::Environment& Env() {
  static const vipu::cli::Environment env = [] {
    vipu::cli::Environment e;
    char home[] = "/tmp/vipu-cli-fuzz-XXXXXX";
    if (mkdtemp(home) == nullptr) abort();
    e.vars = {{"HOME", home},
              {"VIPU_CLI_API_HOST", "127.0.0.1"},
              {"VIPU_CLI_API_PORT", "1"},  // nothing listens there
              {"VIPU_CLI_API_TIMEOUT", "1"}};
    e.system_config_path = "/nonexistent/vipu-cli.hcl";
    return e;
  }();
  return env;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (lines.size() > 64) return 0;
  const bool admin = lines[0] == "vipu-admin";
  std::vector<std::string> args = {admin ? "vipu-admin" : "vipu"};
  for (size_t i = 1; i < lines.size(); ++i) {
    if (!Dropped(lines[i])) args.push_back(lines[i]);
  }
  std::ostringstream out, err;
  const int rc = vipu::cli::RunCli(
      admin ? vipu::cli::CliKind::kVipuAdmin : vipu::cli::CliKind::kVipu, args, out, err, Env());
  if (rc != 0 && rc != 1 && rc != 2) abort();
  if (rc != 0) {
    const std::string e = err.str();
    if (e.empty() || e.back() != '\n' || e.find('\n') != e.size() - 1) abort();
  }
  return 0;
}
