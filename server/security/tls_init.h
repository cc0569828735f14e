// `vipu-server --tls-init DIR`: the certificates of the secure mode
// (docs/security.md). A CA (EC P-256, self-signed) signs a server
// certificate (SAN DNS:localhost, IP:127.0.0.1, the extra hosts and the URI
// urn:vipu:server that agents recognise the server by; serverAuth and
// clientAuth, because the server also dials the agents with it), a client
// certificate shared by the CLIs (users are told apart by their access keys,
// not their certificates) and agent certificates (SAN DNS:<agent-id> for the
// ids and the agent's hosts). Layout:
//   DIR/ca.pem, DIR/ca-key.pem (0600: issues more certificates)
//   DIR/server/{cert.pem,key.pem,ca.pem}  (what vipu-server --tls-dir DIR reads)
//   DIR/client/{cert.pem,key.pem,ca.pem}  (what the CLIs' --api-tls-* name)
//   DIR/agents/<first agent id>/{cert.pem,key.pem,ca.pem}  (vipu-agent --tls-*)
// Keys are written 0600. When DIR already holds ca.pem and ca-key.pem the CA
// is kept and only the server and client certificates are issued again.
#ifndef VIPU_SERVER_SECURITY_TLS_INIT_H_
#define VIPU_SERVER_SECURITY_TLS_INIT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace vipu::server {

// One agent certificate: the agent ids it may serve (CN = the first, SAN
// DNS:<id> for each) and the hosts it is reached at (IP SANs for IP
// literals, DNS SANs otherwise).
struct AgentCertificateSpec {
  std::vector<std::string> ids;
  std::vector<std::string> hosts;
};

// Parses --tls-agents: comma-separated entries ID[+ID...][@HOST[+HOST...]],
// e.g. "ag1@10.0.0.11,ag2@m2.example,ag3+ag4@m3". INVALID_ARGUMENT starting
// with "--tls-agents: " for an empty entry, an invalid id
// (fabric::ValidateId), an invalid host (as --tls-hosts) or an id given
// twice.
absl::StatusOr<std::vector<AgentCertificateSpec>> ParseTlsAgents(const std::string& list);

struct TlsInitOptions {
  std::string dir;
  // Extra names of the server: IP literals become IP SANs, others DNS SANs.
  std::vector<std::string> extra_hosts;
  // Agent certificates to issue as well (--tls-agents).
  std::vector<AgentCertificateSpec> agents;
  // Validity of new certificates. <= 0 issues certificates that have
  // already expired (tests of expiry).
  int validity_days = 825;
};

struct TlsInitResult {
  std::string server_dir;
  std::string client_dir;
  std::vector<std::string> agent_dirs;
  bool reused_ca = false;
};

// INVALID_ARGUMENT for an empty dir, a bad host name ("--tls-hosts: ..."),
// validity beyond 36500 days; INTERNAL for I/O and OpenSSL failures.
absl::StatusOr<TlsInitResult> GenerateTlsCertificates(const TlsInitOptions& options);

// Issues one agent certificate with the CA already in `dir` (ca.pem,
// ca-key.pem) into dir/agents/<first id>/ and returns that directory.
// FAILED_PRECONDITION naming the file when the CA is missing or unusable,
// INVALID_ARGUMENT for bad ids or hosts, INTERNAL for I/O and OpenSSL.
absl::StatusOr<std::string> IssueAgentCertificate(const std::string& dir,
                                                  const AgentCertificateSpec& agent,
                                                  int validity_days = 825);

}  // namespace vipu::server

#endif  // VIPU_SERVER_SECURITY_TLS_INIT_H_
