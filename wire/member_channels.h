// One gRPC channel per member of a highly available vipu-server, and the
// failover every client of the server shares (the CLIs, poprun, the IPUoF
// client and gc-info; the Slurm plugin runs `vipu`).
//
// A call goes first to the preferred member: the one that last answered in
// this process, else the first listed. When that member cannot take it, the
// call moves on to the next member in list order, wrapping around, each
// member tried at most once per round, all within the call's one deadline.
//
// When a call moves on (the rule, and why it is safe):
//  - The member is not connected: it did not become READY within its share
//    of the time left (the time left divided by the members left to try; the
//    last member gets all of it), or its connection failed (the call then
//    fails fast, UNAVAILABLE, without being sent). Nothing reached the
//    member, so trying another is always safe, whatever the call.
//  - The call was sent and the member answered UNAVAILABLE (a standby
//    without a leader, a member shutting down, an agent behind it that is
//    down):
//      * a read-only call (CallKind::kReadOnly) moves on: replaying a read
//        changes nothing;
//      * a mutating call (CallKind::kMutating) moves on only when the answer
//        carries `retry-after-ms` (wire/metadata_keys.h), the server's word
//        that it refused the call before acting on it (not ready, or a
//        standby that has no leader to forward to). Otherwise the member may
//        have acted, and replaying it elsewhere could act twice: the error is
//        returned.
// A round in which every member either was not reached or refused the call
// before acting, and at least one refused it so (`retry-after-ms`: it is up
// and asks to be tried again), is run again after the least wait those
// members asked for, from the preferred member, with the reconnect backoff
// of the channels that failed to connect reset, as long as the call's
// deadline and kRetryWindow from its start allow: the moments of a change
// of leader, when a standby has nobody to forward to. Without such a
// refusal nothing is up to ask again, and the call ends with its round.
//  - DEADLINE_EXCEEDED never moves on: the one deadline is spent, and for a
//    mutating call that was sent the outcome is unknown, so it is not
//    replayed.
// A member that let a call's deadline pass, or whose answer was lost, stops
// being the preferred one: the next call starts with the member after it,
// so that a stalled member (a paused process, a cut network) does not hold
// every later call of a long-lived client.
// Any other answer, success or refusal, is the member's answer: the call
// ends there, and that member becomes the preferred one.
//
// Owns the channels. Thread-safe: Call may run on several threads at once
// (the preferred member is an atomic; each call dials through the shared
// channels with its own contexts).
#ifndef VIPU_WIRE_MEMBER_CHANNELS_H_
#define VIPU_WIRE_MEMBER_CHANNELS_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "wire/server_members.h"

namespace vipu::wire {

// Whether a call may be replayed on another member after it was sent.
enum class CallKind {
  kReadOnly,  // changes nothing on the server (List*, Get*, version)
  kMutating,  // creates, removes, resets, updates ...
};

// Whether `status` is gRPC's own refusal of a call that no connection was
// there to send (UNAVAILABLE, "failed to connect to all addresses"): the
// call never left this process, whatever state its channel is in by now.
bool FailedToConnect(const grpc::Status& status);

// One member tried by a call, in the order tried.
struct MemberAttempt {
  size_t member = 0;     // index into the member list
  bool reached = false;  // the call was sent to the member (its channel was READY)
  grpc::Status status;   // what the attempt ended with
};

// What became of one call.
struct MemberCallResult {
  // The answer (OK included) of the member that answered, else the last
  // attempt's failure.
  grpc::Status status;
  // The member whose answer `status` is; with no answer, the last one tried.
  size_t member = 0;
  // False when no member was reached: none connected within the deadline.
  bool reached = false;
  std::vector<MemberAttempt> attempts;
};

class MemberChannels {
 public:
  // One channel per member (dialled lazily, on a call), all with
  // `credentials` and `args`. `members` must not be empty.
  MemberChannels(std::vector<ServerMember> members,
                 std::shared_ptr<grpc::ChannelCredentials> credentials,
                 const grpc::ChannelArguments& args = grpc::ChannelArguments());

  MemberChannels(const MemberChannels&) = delete;
  MemberChannels& operator=(const MemberChannels&) = delete;

  size_t size() const { return members_.size(); }
  const ServerMember& member(size_t i) const { return members_[i]; }
  const std::vector<ServerMember>& members() const { return members_; }
  const std::shared_ptr<grpc::Channel>& channel(size_t i) const { return channels_[i]; }
  // The member the next call goes to first.
  size_t preferred() const { return preferred_.load(std::memory_order_relaxed); }

  // Sets up a fresh context (metadata, credentials); called once per attempt.
  using Prepare = std::function<void(grpc::ClientContext*)>;
  // Sends the call to member `member` over `channel(member)` with `context`.
  using Rpc = std::function<grpc::Status(size_t member, grpc::ClientContext* context)>;

  // Runs the call under the rule above, every attempt with `deadline`. Never
  // fails itself: what happened is in the result.
  MemberCallResult Call(CallKind kind, std::chrono::system_clock::time_point deadline,
                        const Prepare& prepare, const Rpc& rpc);

  // How long after its start a call may begin another round.
  static constexpr std::chrono::seconds kRetryWindow{3};

 private:
  // One round over the members, its attempts added to `result`: the wait
  // before another, when the round ended as described above; else none.
  std::optional<std::chrono::milliseconds> Round(CallKind kind,
                                                 std::chrono::system_clock::time_point deadline,
                                                 const Prepare& prepare, const Rpc& rpc,
                                                 MemberCallResult* result);

  const std::vector<ServerMember> members_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::atomic<size_t> preferred_{0};
};

}  // namespace vipu::wire

#endif  // VIPU_WIRE_MEMBER_CHANNELS_H_
