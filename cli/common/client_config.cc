// Resolves the CLIs' settings: flag, then VIPU_CLI_* environment, then vipu-cli.hcl, then default.
#include "cli/common/client_config.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "hcl/hcl.h"

extern char** environ;

namespace vipu::cli {
namespace {

// One setting's key in each source.
struct Setting {
  const char* flag;
  const char* env;
  const char* hcl_key;
};
constexpr Setting kHost{"--api-host", "VIPU_CLI_API_HOST", "api-host"};
constexpr Setting kPort{"--api-port", "VIPU_CLI_API_PORT", "api-port"};
constexpr Setting kTimeout{"--api-timeout", "VIPU_CLI_API_TIMEOUT", "api-timeout"};
constexpr Setting kUserId{"--api-user-id", "VIPU_CLI_API_USER_ID", "api-user-id"};
constexpr Setting kAccessKey{"--api-access-key", "VIPU_CLI_API_ACCESS_KEY", "api-access-key"};
constexpr Setting kTlsCa{"--api-tls-ca", "VIPU_CLI_API_TLS_CA", "api-tls-ca"};
constexpr Setting kTlsCert{"--api-tls-cert", "VIPU_CLI_API_TLS_CERT", "api-tls-cert"};
constexpr Setting kTlsKey{"--api-tls-key", "VIPU_CLI_API_TLS_KEY", "api-tls-key"};

const std::set<std::string>& HclKeys() {
  static const auto* keys = new std::set<std::string>{
      kHost.hcl_key,      kPort.hcl_key,  kTimeout.hcl_key, kUserId.hcl_key,
      kAccessKey.hcl_key, kTlsCa.hcl_key, kTlsCert.hcl_key, kTlsKey.hcl_key};
  return *keys;
}

// The settings of the HCL file at `path`; a key given twice is refused, as
// vipu-server.hcl refuses it.
absl::StatusOr<std::map<std::string, std::string>> ReadHclSettings(const std::string& path) {
  absl::StatusOr<std::string> text = hcl::ReadText(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("config file ", text.status().message()));
  }
  ASSIGN_OR_RETURN(auto entries, hcl::Parse(*text, path, HclKeys()));
  std::map<std::string, std::string> settings;
  for (hcl::Entry& e : entries) settings[e.key] = std::move(e.value);
  return settings;
}

// A value and where it came from, for error messages.
struct Sourced {
  std::string value;
  std::string source;
  bool from_file = false;
};

class Resolver {
 public:
  Resolver(const ConnectionFlags& flags, const Environment& env,
           std::map<std::string, std::string> file, std::string file_name)
      : flags_(flags), env_(env), file_(std::move(file)), file_name_(std::move(file_name)) {}

  std::optional<Sourced> Find(const Setting& s, const std::optional<std::string>& flag) const {
    if (flag.has_value()) return Sourced{*flag, s.flag};
    if (std::string v = env_.Get(s.env); !v.empty()) return Sourced{v, s.env};
    if (auto it = file_.find(s.hcl_key); it != file_.end()) {
      return Sourced{it->second, absl::StrCat(file_name_, ": ", s.hcl_key), true};
    }
    return std::nullopt;
  }

 private:
  const ConnectionFlags& flags_;
  const Environment& env_;
  std::map<std::string, std::string> file_;
  std::string file_name_;
};

// The config file's settings and name: --config's, which must be there, or
// else the system file's, which may be missing (then no settings, but its
// name). No name when there is neither.
struct ConfigFile {
  std::map<std::string, std::string> settings;
  std::string name;
};

absl::StatusOr<ConfigFile> ReadConfigFile(const ConnectionFlags& flags, const Environment& env) {
  ConfigFile file;
  if (flags.config_file.has_value()) {
    if (flags.config_file->empty()) {
      return absl::InvalidArgumentError("--config: must name a file, got an empty value");
    }
    file.name = *flags.config_file;
    auto parsed = ReadHclSettings(file.name);
    if (!parsed.ok()) return absl::InvalidArgumentError(parsed.status().message());
    file.settings = *std::move(parsed);
  } else if (!env.system_config_path.empty()) {
    file.name = env.system_config_path;
    auto parsed = ReadHclSettings(file.name);
    // The system file is optional; a broken one is still an error.
    if (parsed.ok()) {
      file.settings = *std::move(parsed);
    } else if (!absl::IsNotFound(parsed.status())) {
      return absl::InvalidArgumentError(parsed.status().message());
    }
  }
  return file;
}

absl::StatusOr<uint32_t> ParseRange(const Sourced& v, uint64_t min, uint64_t max,
                                    const char* rule) {
  uint64_t n = 0;
  if (!absl::SimpleAtoi(v.value, &n) || n < min || n > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(v.source, ": ", rule, ", got ", v.value.empty() ? "an empty value" : v.value));
  }
  return static_cast<uint32_t>(n);
}

// One TLS file setting into *out, and where it came from into *source;
// both left alone when it is not set. Relative paths in a config file are
// relative to that file's folder, `file_dir`; the file must be readable.
absl::Status ResolveTlsFile(const Resolver& r, const Setting& setting,
                            const std::optional<std::string>& flag, const std::string& file_dir,
                            std::string* out, std::string* source) {
  auto v = r.Find(setting, flag);
  if (!v) return absl::OkStatus();
  if (v->value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(v->source, ": must name a file"));
  }
  std::filesystem::path path(v->value);
  if (v->from_file && path.is_relative() && !file_dir.empty()) path = file_dir / path;
  if (!std::ifstream(path).good()) {
    return absl::InvalidArgumentError(
        absl::StrCat(v->source, ": cannot read '", path.string(), "'"));
  }
  *out = path.string();
  *source = v->source;
  return absl::OkStatus();
}

// The TLS files of `config`: a client certificate comes with its key, and
// both need the CA that checks the server.
absl::Status ResolveTls(const Resolver& r, const ConnectionFlags& flags,
                        const std::string& file_name, ClientConfig* config) {
  const std::string file_dir = std::filesystem::path(file_name).parent_path().string();
  std::string ca_source, cert_source, key_source;
  RETURN_IF_ERROR(
      ResolveTlsFile(r, kTlsCa, flags.api_tls_ca, file_dir, &config->tls_ca, &ca_source));
  RETURN_IF_ERROR(
      ResolveTlsFile(r, kTlsCert, flags.api_tls_cert, file_dir, &config->tls_cert, &cert_source));
  RETURN_IF_ERROR(
      ResolveTlsFile(r, kTlsKey, flags.api_tls_key, file_dir, &config->tls_key, &key_source));
  if (config->tls_cert.empty() != config->tls_key.empty()) {
    return absl::InvalidArgumentError(
        config->tls_cert.empty()
            ? absl::StrCat(key_source, ": needs --api-tls-cert (the client certificate) too")
            : absl::StrCat(cert_source, ": needs --api-tls-key (the certificate's key) too"));
  }
  if (!config->tls_cert.empty() && config->tls_ca.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        cert_source, ": needs --api-tls-ca (the CA that signed vipu-server's certificate)"));
  }
  return absl::OkStatus();
}

}  // namespace

Environment Environment::FromProcess() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::pair<std::string, std::string> kv = absl::StrSplit(*e, absl::MaxSplits('=', 1));
    env.vars.insert(std::move(kv));
  }
  return env;
}

std::string Environment::Get(const std::string& name) const {
  auto it = vars.find(name);
  return it == vars.end() ? std::string() : it->second;
}

absl::StatusOr<std::vector<wire::ServerMember>> ClientConfig::Members() const {
  return wire::ParseServerMembers(host, port);
}

std::string ClientConfig::Target() const {
  absl::StatusOr<std::vector<wire::ServerMember>> members = Members();
  return members.ok() ? wire::JoinTargets(*members) : host;
}

absl::StatusOr<ClientConfig> ResolveClientConfig(const ConnectionFlags& flags,
                                                 const Environment& env) {
  ASSIGN_OR_RETURN(ConfigFile file, ReadConfigFile(flags, env));
  Resolver r(flags, env, std::move(file.settings), file.name);

  ClientConfig config;
  std::optional<Sourced> host = r.Find(kHost, flags.api_host);
  if (host) {
    if (host->value.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(host->source, ": must not be empty"));
    }
    config.host = host->value;
  }
  if (auto v = r.Find(kPort, flags.api_port)) {
    ASSIGN_OR_RETURN(auto port, ParseRange(*v, 1, 65535, "must be an integer in 1..65535"));
    config.port = port;
  }
  // Each member on its own, once the port entries without one take is known.
  if (absl::StatusOr<std::vector<wire::ServerMember>> members = config.Members(); !members.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(host ? host->source : std::string(kHost.flag),
                                                   ": ", members.status().message()));
  }
  if (auto v = r.Find(kTimeout, flags.api_timeout)) {
    ASSIGN_OR_RETURN(auto timeout,
                     ParseRange(*v, 1, 24 * 3600, "must be a whole number of seconds in 1..86400"));
    config.timeout_seconds = timeout;
  }
  if (auto v = r.Find(kUserId, flags.api_user_id)) config.user_id = v->value;
  if (auto v = r.Find(kAccessKey, flags.api_access_key)) config.access_key = v->value;
  RETURN_IF_ERROR(ResolveTls(r, flags, file.name, &config));
  return config;
}

}  // namespace vipu::cli
