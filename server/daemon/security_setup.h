// What --secure, --tls-init, --init and the listen flags add to vipu-server
// (docs/security.md), kept out of main.cc: the flags, the checks made before
// anything starts, and the objects the services use at run time.
#ifndef VIPU_SERVER_DAEMON_SECURITY_SETUP_H_
#define VIPU_SERVER_DAEMON_SECURITY_SETUP_H_

#include <grpcpp/grpcpp.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/api/user_admin_service.h"
#include "server/daemon/server_options.h"
#include "server/security/access_control.h"
#include "server/security/audit_log.h"
#include "server/security/authenticator.h"
#include "server/security/rate_limiter.h"
#include "server/security/user_directory.h"
#include "storage/store.h"
#include "tls/live_certificates.h"

namespace vipu::server {

// --secure, --insecure, --tls-dir, --tls-init, --tls-hosts, --tls-agents, --init,
// --default-user-id, --user-api-listen, --admin-api-listen,
// --agent-api-listen, --rate-limit-per-second, --rate-limit-burst,
// --audit-log, --audit-log-max-bytes, --audit-log-keep, and the hidden
// --tls-validity-days and --key-hash-iterations (tests).
void AddSecurityFlags(CLI::App& app, ServerOptions* options);

// Fills the defaults that depend on other flags (tls_dir next to --db, the
// API addresses from --listen, the audit log next to --db with --secure).
void ResolveSecurityDefaults(ServerOptions* options);

// Runs the one-shot commands and the start-up checks. Returns the exit code
// when the process should end now (--tls-init, --init, or a refused
// configuration: 2), or -1 to go on serving.
int RunSecurityCommands(const ServerOptions& options);

// The server's certificate, key and pod CA from --tls-dir/server, checked
// and watched for SIGHUP reloads. FAILED_PRECONDITION naming the bad file
// and how to create them. Warns when the certificate has expired.
absl::StatusOr<std::unique_ptr<tls::LiveCertificates>> LoadServerCertificates(
    const ServerOptions& options);

// SIGHUP: checks the files of `certificates` again and, when they pass,
// serves new handshakes with them; otherwise logs the error naming the file
// and keeps the old ones, and returns it. Warns when the new certificate has
// expired.
absl::Status ReloadServerCertificates(tls::LiveCertificates& certificates);

// The run-time side: users, the access gate, the rate limit, the audit log
// and the TLS credentials of every gRPC end-point and of the channels to the
// agents. Owns all of these; borrows the store, which must outlive it.
// Thread safety: ReloadCertificates() may run on any thread while the
// credentials are in use; the accessors, fixed by Start, from any thread.
class Security {
 public:
  // With --secure: loads and checks the certificates (FAILED_PRECONDITION
  // naming the bad file) and creates the default admin when there is no
  // user yet (its key is printed once on stdout). Opens the audit log;
  // FAILED_PRECONDITION naming the path when it cannot.
  static absl::StatusOr<std::unique_ptr<Security>> Start(const ServerOptions& options,
                                                         storage::Store* store);

  // The policy every service admits calls by: secure or, without --secure,
  // one that admits everyone and says so in its name.
  AccessControl& access() { return *access_; }
  UserDirectory* users() { return users_.get(); }
  // Null: plaintext (no --secure).
  std::shared_ptr<grpc::ServerCredentials> credentials() const { return credentials_; }
  // What the server dials agents with: its own certificate, verifying the
  // agent's against the pod CA. Null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> agent_channel_credentials() const {
    return agent_channel_credentials_;
  }
  // Null: plaintext.
  tls::LiveCertificates* certificates() { return certificates_.get(); }
  // SIGHUP: checks the --tls-dir server files again and, when they pass,
  // serves new handshakes with them; otherwise logs the error naming the
  // file and keeps the old ones. OK without --secure.
  absl::Status ReloadCertificates();
  grpc::Service* user_admin_service() { return user_admin_service_.get(); }
  // Null: no audit log (--audit-log off, or unset without --secure).
  AuditLog* audit_log() { return audit_log_.get(); }

 private:
  Security() = default;
  std::unique_ptr<Authenticator> authenticator_;
  std::unique_ptr<UserDirectory> users_;
  std::unique_ptr<RateLimiter> limiter_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<tls::LiveCertificates> certificates_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
  std::shared_ptr<grpc::ChannelCredentials> agent_channel_credentials_;
  std::unique_ptr<UserAdminService> user_admin_service_;
  std::unique_ptr<AuditLog> audit_log_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_DAEMON_SECURITY_SETUP_H_
