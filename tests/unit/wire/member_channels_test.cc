// MemberChannels over real loopback gRPC servers: which calls move on, and which are not replayed.
#include "wire/member_channels.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon_process.h"
#include "version.grpc.pb.h"
#include "wire/metadata_keys.h"

namespace vipu::wire {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::system_clock;

// How a fake member answers GetVersion.
enum class Behaviour {
  kAnswer,              // OK, version = its name
  kUnavailable,         // UNAVAILABLE, as a member that may have acted
  kRefusedUnavailable,  // UNAVAILABLE with retry-after-ms: refused before acting
  kNotFound,            // a refusal that is the member's answer
  kSilent,              // holds the call until the client gives up
};

class FakeMember final : public virmgrpc::VersionService::Service {
 public:
  // With `refusals`, the first that many calls are refused before acting
  // (kRefusedUnavailable) and the rest get `behaviour`'s answer.
  // On `port`, or a port of the kernel's choosing.
  FakeMember(std::string name, Behaviour behaviour, int refusals = 0, int port = 0)
      : name_(std::move(name)), behaviour_(behaviour), refusals_(refusals) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
  }
  ~FakeMember() override {
    release_.Notify();
    server_->Shutdown(Clock::now());
  }

  grpc::Status GetVersion(grpc::ServerContext* context, const virmgrpc::VersionRequest*,
                          virmgrpc::VersionReply* reply) override {
    const int call = ++calls_;
    const Behaviour behaviour =
        refusals_ == 0 ? behaviour_
                       : (call <= refusals_ ? Behaviour::kRefusedUnavailable : behaviour_);
    switch (behaviour) {
      case Behaviour::kAnswer:
        reply->set_version(name_);
        return grpc::Status::OK;
      case Behaviour::kUnavailable:
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, name_ + ": agent down");
      case Behaviour::kRefusedUnavailable:
        context->AddTrailingMetadata(kRetryAfterMetadata, "100");
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, name_ + ": no leader");
      case Behaviour::kNotFound:
        return grpc::Status(grpc::StatusCode::NOT_FOUND, name_ + ": not found");
      case Behaviour::kSilent:
        release_.WaitForNotificationWithTimeout(absl::Seconds(30));
        return grpc::Status::OK;
    }
    return grpc::Status::OK;
  }

  ServerMember member() const {
    return ServerMember{"127.0.0.1", static_cast<uint32_t>(port_), true};
  }
  int calls() const { return calls_.load(); }

 private:
  const std::string name_;
  const Behaviour behaviour_;
  const int refusals_;
  int port_ = 0;
  std::atomic<int> calls_{0};
  absl::Notification release_;
  std::unique_ptr<grpc::Server> server_;
};

// A port nothing listens on: connections are refused at once.
ServerMember DeadMember() {
  return ServerMember{"127.0.0.1", static_cast<uint32_t>(vipu::testing::FreePort()), true};
}

// A socket that accepts TCP connections (the kernel's backlog) but never
// speaks HTTP/2: a member that swallows connection attempts.
class SilentSocket {
 public:
  SilentSocket() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentSocket() { close(fd_); }
  ServerMember member() const { return ServerMember{"127.0.0.1", port_, true}; }

 private:
  int fd_;
  uint32_t port_ = 0;
};

struct Outcome {
  MemberCallResult result;
  std::string version;
};

Outcome Version(MemberChannels& channels, CallKind kind,
                std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  Outcome out;
  virmgrpc::VersionReply reply;
  out.result = channels.Call(kind, Clock::now() + timeout, nullptr,
                             [&](size_t member, grpc::ClientContext* context) {
                               return virmgrpc::VersionService::NewStub(channels.channel(member))
                                   ->GetVersion(context, virmgrpc::VersionRequest(), &reply);
                             });
  out.version = reply.version();
  return out;
}

std::unique_ptr<MemberChannels> Channels(const std::vector<ServerMember>& members) {
  return std::make_unique<MemberChannels>(members, grpc::InsecureChannelCredentials());
}

TEST(MemberChannelsTest, ADeadMemberIsSkippedAndTheAnsweringOneRemembered) {
  FakeMember live("live", Behaviour::kAnswer);
  auto channels = Channels({DeadMember(), live.member()});
  for (CallKind kind : {CallKind::kReadOnly, CallKind::kMutating}) {
    Outcome first = Version(*channels, kind);
    EXPECT_TRUE(first.result.status.ok()) << first.result.status.error_message();
    EXPECT_EQ(first.version, "live");
    EXPECT_EQ(first.result.member, 1u);
    EXPECT_TRUE(first.result.reached);
  }
  EXPECT_EQ(channels->preferred(), 1u);
  // The next call goes to the member that answered, and only to it.
  Outcome next = Version(*channels, CallKind::kReadOnly);
  ASSERT_EQ(next.result.attempts.size(), 1u);
  EXPECT_EQ(next.result.attempts[0].member, 1u);
  EXPECT_EQ(live.calls(), 3);
}

TEST(MemberChannelsTest, NoMemberReachedNamesEveryAttempt) {
  auto channels = Channels({DeadMember(), DeadMember()});
  Outcome out = Version(*channels, CallKind::kMutating);
  EXPECT_EQ(out.result.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_FALSE(out.result.reached);
  // Nobody asked to be tried again: one round.
  ASSERT_EQ(out.result.attempts.size(), 2u);
  EXPECT_EQ(out.result.attempts[0].member, 0u);
  EXPECT_EQ(out.result.attempts[1].member, 1u);
  EXPECT_EQ(channels->preferred(), 0u);
}

TEST(MemberChannelsTest, AMemberThatStartsListeningBetweenRoundsIsReached) {
  // The first member does not listen yet, as while a new leader takes its
  // addresses over; the second, a standby with nobody to forward to, asks
  // to be tried again. The first starts listening once the first round is
  // over, well within gRPC's reconnect backoff (a second).
  const int port = vipu::testing::FreePort();
  const ServerMember first{"127.0.0.1", static_cast<uint32_t>(port), true};
  FakeMember standby("standby", Behaviour::kRefusedUnavailable);
  auto channels = Channels({first, standby.member()});
  std::unique_ptr<FakeMember> leader;
  int attempts = 0;
  virmgrpc::VersionReply reply;
  MemberCallResult result = channels->Call(
      CallKind::kMutating, Clock::now() + std::chrono::seconds(10), nullptr,
      [&](size_t member, grpc::ClientContext* context) {
        grpc::Status status = virmgrpc::VersionService::NewStub(channels->channel(member))
                                  ->GetVersion(context, virmgrpc::VersionRequest(), &reply);
        if (++attempts == 2) {
          leader = std::make_unique<FakeMember>("leader", Behaviour::kAnswer, 0, port);
        }
        return status;
      });
  EXPECT_TRUE(result.status.ok()) << result.status.error_message();
  EXPECT_EQ(reply.version(), "leader");
  EXPECT_EQ(result.member, 0u);
  // A round or two after it listens (each 100 ms apart, as the standby
  // asks); without the backoff reset it would be ten, a second's worth.
  EXPECT_GE(result.attempts.size(), 3u);
  EXPECT_LE(result.attempts.size(), 7u);
}

TEST(MemberChannelsTest, ReadsMoveOnFromAnUnavailableMember) {
  FakeMember standby("standby", Behaviour::kUnavailable);
  FakeMember leader("leader", Behaviour::kAnswer);
  auto channels = Channels({standby.member(), leader.member()});
  Outcome out = Version(*channels, CallKind::kReadOnly);
  EXPECT_TRUE(out.result.status.ok());
  EXPECT_EQ(out.version, "leader");
  EXPECT_EQ(standby.calls(), 1);
  EXPECT_TRUE(out.result.attempts[0].reached);
}

TEST(MemberChannelsTest, AMutatingCallIsNotReplayedAfterAnUnavailableThatMayHaveActed) {
  FakeMember first("first", Behaviour::kUnavailable);
  FakeMember second("second", Behaviour::kAnswer);
  auto channels = Channels({first.member(), second.member()});
  Outcome out = Version(*channels, CallKind::kMutating);
  EXPECT_EQ(out.result.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(out.result.status.error_message(), "first: agent down");
  EXPECT_TRUE(out.result.reached);
  EXPECT_EQ(second.calls(), 0);
}

TEST(MemberChannelsTest, AMutatingCallMovesOnWhenTheMemberRefusedBeforeActing) {
  FakeMember standby("standby", Behaviour::kRefusedUnavailable);
  FakeMember leader("leader", Behaviour::kAnswer);
  auto channels = Channels({standby.member(), leader.member()});
  Outcome out = Version(*channels, CallKind::kMutating);
  EXPECT_TRUE(out.result.status.ok()) << out.result.status.error_message();
  EXPECT_EQ(out.version, "leader");
  EXPECT_EQ(channels->preferred(), 1u);
}

TEST(MemberChannelsTest, EachMemberIsTriedOncePerRound) {
  FakeMember a("a", Behaviour::kUnavailable);
  FakeMember b("b", Behaviour::kUnavailable);
  auto channels = Channels({a.member(), DeadMember(), b.member()});
  Outcome out = Version(*channels, CallKind::kReadOnly);
  EXPECT_EQ(out.result.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  // Nobody asked to be tried again: one round.
  EXPECT_EQ(out.result.attempts.size(), 3u);
  EXPECT_EQ(a.calls(), 1);
  EXPECT_EQ(b.calls(), 1);
  // The answer of the last member reached, not the dead one's.
  EXPECT_EQ(out.result.status.error_message(), "b: agent down");
  EXPECT_EQ(out.result.member, 2u);
}

TEST(MemberChannelsTest, MembersThatRefusedBeforeActingAreTriedAgainAfterTheWaitTheyAsked) {
  // Refuses twice saying nothing was done (retry-after-ms 100), as a leader
  // handing over does, then answers; the other member is not listening.
  FakeMember leader("leader", Behaviour::kAnswer, /*refusals=*/2);
  auto channels = Channels({leader.member(), DeadMember()});
  const Clock::time_point began = Clock::now();
  Outcome out = Version(*channels, CallKind::kMutating);
  EXPECT_TRUE(out.result.status.ok()) << out.result.status.error_message();
  EXPECT_EQ(out.version, "leader");
  EXPECT_EQ(leader.calls(), 3);
  // Three rounds of two members, the last ending at the answer.
  EXPECT_EQ(out.result.attempts.size(), 5u);
  EXPECT_GE(Clock::now() - began, std::chrono::milliseconds(200));
}

TEST(MemberChannelsTest, RoundsEndAtTheRetryWindowOrTheDeadline) {
  FakeMember a("a", Behaviour::kRefusedUnavailable);
  FakeMember b("b", Behaviour::kRefusedUnavailable);
  auto channels = Channels({a.member(), DeadMember(), b.member()});
  // The deadline first: the rounds stop before it, with the refusal.
  Outcome out = Version(*channels, CallKind::kMutating, std::chrono::milliseconds(450));
  EXPECT_EQ(out.result.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(out.result.status.error_message(), "b: no leader");
  EXPECT_GE(a.calls(), 2);
  EXPECT_LE(a.calls(), 5);
  EXPECT_EQ(a.calls(), b.calls());
  EXPECT_EQ(out.result.attempts.size(), 3u * static_cast<size_t>(a.calls()));
  // The window next: a long deadline, yet no round starts 3 s after the
  // call began.
  const Clock::time_point began = Clock::now();
  out = Version(*channels, CallKind::kMutating, std::chrono::seconds(20));
  EXPECT_EQ(out.result.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_LT(Clock::now() - began, MemberChannels::kRetryWindow + std::chrono::seconds(2));
  EXPECT_GE(Clock::now() - began, MemberChannels::kRetryWindow - std::chrono::milliseconds(200));
}

TEST(MemberChannelsTest, ARefusalIsTheMembersAnswer) {
  FakeMember a("a", Behaviour::kNotFound);
  FakeMember b("b", Behaviour::kAnswer);
  auto channels = Channels({a.member(), b.member()});
  Outcome out = Version(*channels, CallKind::kReadOnly);
  EXPECT_EQ(out.result.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(b.calls(), 0);
  EXPECT_EQ(channels->preferred(), 0u);
}

TEST(MemberChannelsTest, ADeadlineExceededIsNotReplayedAndTheNextCallStartsElsewhere) {
  for (CallKind kind : {CallKind::kMutating, CallKind::kReadOnly}) {
    FakeMember slow("slow", Behaviour::kSilent);
    FakeMember fast("fast", Behaviour::kAnswer);
    auto channels = Channels({slow.member(), fast.member()});
    // Connected beforehand, so that the short deadline is all the call's.
    ASSERT_TRUE(channels->channel(0)->WaitForConnected(Clock::now() + std::chrono::seconds(10)));
    Outcome out = Version(*channels, kind, std::chrono::milliseconds(300));
    EXPECT_EQ(out.result.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    EXPECT_TRUE(out.result.reached);
    EXPECT_EQ(out.result.attempts.size(), 1u);
    EXPECT_EQ(fast.calls(), 0);
    // The stalled member no longer holds the calls that follow.
    EXPECT_EQ(channels->preferred(), 1u);
    Outcome next = Version(*channels, kind);
    EXPECT_TRUE(next.result.status.ok()) << next.result.status.error_message();
    EXPECT_EQ(next.version, "fast");
    EXPECT_EQ(next.result.attempts.size(), 1u);
  }
}

TEST(MemberChannelsTest, AMemberThatDoesNotConnectGetsOnlyItsShareOfTheDeadline) {
  SilentSocket silent;
  FakeMember live("live", Behaviour::kAnswer);
  auto channels = Channels({silent.member(), live.member()});
  Outcome out = Version(*channels, CallKind::kMutating, std::chrono::seconds(8));
  EXPECT_TRUE(out.result.status.ok()) << out.result.status.error_message();
  EXPECT_EQ(out.version, "live");
  ASSERT_EQ(out.result.attempts.size(), 2u);
  EXPECT_FALSE(out.result.attempts[0].reached);
  // The first of two members was given at most half of the deadline, as the
  // attempt says; the rest was the second's.
  const std::string& said = out.result.attempts[0].status.error_message();
  ASSERT_THAT(said, HasSubstr("not connected within "));
  const int64_t share_ms = std::stoll(said.substr(said.find("within ") + 7));
  EXPECT_GT(share_ms, 0);
  EXPECT_LE(share_ms, 4000);
}

}  // namespace
}  // namespace vipu::wire
