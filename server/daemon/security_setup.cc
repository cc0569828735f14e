// vipu-server's security flags and start-up: --tls-init, the default admin, listen checks.
#include "server/daemon/security_setup.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "fabric/validation.h"
#include "server/security/listen_policy.h"
#include "server/security/tls_init.h"
#include "spdlog/spdlog.h"
#include "storage/database_lock.h"
#include "storage/sqlite_store.h"
#include "tls/credentials.h"

namespace vipu::server {
namespace {

namespace fs = std::filesystem;

constexpr char kDefaultTlsInitDir[] = "vipu-certs";
constexpr char kDefaultAuditLogName[] = "audit.log";

bool AuditLogEnabled(const ServerOptions& o) {
  return !o.audit_log.empty() && o.audit_log != "off";
}

std::string CurrentUserName() {
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') return user;
  if (const passwd* pw = getpwuid(geteuid()); pw != nullptr && pw->pw_name != nullptr) {
    return pw->pw_name;
  }
  return "admin";
}

std::string DefaultUserId(const ServerOptions& options) {
  return options.default_user_id.empty() ? CurrentUserName() : options.default_user_id;
}

int Fail(absl::string_view message, int code) {
  std::fprintf(stderr, "vipu-server: %s\n", std::string(message).c_str());
  return code;
}

// Prints the two lines Graphcore's `--tls-init` prints (docs/security.md).
absl::Status InitTls(const std::string& dir, const ServerOptions& options) {
  TlsInitOptions tls;
  tls.dir = dir;
  tls.extra_hosts = options.tls_hosts;
  tls.validity_days = options.tls_validity_days;
  if (!options.tls_agents.empty()) {
    ASSIGN_OR_RETURN(tls.agents, ParseTlsAgents(options.tls_agents));
  }
  ASSIGN_OR_RETURN(const TlsInitResult result, GenerateTlsCertificates(tls));
  std::printf("Generated server TLS certificates in the directory: %s\n",
              result.server_dir.c_str());
  std::printf("Generated client TLS certificates in the directory: %s\n",
              result.client_dir.c_str());
  for (const std::string& agent_dir : result.agent_dirs) {
    std::printf("Generated agent TLS certificates in the directory: %s\n", agent_dir.c_str());
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

// Prints the default admin's key once, when it was just created.
absl::Status EnsureDefaultAdmin(UserDirectory& users, const ServerOptions& options) {
  const std::string id = DefaultUserId(options);
  if (absl::Status s = fabric::ValidateId("default user id", id); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--default-user-id: ", s.message(), " (name the default admin user)"));
  }
  ASSIGN_OR_RETURN(const std::optional<std::string> key, users.EnsureDefaultAdmin(id));
  if (!key.has_value()) return absl::OkStatus();
  std::printf("Default user is: %s\nAccess key: '%s'\n", id.c_str(), key->c_str());
  std::printf("Use --api-user-id %s --api-access-key '%s' (this key is shown only once).\n",
              id.c_str(), key->c_str());
  std::fflush(stdout);
  spdlog::warn("created the default admin user {}; its access key was printed once on stdout", id);
  return absl::OkStatus();
}

}  // namespace

void AddSecurityFlags(CLI::App& app, ServerOptions* o) {
  app.add_flag("--secure", o->secure,
               "mutual TLS (--tls-dir) and users with access keys (docs/security.md)");
  app.add_flag(
      "--insecure", o->insecure,
      "serve beyond loopback without --secure (anyone reaching the port has full control)");
  app.add_flag("--init", o->init,
               "initialise the database (with --secure: certificates and the default admin), "
               "then exit");
  app.add_option("--tls-dir", o->tls_dir,
                 "directory written by --tls-init (default: tls next to --db)");
  app.add_option_function<std::string>(
         "--tls-init",
         [o](const std::string& dir) { o->tls_init = dir.empty() ? kDefaultTlsInitDir : dir; },
         "write a CA, server and client certificates under DIR (default vipu-certs), then exit")
      ->expected(0, 1);
  app.add_option("--tls-hosts", o->tls_hosts,
                 "extra server names or IPs for --tls-init (besides localhost, 127.0.0.1)")
      ->delimiter(',');
  app.add_option("--tls-agents", o->tls_agents,
                 "agent certificates for --tls-init: ID[+ID...][@HOST[+HOST...]],... "
                 "(DIR/agents/<first id>/)")
      ->check([](const std::string& value) -> std::string {
        auto agents = ParseTlsAgents(value);
        return agents.ok() ? "" : std::string(agents.status().message());
      });
  app.add_option("--tls-validity-days", o->tls_validity_days,
                 "validity of --tls-init certificates; <= 0: already expired (tests)")
      ->group("");
  app.add_option("--default-user-id", o->default_user_id,
                 "the admin user created by the first secure start (default: current user)");
  app.add_option("--user-api-listen", o->user_api_listen,
                 "host:port of the user API (default --listen)");
  app.add_option("--admin-api-listen", o->admin_api_listen,
                 "host:port of the admin API (default: same as the user API)");
  app.add_option("--agent-api-listen", o->agent_api_listen,
                 "host:port where agents register (default: the user API's; mutual TLS "
                 "with --secure)");
  app.add_option("--rate-limit-per-second", o->rate_limit_per_second,
                 "mutating calls per second per user (per peer host without --secure); 0: off")
      ->capture_default_str();
  app.add_option("--rate-limit-burst", o->rate_limit_burst,
                 "mutating calls allowed at once before the rate applies; 0: same as the rate")
      ->capture_default_str();
  app.add_option("--audit-log", o->audit_log,
                 "file getting one JSON line per mutating call, allowed or refused (default: "
                 "audit.log next to --db with --secure, none without; off: none)");
  app.add_option("--audit-log-max-bytes", o->audit_log_max_bytes,
                 "rotate the audit log when a line would take it beyond this size")
      ->capture_default_str();
  app.add_option("--audit-log-keep", o->audit_log_keep, "rotated audit logs kept: PATH.1 .. PATH.N")
      ->capture_default_str();
  app.add_option("--key-hash-iterations", o->key_hash_iterations,
                 "PBKDF2 iterations for new access keys")
      ->group("");
}

void ResolveSecurityDefaults(ServerOptions* o) {
  if (o->tls_dir.empty()) {
    fs::path db(o->db);
    o->tls_dir = (db.has_parent_path() ? db.parent_path() / "tls" : fs::path("tls")).string();
  }
  if (o->user_api_listen.empty()) o->user_api_listen = o->listen;
  if (o->admin_api_listen.empty()) o->admin_api_listen = o->user_api_listen;
  if (o->audit_log.empty() && o->secure) {
    fs::path db(o->db);
    o->audit_log = (db.has_parent_path() ? db.parent_path() / kDefaultAuditLogName
                                         : fs::path(kDefaultAuditLogName))
                       .string();
  }
}

int RunSecurityCommands(const ServerOptions& o) {
  if (o.tls_validity_days > 36500) {
    return Fail(
        absl::StrCat("--tls-validity-days: must be at most 36500, got ", o.tls_validity_days), 2);
  }
  if (o.key_hash_iterations < kMinHashIterations) {
    return Fail(absl::StrCat("--key-hash-iterations: must be at least ", kMinHashIterations,
                             ", got ", o.key_hash_iterations),
                2);
  }
  if (o.audit_log_max_bytes <= 0) {
    return Fail(
        absl::StrCat("--audit-log-max-bytes: must be greater than 0, got ", o.audit_log_max_bytes),
        2);
  }
  if (o.audit_log_keep < 1 || o.audit_log_keep > 1000) {
    return Fail(absl::StrCat("--audit-log-keep: must be in 1..1000, got ", o.audit_log_keep), 2);
  }
  if (!o.tls_agents.empty()) {
    if (auto agents = ParseTlsAgents(o.tls_agents); !agents.ok()) {
      return Fail(agents.status().message(), 2);
    }
    if (o.tls_init.empty()) return Fail("--tls-agents: only with --tls-init", 2);
  }
  if (!o.tls_init.empty()) {
    if (absl::Status s = InitTls(o.tls_init, o); !s.ok()) {
      return Fail(s.message(), absl::IsInvalidArgument(s) ? 2 : 1);
    }
    return 0;
  }
  if (auto limiter = RateLimiter::Create(o.rate_limit_per_second, o.rate_limit_burst);
      !limiter.ok()) {
    return Fail(limiter.status().message(), 2);
  }
  if (o.secure && o.insecure) return Fail("--insecure: contradicts --secure; give one", 2);
  const bool listen_given = o.user_api_listen == o.listen;
  for (const auto& [flag, address] :
       {std::pair<std::string, std::string>{listen_given ? "--listen" : "--user-api-listen",
                                            o.user_api_listen},
        {"--admin-api-listen", o.admin_api_listen}}) {
    if (absl::Status s = CheckListenPolicy(flag, address, o.secure, o.insecure); !s.ok()) {
      spdlog::critical("{}", std::string(s.message()));
      return Fail(s.message(), 2);
    }
  }
  if (!o.secure && !o.agent_api_listen.empty() && !IsLoopbackAddress(o.agent_api_listen)) {
    spdlog::warn(
        "--agent-api-listen {}: agents register without TLS and are not authenticated; keep it "
        "on a management network or use --secure (docs/security.md)",
        o.agent_api_listen);
  }
  if (!o.init) return -1;

  fs::path db(o.db);
  std::error_code ec;
  if (db.has_parent_path()) fs::create_directories(db.parent_path(), ec);
  // --init writes the database too: not while a server runs on it.
  auto lock = storage::DatabaseLock::Acquire(o.db);
  if (!lock.ok()) return Fail(lock.status().message(), 1);
  auto store = storage::SqliteStore::Open(o.db);
  if (!store.ok())
    return Fail(absl::StrCat("cannot open database ", o.db, ": ", store.status().message()), 1);
  std::printf("Initialised storage: %s\n", o.db.c_str());
  std::fflush(stdout);
  if (!o.secure) return 0;
  if (!fs::exists(fs::path(o.tls_dir) / "server" / "cert.pem")) {
    if (absl::Status s = InitTls(o.tls_dir, o); !s.ok()) return Fail(s.message(), 1);
  }
  UserDirectory users(store->get(), nullptr, o.key_hash_iterations);
  if (absl::Status s = EnsureDefaultAdmin(users, o); !s.ok()) {
    return Fail(s.message(), absl::IsInvalidArgument(s) ? 2 : 1);
  }
  return 0;
}

absl::StatusOr<std::unique_ptr<tls::LiveCertificates>> LoadServerCertificates(
    const ServerOptions& o) {
  const fs::path dir = fs::path(o.tls_dir) / "server";
  tls::TlsFiles files{(dir / "ca.pem").string(), (dir / "cert.pem").string(),
                      (dir / "key.pem").string()};
  auto live = tls::LiveCertificates::Start(files);
  if (!live.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--tls-dir: ", live.status().message(),
                     " (create the certificates with vipu-server --tls-init ", o.tls_dir, ")"));
  }
  if ((*live)->CertificateExpired()) {
    spdlog::warn("{} has expired: clients and agents will refuse it", (*live)->files().cert);
  }
  return live;
}

absl::StatusOr<std::unique_ptr<Security>> Security::Start(const ServerOptions& o,
                                                          storage::Store* store) {
  std::unique_ptr<Security> s(new Security());
  ASSIGN_OR_RETURN(s->limiter_, RateLimiter::Create(o.rate_limit_per_second, o.rate_limit_burst));
  s->authenticator_ = std::make_unique<Authenticator>(store);
  s->users_ =
      std::make_unique<UserDirectory>(store, s->authenticator_.get(), o.key_hash_iterations);
  s->access_ = o.secure ? AccessControl::Secure(*s->authenticator_, s->limiter_.get())
                        : AccessControl::InsecureAdmittingEveryone(s->limiter_.get());
  s->user_admin_service_ = std::make_unique<UserAdminService>(s->users_.get(), *s->access_);
  if (AuditLogEnabled(o)) {
    AuditLogOptions audit;
    audit.path = o.audit_log;
    audit.max_bytes = o.audit_log_max_bytes;
    audit.keep = o.audit_log_keep;
    ASSIGN_OR_RETURN(s->audit_log_, AuditLog::Open(audit));
    spdlog::info("audit log: {} (rotated beyond {} bytes, {} kept)", o.audit_log,
                 o.audit_log_max_bytes, o.audit_log_keep);
  } else if (o.secure) {
    spdlog::warn("secure mode without an audit log (--audit-log off)");
  }
  if (o.secure) {
    ASSIGN_OR_RETURN(s->certificates_, LoadServerCertificates(o));
    s->credentials_ = tls::MutualTlsServerCredentials(*s->certificates_);
    s->agent_channel_credentials_ = tls::MutualTlsChannelCredentials(*s->certificates_);
    RETURN_IF_ERROR(EnsureDefaultAdmin(*s->users_, o));
    spdlog::info("secure mode: mutual TLS with {}, users required", o.tls_dir);
  } else {
    spdlog::warn(
        "not secure: callers are not authenticated and see every allocation "
        "(start with --secure, docs/security.md)");
  }
  if (s->limiter_->enabled()) {
    spdlog::info("rate limit: {} mutating calls/s per {}, burst {}", o.rate_limit_per_second,
                 o.secure ? "user" : "peer host",
                 o.rate_limit_burst == 0 ? o.rate_limit_per_second : o.rate_limit_burst);
  }
  return s;
}

absl::Status ReloadServerCertificates(tls::LiveCertificates& certificates) {
  if (absl::Status s = certificates.Reload(); !s.ok()) {
    spdlog::error("SIGHUP: certificates not reloaded, keeping the old ones: {}",
                  std::string(s.message()));
    return s;
  }
  spdlog::info("SIGHUP: reloaded the certificates of {}; new connections use them",
               certificates.files().cert);
  if (certificates.CertificateExpired()) {
    spdlog::warn("{} has expired: clients and agents will refuse it", certificates.files().cert);
  }
  return absl::OkStatus();
}

absl::Status Security::ReloadCertificates() {
  if (!certificates_) return absl::OkStatus();
  return ReloadServerCertificates(*certificates_);
}

}  // namespace vipu::server
