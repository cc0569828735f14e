// LoadServerTlsCredentials: mutual-TLS server credentials from the --tls-dir files.
#include "server/tls_credentials.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace vipu::server {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& tls_dir, const std::string& name) {
  std::string path = absl::StrCat(tls_dir, "/server/", name);
  std::ifstream in(path);
  if (!in) {
    return absl::FailedPreconditionError(
        absl::StrCat("--tls-dir: cannot read ", path,
                     "; create the certificates with vipu-server --tls-init ", tls_dir));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> LoadServerTlsCredentials(
    const std::string& tls_dir) {
  auto cert = ReadPem(tls_dir, "cert.pem");
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(tls_dir, "key.pem");
  if (!key.ok()) return key.status();
  auto ca = ReadPem(tls_dir, "ca.pem");
  if (!ca.ok()) return ca.status();
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = *ca;
  options.pem_key_cert_pairs.push_back({*key, *cert});
  return grpc::SslServerCredentials(options);
}

}  // namespace vipu::server
