// Connection: the CLIs' channel to vipu-server, with TLS, deadline, auth metadata, one-line errors.
#include "cli/common/connection.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "cli/common/credentials.h"
#include "wire/status.h"

namespace vipu::cli {

Connection::Connection(ClientConfig config) : config_(std::move(config)) {
  auto credentials = ChannelCredentials(config_);
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
  RETURN_IF_ERROR(init_status_);
  grpc::ClientContext context;
  for (const auto& [key, value] : extra_metadata_) context.AddMetadata(key, value);
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(config_.timeout_seconds));
  AddCallCredentials(config_, &context);
  grpc::Status status = rpc(&context);
  if (status.ok()) return absl::OkStatus();

  // One line, whatever the transport put in the message.
  std::string message = absl::StrReplaceAll(status.error_message(), {{"\n", "; "}});
  const absl::StatusCode code = wire::FromGrpcCode(status.error_code());
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
