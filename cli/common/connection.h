// One channel to vipu-server and the per-call plumbing every command shares:
// a deadline of --api-timeout per call, the authentication metadata, and the
// translation of a failed call into the one-line message users see.
//
// Owns the channel and a stub per service. Call only reads the object, so
// calls may run on several threads at once; AddCallMetadata must not run
// beside them.
#ifndef VIPU_CLI_COMMON_CONNECTION_H_
#define VIPU_CLI_COMMON_CONNECTION_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "cli/common/client_config.h"
#include "version.grpc.pb.h"
#include "vipu_admin.grpc.pb.h"
#include "vipuuser.grpc.pb.h"

namespace vipu::cli {

class Connection {
 public:
  explicit Connection(ClientConfig config);

  const ClientConfig& config() const { return config_; }

  // Metadata added to every following call (e.g. vipu-share on create).
  void AddCallMetadata(const std::string& key, const std::string& value) {
    extra_metadata_.emplace_back(key, value);
  }

  virmgrpc::UserService::Stub& user() { return *user_; }
  virmgrpc::VersionService::Stub& version() { return *version_; }
  vipuadmin::AdminService::Stub& admin() { return *admin_; }
  vipuadmin::AllocationService::Stub& allocations() { return *allocations_; }
  // For services without a stub here (UserAdminService, ...).
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }

  // Runs one RPC with a fresh context (deadline, metadata). A failure is
  // returned with the gRPC code and a message fit to follow "failure: ":
  // the server's own message, or "cannot reach vipu-server at H:P: ..." when
  // the server was not reached at all.
  absl::Status Call(const std::function<grpc::Status(grpc::ClientContext*)>& rpc);

 private:
  ClientConfig config_;
  std::vector<std::pair<std::string, std::string>> extra_metadata_;
  // Set when the TLS files could not be read; every Call returns it.
  absl::Status init_status_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<virmgrpc::UserService::Stub> user_;
  std::unique_ptr<virmgrpc::VersionService::Stub> version_;
  std::unique_ptr<vipuadmin::AdminService::Stub> admin_;
  std::unique_ptr<vipuadmin::AllocationService::Stub> allocations_;
};

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_CONNECTION_H_
