// The CLIs' connection to vipu-server and the per-call plumbing every command
// shares: the server's members with failover between them
// (wire/member_channels.h: which calls move on to the next member, and when),
// a deadline of --api-timeout per call, the authentication metadata, and the
// translation of a failed call into the one-line message users see.
//
// Owns a channel and a set of stubs per member. Call may run on several
// threads at once; AddCallMetadata must not run beside it.
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
#include "wire/member_channels.h"

namespace vipu::cli {

using wire::CallKind;

// The stubs of every service the CLIs call, on one member's channel.
class Stubs {
 public:
  explicit Stubs(const std::shared_ptr<grpc::Channel>& channel);

  virmgrpc::UserService::Stub& user() { return *user_; }
  virmgrpc::VersionService::Stub& version() { return *version_; }
  vipuadmin::AdminService::Stub& admin() { return *admin_; }
  vipuadmin::AllocationService::Stub& allocations() { return *allocations_; }
  vipuadmin::UserAdminService::Stub& user_admin() { return *user_admin_; }

 private:
  std::unique_ptr<virmgrpc::UserService::Stub> user_;
  std::unique_ptr<virmgrpc::VersionService::Stub> version_;
  std::unique_ptr<vipuadmin::AdminService::Stub> admin_;
  std::unique_ptr<vipuadmin::AllocationService::Stub> allocations_;
  std::unique_ptr<vipuadmin::UserAdminService::Stub> user_admin_;
};

// Whether `status` is the failure of a change whose outcome is unknown
// (Connection::Call): the command may look whether it was made.
bool OutcomeUnknown(const absl::Status& status);

class Connection {
 public:
  // A config whose members do not parse (ResolveClientConfig refuses those)
  // makes every Call fail with INVALID_ARGUMENT.
  explicit Connection(ClientConfig config);

  const ClientConfig& config() const { return config_; }

  // Metadata added to every following call (e.g. vipu-share on create).
  void AddCallMetadata(const std::string& key, const std::string& value) {
    extra_metadata_.emplace_back(key, value);
  }

  // host:port of the member that answered last, else of the member the next
  // call goes to first (`host: 127.0.0.1:8090` in --server-version).
  std::string AnsweringMember() const;

  using Rpc = std::function<grpc::Status(Stubs& stubs, grpc::ClientContext* context)>;

  // Runs one RPC, a fresh context (deadline, metadata) per member tried,
  // failing over under the rule of wire/member_channels.h; `kind` says
  // whether it may be replayed on another member once sent. A failure is
  // returned with the gRPC code and a message fit to follow "failure: ": the
  // server's own message, "cannot reach vipu-server at H:P: ..." when no
  // member was reached (one "H:P: why" per member tried, joined with "; "),
  // or "no reply from vipu-server at H:P within Ns (--api-timeout): ...".
  // A change that was sent and whose answer was lost (no reply in time, the
  // connection broke under it, or a member that passed it on lost the
  // leader's answer) says that its outcome is unknown, and is marked so
  // that OutcomeUnknown() is true of it.
  absl::Status Call(CallKind kind, const Rpc& rpc);

 private:
  ClientConfig config_;
  std::vector<std::pair<std::string, std::string>> extra_metadata_;
  // Set when the TLS files could not be read or the members do not parse;
  // every Call returns it.
  absl::Status init_status_;
  std::unique_ptr<wire::MemberChannels> members_;
  std::vector<std::unique_ptr<Stubs>> stubs_;  // one per member
};

}  // namespace vipu::cli

#endif  // VIPU_CLI_COMMON_CONNECTION_H_
