// Who is on the other end of a mutual-TLS call, from the subject alternative
// names of its certificate that gRPC puts in the call's AuthContext. Common
// names are not identities here: the CLI certificate's CN "vipu-client" is a
// valid agent id. Certificates of the pod (docs/security.md):
//   vipu-server   SAN URI urn:vipu:server (kServerCertificateUri)
//   agents        SAN DNS:<agent-id> for every agent id it serves
//   CLI clients   neither
// Agent ids cannot hold ':' so no agent certificate passes for the server.
//
// Thread safety: free functions without state.
#ifndef VIPU_TLS_PEER_IDENTITY_H_
#define VIPU_TLS_PEER_IDENTITY_H_

#include <grpcpp/security/auth_context.h>

#include <string>
#include <vector>

namespace vipu::tls {

inline constexpr char kServerCertificateUri[] = "urn:vipu:server";

// Every subject alternative name (DNS, URI and IP). Empty for a plaintext
// call, a certificate without SANs or a null context.
std::vector<std::string> PeerNames(const grpc::AuthContext* context);

// True when `name` is among PeerNames(context).
bool PeerHasName(const grpc::AuthContext* context, const std::string& name);

// How the peer is named in refusals: its SANs joined by ',', else
// "CN=<common name>", else "no certificate".
std::string DescribePeer(const grpc::AuthContext* context);

}  // namespace vipu::tls

#endif  // VIPU_TLS_PEER_IDENTITY_H_
