// gRPC credentials for mutual TLS inside a pod, built on LiveCertificates so
// that a reload reaches every listener and channel made from them.
//
// Listeners require a client certificate signed by the pod CA
// (GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY). Channels
// present the process's own certificate and verify the peer's against the
// pod CA and the target name (the host, or GRPC_SSL_TARGET_NAME_OVERRIDE_ARG
// when the caller sets it).
//
// Thread safety: free functions; the credentials may be shared by threads.
#ifndef VIPU_TLS_CREDENTIALS_H_
#define VIPU_TLS_CREDENTIALS_H_

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "tls/live_certificates.h"

namespace vipu::tls {

// `live` must outlive every server built with the result.
std::shared_ptr<grpc::ServerCredentials> MutualTlsServerCredentials(const LiveCertificates& live);

// `live` must outlive every channel built with the result.
std::shared_ptr<grpc::ChannelCredentials> MutualTlsChannelCredentials(const LiveCertificates& live);

}  // namespace vipu::tls

#endif  // VIPU_TLS_CREDENTIALS_H_
