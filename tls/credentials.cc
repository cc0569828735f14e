// Mutual-TLS server and channel credentials that follow LiveCertificates.
#include "tls/credentials.h"

#include <grpcpp/security/tls_credentials_options.h>

namespace vipu::tls {

std::shared_ptr<grpc::ServerCredentials> MutualTlsServerCredentials(const LiveCertificates& live) {
  grpc::experimental::TlsServerCredentialsOptions options(live.provider());
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  return grpc::experimental::TlsServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> MutualTlsChannelCredentials(
    const LiveCertificates& live) {
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(live.provider());
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  return grpc::experimental::TlsCredentials(options);
}

}  // namespace vipu::tls
