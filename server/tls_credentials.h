// Server credentials of the secure mode: mutual TLS with the files that
// `--tls-init` wrote under DIR/server; a client must present a certificate
// signed by the same CA (GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY).
#ifndef VIPU_SERVER_TLS_CREDENTIALS_H_
#define VIPU_SERVER_TLS_CREDENTIALS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace vipu::server {

// FAILED_PRECONDITION naming the missing file and how to create it.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> LoadServerTlsCredentials(
    const std::string& tls_dir);

}  // namespace vipu::server

#endif  // VIPU_SERVER_TLS_CREDENTIALS_H_
