// Connection: the CLIs' channel to vipu-server, with TLS, deadline, auth metadata, one-line errors.
#include "cli/connection.h"

#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace vipu::cli {

namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* flag) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Mutual TLS when a CA is configured (vipu-server --secure), else plaintext.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> Credentials(const ClientConfig& c) {
  if (!c.tls()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  auto ca = ReadFile(c.tls_ca, "--api-tls-ca");
  if (!ca.ok()) return ca.status();
  options.pem_root_certs = *ca;
  if (!c.tls_cert.empty()) {
    auto cert = ReadFile(c.tls_cert, "--api-tls-cert");
    if (!cert.ok()) return cert.status();
    auto key = ReadFile(c.tls_key, "--api-tls-key");
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *cert;
    options.pem_private_key = *key;
  }
  return grpc::SslCredentials(options);
}

}  // namespace

Connection::Connection(ClientConfig config) : config_(std::move(config)) {
  auto credentials = Credentials(config_);
  if (!credentials.ok()) {
    init_status_ = credentials.status();
    credentials = grpc::InsecureChannelCredentials();  // never used: Call returns init_status_
  }
  channel_ = grpc::CreateChannel(config_.Target(), *credentials);
  user_ = virmgrpc::UserService::NewStub(channel_);
  version_ = virmgrpc::VersionService::NewStub(channel_);
  admin_ = vipuadmin::AdminService::NewStub(channel_);
  allocations_ = vipuadmin::AllocationService::NewStub(channel_);
}

absl::Status Connection::Call(const std::function<grpc::Status(grpc::ClientContext*)>& rpc) {
  if (!init_status_.ok()) return init_status_;
  grpc::ClientContext context;
  for (const auto& [key, value] : extra_metadata_) context.AddMetadata(key, value);
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(config_.timeout_seconds));
  if (!config_.user_id.empty()) context.AddMetadata(kUserIdMetadata, config_.user_id);
  if (!config_.access_key.empty()) context.AddMetadata(kAccessKeyMetadata, config_.access_key);
  grpc::Status status = rpc(&context);
  if (status.ok()) return absl::OkStatus();

  // One line, whatever the transport put in the message.
  std::string message = absl::StrReplaceAll(status.error_message(), {{"\n", "; "}});
  auto code = static_cast<absl::StatusCode>(status.error_code());
  // The server itself may answer UNAVAILABLE (an agent is down); only a
  // channel that never got ready means the server was not reached.
  bool unreached = channel_->GetState(false) != GRPC_CHANNEL_READY;
  if (unreached && (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                    status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)) {
    return absl::Status(
        code, absl::StrCat("cannot reach vipu-server at ", config_.Target(), ": ", message));
  }
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::Status(code,
                        absl::StrCat("no reply from vipu-server at ", config_.Target(), " within ",
                                     config_.timeout_seconds, "s (--api-timeout): ", message));
  }
  return absl::Status(code, message);
}

}  // namespace vipu::cli
