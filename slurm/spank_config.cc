// Parsing and checking of the vipu_spank plugin arguments and job options.
#include "slurm/spank_config.h"

#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "wire/server_members.h"

namespace vipu::slurm {
namespace {

constexpr uint32_t kMaxIpus = 1024;

bool PowerOfTwo(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

absl::StatusOr<uint32_t> ParsePowerOfTwo(const std::string& flag, const std::string& text) {
  uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || text.empty() || text[0] == '+' || !PowerOfTwo(n) ||
      n > kMaxIpus) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", text, ": must be a power of two (1, 2, 4, ... ", kMaxIpus, ")"));
  }
  return static_cast<uint32_t>(n);
}

absl::StatusOr<uint32_t> ParseRange(const std::string& key, const std::string& text, uint32_t max) {
  uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || text[0] == '+' || n < 1 || n > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, "=", text, ": must be an integer in 1..", max));
  }
  return static_cast<uint32_t>(n);
}

}  // namespace

absl::StatusOr<PluginConfig> ParsePluginArgs(const std::vector<std::string>& args) {
  PluginConfig config;
  std::map<std::string, std::string*> strings = {
      {"api-host", &config.api_host},
      {"api-user-id", &config.api_user_id},
      {"api-access-key-file", &config.api_access_key_file},
      {"api-tls-ca", &config.api_tls_ca},
      {"api-tls-cert", &config.api_tls_cert},
      {"api-tls-key", &config.api_tls_key},
      {"allocation", &config.allocation},
      {"vipu", &config.vipu},
  };
  bool port_given = false;
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("plugin argument '", arg, "': must be key=value"));
    }
    const std::string key = arg.substr(0, eq);
    const std::string value = arg.substr(eq + 1);
    if (value.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("plugin argument ", key, "=: needs a value"));
    }
    if (key == "api-port") {
      ASSIGN_OR_RETURN(auto port, ParseRange(key, value, 65535));
      config.api_port = port;
      port_given = true;
    } else if (key == "api-timeout") {
      ASSIGN_OR_RETURN(auto timeout, ParseRange(key, value, 86400));
      config.api_timeout_seconds = timeout;
    } else if (key == "api-access-key") {
      // A key in plugstack.conf would be readable by every user, since
      // srun and sbatch read that file too.
      return absl::InvalidArgumentError(
          "plugin argument api-access-key: not accepted (plugstack.conf is world-readable); "
          "put the key in a root-only file and give api-access-key-file=FILE");
    } else if (auto it = strings.find(key); it != strings.end()) {
      *it->second = value;
    } else {
      std::vector<std::string> known = {"api-port", "api-timeout"};
      for (const auto& [k, unused] : strings) known.push_back(k);
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown plugin argument '", key, "' (known: ", absl::StrJoin(known, ", "), ")"));
    }
  }
  if (config.api_host.empty()) {
    return absl::InvalidArgumentError("plugin argument api-host=H is required");
  }
  if (!port_given) {
    return absl::InvalidArgumentError("plugin argument api-port=P is required");
  }
  if (auto members = wire::ParseServerMembers(config.api_host, config.api_port); !members.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("plugin argument api-host=", config.api_host,
                                                   ": ", members.status().message()));
  }
  if (config.api_tls_cert.empty() != config.api_tls_key.empty()) {
    return absl::InvalidArgumentError("plugin arguments api-tls-cert and api-tls-key go together");
  }
  if (!config.api_tls_cert.empty() && config.api_tls_ca.empty()) {
    return absl::InvalidArgumentError("plugin argument api-tls-cert needs api-tls-ca too");
  }
  if (config.api_access_key_file.empty() != config.api_user_id.empty()) {
    return absl::InvalidArgumentError(
        "plugin arguments api-user-id and api-access-key-file go together");
  }
  return config;
}

absl::StatusOr<uint32_t> ParseIpus(const std::string& text) {
  return ParsePowerOfTwo("--ipus", text);
}

absl::StatusOr<uint32_t> ParseGcds(const std::string& text) {
  return ParsePowerOfTwo("--ipus-gcds", text);
}

absl::Status CheckRequest(const IpuRequest& request, bool gcds_given) {
  if (request.ipus == 0) {
    if (gcds_given) return absl::InvalidArgumentError("--ipus-gcds: needs --ipus=N");
    if (request.reconfigurable) {
      return absl::InvalidArgumentError("--ipus-reconfigurable: needs --ipus=N");
    }
    return absl::OkStatus();
  }
  if (request.gcds == 0 || request.ipus % request.gcds != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ipus-gcds=", request.gcds, ": must divide --ipus=", request.ipus));
  }
  return absl::OkStatus();
}

std::string PartitionId(uint32_t job_id) { return absl::StrCat(kPartitionPrefix, job_id); }

}  // namespace vipu::slurm
