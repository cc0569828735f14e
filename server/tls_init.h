// `vipu-server --tls-init DIR`: the certificates of the secure mode
// (docs/security.md). A CA (EC P-256, self-signed) signs a server
// certificate (SAN DNS:localhost, IP:127.0.0.1 and the extra hosts) and a
// client certificate shared by the CLIs (users are told apart by their
// access keys, not their certificates). Layout:
//   DIR/ca.pem, DIR/ca-key.pem (0600: issues more certificates)
//   DIR/server/{cert.pem,key.pem,ca.pem}  (what vipu-server --tls-dir DIR reads)
//   DIR/client/{cert.pem,key.pem,ca.pem}  (what the CLIs' --api-tls-* name)
// Keys are written 0600. When DIR already holds ca.pem and ca-key.pem the CA
// is kept and only the server and client certificates are issued again.
#ifndef VIPU_SERVER_TLS_INIT_H_
#define VIPU_SERVER_TLS_INIT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vipu::server {

struct TlsInitOptions {
  std::string dir;
  // Extra names of the server: IP literals become IP SANs, others DNS SANs.
  std::vector<std::string> extra_hosts;
  // Validity of new certificates. <= 0 issues certificates that have
  // already expired (tests of expiry).
  int validity_days = 825;
};

struct TlsInitResult {
  std::string server_dir;
  std::string client_dir;
  bool reused_ca = false;
};

// INVALID_ARGUMENT for an empty dir, a bad host name ("--tls-hosts: ..."),
// validity beyond 36500 days; INTERNAL for I/O and OpenSSL failures.
absl::StatusOr<TlsInitResult> GenerateTlsCertificates(const TlsInitOptions& options);

}  // namespace vipu::server

#endif  // VIPU_SERVER_TLS_INIT_H_
