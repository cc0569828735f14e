// MemberChannels: a channel per server member and the failover rule every client's calls follow.
#include "wire/member_channels.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "wire/retry_after.h"

namespace vipu::wire {
namespace {

using Clock = std::chrono::system_clock;

// The least and the most a call waits before another round, whatever a
// member asked: no busy loop, and no sleeping through the moment a member
// serves again, since a hint may be a worst case (a new leader's reconcile
// window counts down to its deadline, while it usually ends far sooner).
constexpr std::chrono::milliseconds kMinRetryAfter(10);
constexpr std::chrono::milliseconds kMaxRetryAfter(250);
// How long a round waits for a channel whose backoff it reset to start
// dialling again.
constexpr std::chrono::milliseconds kRedialWait(50);
// The least time left that another round is started with: one started
// with less would end in DEADLINE_EXCEEDED, the outcome unknown, rather
// than in the members' refusal.
constexpr std::chrono::milliseconds kRoundReserve(100);

// Waits until the channel is connected or has failed to connect, or until
// `by`; returns the state it ended in.
grpc_connectivity_state WaitConnected(grpc::Channel& channel, Clock::time_point by) {
  grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
  while (state == GRPC_CHANNEL_IDLE || state == GRPC_CHANNEL_CONNECTING) {
    if (!channel.WaitForStateChange(state, by)) break;
    state = channel.GetState(/*try_to_connect=*/true);
  }
  return state;
}

// The server's word that it refused the call before acting on it: the wait
// it asked for, within [kMinRetryAfter, kMaxRetryAfter]; none without the
// word.
std::optional<std::chrono::milliseconds> RetryAfter(const grpc::ClientContext& context) {
  const std::optional<std::chrono::milliseconds> asked = RetryAfterOf(context);
  if (!asked) return std::nullopt;
  return std::clamp(*asked, kMinRetryAfter, kMaxRetryAfter);
}

// How gRPC begins the message of a call that failed without a connection.
constexpr char kUnsentWords[] = "failed to connect to all addresses";

}  // namespace

bool FailedToConnect(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         absl::StrContains(status.error_message(), kUnsentWords);
}

MemberChannels::MemberChannels(std::vector<ServerMember> members,
                               std::shared_ptr<grpc::ChannelCredentials> credentials,
                               const grpc::ChannelArguments& args)
    : members_(std::move(members)) {
  channels_.reserve(members_.size());
  for (const ServerMember& m : members_) {
    channels_.push_back(grpc::CreateCustomChannel(m.Target(), credentials, args));
  }
}

MemberCallResult MemberChannels::Call(CallKind kind, Clock::time_point deadline,
                                      const Prepare& prepare, const Rpc& rpc) {
  MemberCallResult result;
  const Clock::time_point began = Clock::now();
  while (true) {
    const std::optional<std::chrono::milliseconds> wait =
        Round(kind, deadline, prepare, rpc, &result);
    if (!wait) break;
    const Clock::time_point again = Clock::now() + *wait;
    if (again + kRoundReserve >= deadline || again >= began + kRetryWindow) break;
    std::this_thread::sleep_until(again);
    // A member whose connection failed is dialled again next round, not
    // after gRPC's reconnect backoff (a second and more): it may be the
    // successor that has just started listening.
    // The channel leaves TRANSIENT_FAILURE once its new attempt starts;
    // until then a call would fail at once with the old attempt's error.
    for (const std::shared_ptr<grpc::Channel>& channel : channels_) {
      if (channel->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_TRANSIENT_FAILURE) {
        grpc::experimental::ChannelResetConnectionBackoff(channel.get());
        channel->WaitForStateChange(GRPC_CHANNEL_TRANSIENT_FAILURE,
                                    std::min(deadline, Clock::now() + kRedialWait));
      }
    }
  }
  // The answer of the last member reached says most (a standby's "no
  // leader" rather than a later member's "connection refused").
  const MemberAttempt* chosen = &result.attempts.back();
  for (const MemberAttempt& a : result.attempts) {
    if (a.reached) chosen = &a;
  }
  result.status = chosen->status;
  result.member = chosen->member;
  result.reached = chosen->reached;
  return result;
}

std::optional<std::chrono::milliseconds> MemberChannels::Round(CallKind kind,
                                                               Clock::time_point deadline,
                                                               const Prepare& prepare,
                                                               const Rpc& rpc,
                                                               MemberCallResult* result) {
  const size_t n = members_.size();
  const size_t start = preferred();
  std::optional<std::chrono::milliseconds> wait;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (start + k) % n;
    const bool last = k + 1 == n;
    const Clock::time_point now = Clock::now();
    if (k > 0 && now >= deadline) break;
    // A fair share of what is left, so that a member that swallows
    // connection attempts cannot spend the whole deadline.
    const Clock::time_point connect_by =
        last || now >= deadline ? deadline : now + (deadline - now) / static_cast<int>(n - k);
    grpc::Channel& channel = *channels_[i];
    const grpc_connectivity_state state = WaitConnected(channel, connect_by);
    MemberAttempt attempt;
    attempt.member = i;
    if (!last && state != GRPC_CHANNEL_READY && state != GRPC_CHANNEL_TRANSIENT_FAILURE) {
      attempt.status = grpc::Status(
          grpc::StatusCode::UNAVAILABLE,
          absl::StrCat(
              "not connected within ",
              std::chrono::duration_cast<std::chrono::milliseconds>(connect_by - now).count(),
              " ms"));
      result->attempts.push_back(std::move(attempt));
      continue;
    }
    // A channel that is not READY fails the call at once, unsent (gRPC's
    // default, not wait-for-ready); one that connects meanwhile is READY
    // afterwards, and the call counts as sent.
    grpc::ClientContext context;
    context.set_deadline(deadline);
    if (prepare) prepare(&context);
    attempt.status = rpc(i, &context);
    // gRPC's words for a call that failed because no connection was there
    // to send it on; the channel may be READY by now all the same (a new
    // attempt succeeded meanwhile), which would otherwise count it as sent.
    attempt.reached = !FailedToConnect(attempt.status) &&
                      (state == GRPC_CHANNEL_READY ||
                       channel.GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY);
    const grpc::StatusCode code = attempt.status.error_code();
    const bool reached = attempt.reached;
    result->attempts.push_back(attempt);
    const std::optional<std::chrono::milliseconds> asked = RetryAfter(context);
    if (code == grpc::StatusCode::UNAVAILABLE &&
        (!reached || kind == CallKind::kReadOnly || asked.has_value())) {
      if (asked && (!wait || *asked < *wait)) wait = asked;
      continue;
    }
    if (code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED) {
      // Sent, outcome unknown: not replayed. But the next call starts with
      // the next member, so that a stalled one does not hold every call
      // (unless another call has found a member that answers meanwhile).
      size_t expected = i;
      preferred_.compare_exchange_strong(expected, (i + 1) % n, std::memory_order_relaxed);
      return std::nullopt;
    }
    preferred_.store(i, std::memory_order_relaxed);
    return std::nullopt;
  }
  return wait;
}

}  // namespace vipu::wire
