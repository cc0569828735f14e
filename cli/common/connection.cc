// Connection: the CLIs' calls to vipu-server's members, with failover, deadline, auth, errors.
#include "cli/common/connection.h"

#include <chrono>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "cli/common/credentials.h"
#include "wire/status.h"

namespace vipu::cli {
namespace {

constexpr char kOutcomeUnknownPayload[] = "type.vipu.dev/outcome-unknown";

absl::Status MarkOutcomeUnknown(absl::Status status) {
  status.SetPayload(kOutcomeUnknownPayload, absl::Cord("1"));
  return status;
}

// Whether an UNAVAILABLE is gRPC's own word for a connection that broke
// under a call, rather than a server's answer (which says in words what is
// unavailable).
bool TransportBroke(const grpc::Status& status) {
  for (const char* text : {"Socket closed", "Connection reset", "Broken pipe", "GOAWAY",
                           "keepalive watchdog", "Stream removed"}) {
    if (absl::StrContains(status.error_message(), text)) return true;
  }
  return false;
}

// One line, whatever the transport put in the message.
std::string OneLine(const grpc::Status& status) {
  return absl::StrReplaceAll(status.error_message(), {{"\n", "; "}});
}

}  // namespace

Stubs::Stubs(const std::shared_ptr<grpc::Channel>& channel)
    : user_(virmgrpc::UserService::NewStub(channel)),
      version_(virmgrpc::VersionService::NewStub(channel)),
      admin_(vipuadmin::AdminService::NewStub(channel)),
      allocations_(vipuadmin::AllocationService::NewStub(channel)),
      user_admin_(vipuadmin::UserAdminService::NewStub(channel)) {}

Connection::Connection(ClientConfig config) : config_(std::move(config)) {
  auto credentials = ChannelCredentials(config_);
  if (!credentials.ok()) {
    init_status_ = credentials.status();
    credentials = grpc::InsecureChannelCredentials();  // never used: Call returns init_status_
  }
  absl::StatusOr<std::vector<wire::ServerMember>> members = config_.Members();
  if (!members.ok()) {
    if (init_status_.ok()) init_status_ = members.status();
    // Never dialled: Call returns init_status_.
    members = std::vector<wire::ServerMember>{{"localhost", config_.port, false}};
  }
  members_ = std::make_unique<wire::MemberChannels>(*std::move(members), *credentials);
  for (size_t i = 0; i < members_->size(); ++i) {
    stubs_.push_back(std::make_unique<Stubs>(members_->channel(i)));
  }
}

bool OutcomeUnknown(const absl::Status& status) {
  return status.GetPayload(kOutcomeUnknownPayload).has_value();
}

std::string Connection::AnsweringMember() const {
  return members_->member(members_->preferred()).Target();
}

absl::Status Connection::Call(CallKind kind, const Rpc& rpc) {
  RETURN_IF_ERROR(init_status_);
  const auto deadline =
      std::chrono::system_clock::now() + std::chrono::seconds(config_.timeout_seconds);
  wire::MemberCallResult result = members_->Call(
      kind, deadline,
      [&](grpc::ClientContext* context) {
        for (const auto& [key, value] : extra_metadata_) context->AddMetadata(key, value);
        AddCallCredentials(config_, context);
      },
      [&](size_t member, grpc::ClientContext* context) { return rpc(*stubs_[member], context); });
  const grpc::Status& status = result.status;
  if (status.ok()) return absl::OkStatus();

  const absl::StatusCode code = wire::FromGrpcCode(status.error_code());
  const std::string target = members_->member(result.member).Target();
  // A member may itself answer UNAVAILABLE (an agent is down); only a
  // call that reached no member means the server was not reached.
  if (!result.reached) {
    std::string message;
    if (result.attempts.size() == 1) {
      message = absl::StrCat(target, ": ", OneLine(status));
    } else {
      for (const wire::MemberAttempt& a : result.attempts) {
        absl::StrAppend(&message, message.empty() ? "" : "; ", members_->member(a.member).Target(),
                        ": ", OneLine(a.status));
      }
    }
    // A server with --secure closes a plaintext connection at once, which
    // gRPC reports as nothing more than a closed socket.
    const bool maybe_tls = !config_.tls() && absl::StrContains(message, "Socket closed");
    return absl::Status(
        code, absl::StrCat("cannot reach vipu-server at ", message,
                           maybe_tls ? "; a server started with --secure closes plaintext "
                                       "connections like this: give --api-tls-ca, "
                                       "--api-tls-cert and --api-tls-key"
                                     : ""));
  }
  // A change that reached the server and whose answer never came back may
  // have been made: say so, rather than let a script repeat it blindly.
  const bool change = kind == CallKind::kMutating;
  constexpr char kUnknown[] =
      ": its outcome is unknown; look (vipu list, vipu get) before repeating it";
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    const absl::Status s(
        code, absl::StrCat("no reply from vipu-server at ", target, " within ",
                           config_.timeout_seconds, "s (--api-timeout): ", OneLine(status),
                           change ? absl::StrCat("; the change was sent", kUnknown) : ""));
    return change ? MarkOutcomeUnknown(s) : s;
  }
  if (change && status.error_code() == grpc::StatusCode::UNAVAILABLE && TransportBroke(status)) {
    return MarkOutcomeUnknown(absl::Status(
        code, absl::StrCat("the connection to vipu-server at ", target,
                           " broke after the change was sent (", OneLine(status), ")", kUnknown)));
  }
  // A member that passed the change on and lost the leader's answer says so
  // in these words (server/ha/forwarder.cc).
  if (change && absl::StrContains(status.error_message(), "the outcome is unknown")) {
    return MarkOutcomeUnknown(absl::Status(code, OneLine(status)));
  }
  return absl::Status(code, OneLine(status));
}

}  // namespace vipu::cli
