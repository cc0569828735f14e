// Channel (TLS) and per-call (user id, access key) credentials from a client's configuration.
#include "cli/common/credentials.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "wire/metadata_keys.h"

namespace vipu::cli {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(what, ": cannot read '", path, "'"));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    const ClientConfig& config) {
  if (!config.tls()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  ASSIGN_OR_RETURN(std::string ca, ReadPem(config.tls_ca, "TLS CA file"));
  options.pem_root_certs = std::move(ca);
  if (!config.tls_cert.empty()) {
    ASSIGN_OR_RETURN(std::string cert, ReadPem(config.tls_cert, "TLS certificate file"));
    ASSIGN_OR_RETURN(std::string key, ReadPem(config.tls_key, "TLS key file"));
    options.pem_cert_chain = std::move(cert);
    options.pem_private_key = std::move(key);
  }
  return grpc::SslCredentials(options);
}

void AddCallCredentials(const ClientConfig& config, grpc::ClientContext* context) {
  if (!config.user_id.empty()) {
    context->AddMetadata(wire::kUserIdMetadata, config.user_id);
  }
  if (!config.access_key.empty()) {
    context->AddMetadata(wire::kAccessKeyMetadata, config.access_key);
  }
}

}  // namespace vipu::cli
