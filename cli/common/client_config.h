// Where the CLIs find vipu-server and who they say they are. Every setting is
// resolved per field with the precedence
//   command-line flag > environment (VIPU_CLI_*) > config file > default,
// where the config file is the one named by --config, else the system file
// (/etc/vipu/vipu-cli.hcl) when it exists. The IPUoF client
// (popdist/ipuof_client.h) resolves its credentials here too, so that an
// application authenticates exactly as `vipu` would.
#ifndef VIPU_CLI_COMMON_CLIENT_CONFIG_H_
#define VIPU_CLI_COMMON_CLIENT_CONFIG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wire/server_members.h"

namespace vipu::cli {

inline constexpr const char* kSystemConfigPath = "/etc/vipu/vipu-cli.hcl";
inline constexpr const char* kDefaultHost = "localhost";
inline constexpr uint32_t kDefaultPort = 8090;
inline constexpr uint32_t kDefaultTimeoutSeconds = 120;

// The process surroundings a command run depends on, passed in explicitly so
// tests can run the CLIs in-process with their own environment and files.
struct Environment {
  std::map<std::string, std::string> vars;  // environment variables
  std::string system_config_path = kSystemConfigPath;

  // The real environment of this process.
  static Environment FromProcess();
  // Empty when unset.
  std::string Get(const std::string& name) const;
  // $HOME, where ~/.ipuof.conf.d lives.
  std::string Home() const { return Get("HOME"); }
};

// Connection settings as given on the command line (unset when absent).
// Values are kept as text so every source is validated by the same rules.
struct ConnectionFlags {
  std::optional<std::string> api_host;
  std::optional<std::string> api_port;
  std::optional<std::string> api_timeout;
  std::optional<std::string> api_user_id;
  std::optional<std::string> api_access_key;
  std::optional<std::string> config_file;
  std::optional<std::string> api_tls_ca;
  std::optional<std::string> api_tls_cert;
  std::optional<std::string> api_tls_key;
};

struct ClientConfig {
  // The server's members as given: a comma-separated list of HOST,
  // HOST:PORT, [V6] or [V6]:PORT (wire/server_members.h); `port` applies to
  // the entries without one. ResolveClientConfig checks every entry.
  std::string host = kDefaultHost;
  uint32_t port = kDefaultPort;
  uint32_t timeout_seconds = kDefaultTimeoutSeconds;
  std::string user_id;     // empty: unauthenticated
  std::string access_key;  // empty: unauthenticated
  // Mutual TLS (vipu-server --secure): PEM files; tls_ca empty: plaintext.
  // A path from a config file is taken relative to that file's directory.
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;

  bool tls() const { return !tls_ca.empty(); }

  // The members of `host`, in order, with `port` for entries without one.
  // INVALID_ARGUMENT naming the bad entry (see wire::ParseServerMembers).
  absl::StatusOr<std::vector<wire::ServerMember>> Members() const;
  // Every member's host:port as dialled and as printed, joined with ','
  // (`localhost:8090`; `a:8090,[::1]:8091`); IPv6 literals are bracketed.
  // `host` itself when it does not parse.
  std::string Target() const;
};

// INVALID_ARGUMENT naming the source and the rule, e.g.
// "--api-port: must be an integer in 1..65535, got 70000" or
// "VIPU_CLI_API_TIMEOUT: must be a positive integer (seconds), got x".
// TLS: --api-tls-cert and --api-tls-key go together and need --api-tls-ca;
// every file must be readable ("--api-tls-ca: cannot read 'x'").
absl::StatusOr<ClientConfig> ResolveClientConfig(const ConnectionFlags& flags,
                                                 const Environment& env);

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_CLIENT_CONFIG_H_
