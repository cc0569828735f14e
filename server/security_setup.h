// What --secure, --tls-init, --init and the listen flags add to vipu-server
// (docs/security.md), kept out of main.cc: the flags, the checks made before
// anything starts, and the objects the services use at run time.
#ifndef VIPU_SERVER_SECURITY_SETUP_H_
#define VIPU_SERVER_SECURITY_SETUP_H_

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/audit_log.h"
#include "server/auth/access_control.h"
#include "server/auth/authenticator.h"
#include "server/auth/rate_limiter.h"
#include "server/auth/user_directory.h"
#include "server/server_options.h"
#include "server/user_admin_service.h"
#include "storage/store.h"

namespace vipu::server {

// --secure, --insecure, --tls-dir, --tls-init, --tls-hosts, --init,
// --default-user-id, --user-api-listen, --admin-api-listen,
// --agent-api-listen, --rate-limit-per-second, --rate-limit-burst,
// --audit-log, --audit-log-max-bytes, --audit-log-keep, and the hidden
// --tls-validity-days and --key-hash-iterations (tests).
void AddSecurityFlags(CLI::App& app, ServerOptions* options);

// Fills the defaults that depend on other flags (tls_dir next to --db, the
// API addresses from --listen, the agent address with --secure, the audit
// log next to --db with --secure).
void ResolveSecurityDefaults(ServerOptions* options);

// Runs the one-shot commands and the start-up checks. Returns the exit code
// when the process should end now (--tls-init, --init, or a refused
// configuration: 2), or -1 to go on serving.
int RunSecurityCommands(const ServerOptions& options);

// The run-time side: users, the access gate, the rate limit, the audit log
// and the TLS credentials of the user and admin end-points.
class Security {
 public:
  // With --secure: loads the certificates and creates the default admin
  // when there is no user yet (its key is printed once on stdout). Opens
  // the audit log; FAILED_PRECONDITION naming the path when it cannot.
  static absl::StatusOr<std::unique_ptr<Security>> Start(const ServerOptions& options,
                                                         storage::Store* store);

  auth::AccessControl* access() { return access_.get(); }
  auth::UserDirectory* users() { return users_.get(); }
  // Null: plaintext (no --secure).
  std::shared_ptr<grpc::ServerCredentials> credentials() const { return credentials_; }
  grpc::Service* user_admin_service() { return user_admin_service_.get(); }
  // Null: no audit log (--audit-log off, or unset without --secure).
  AuditLog* audit_log() { return audit_log_.get(); }

 private:
  Security() = default;
  std::unique_ptr<auth::Authenticator> authenticator_;
  std::unique_ptr<auth::UserDirectory> users_;
  std::unique_ptr<auth::RateLimiter> limiter_;
  std::unique_ptr<auth::AccessControl> access_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  std::unique_ptr<UserAdminService> user_admin_service_;
  std::unique_ptr<AuditLog> audit_log_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_SECURITY_SETUP_H_
