// Keeps the server told about this process's machines: registers each one
// with vipuagent.AgentRegistry, then heartbeats with the partitions it holds.
// An unreachable server is retried with capped exponential backoff; a server
// that does not know a machine (it restarted with a fresh database) gets the
// registration again. One background thread serves every machine.
//
// The server may have several members (a highly available vipu-server). All
// calls go to one member at a time, the first listed at the start. When a
// call to it fails with UNAVAILABLE (down, or a standby without a leader) or
// DEADLINE_EXCEEDED (no answer), the client moves to the next member, in
// list order and wrapping around, and registers every machine again there,
// at once; once every member in turn has failed without an answer between,
// moves come with the usual backoff. Registering and heartbeating twice is
// harmless, so no call is held back for fear of a replay. With one member
// nothing moves.
//
// Borrows the machines, which must outlive it; owns the server stubs and the
// thread. Thread-safe: Stop() and the accessors may be called from any
// thread; Start() is called once, by the owner.
#ifndef VIPU_AGENTS_REGISTRATION_H_
#define VIPU_AGENTS_REGISTRATION_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "agents/simulated_machine.h"
#include "base/mutex.h"
#include "grpcpp/security/credentials.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::agents {

// Counts since Start(), for logs, metrics and tests.
struct RegistrationStats {
  uint64_t registrations = 0;  // Register calls the server accepted
  uint64_t heartbeats = 0;     // Heartbeat calls the server accepted
  uint64_t failures = 0;       // calls that did not reach or were refused by the server
  uint64_t failovers = 0;      // moves to the next server member
};

struct RegistrationOptions {
  // The members of vipu-server, in order: "host:port" targets (or one
  // "unix:path"), as ParseServerAddresses (agent_options.h) gives them.
  std::vector<std::string> server_addresses;
  std::string advertised_host;  // where the server reaches the machines
  // Mutual TLS with the agent's certificate (tls::MutualTlsChannelCredentials);
  // null: plaintext.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  std::chrono::milliseconds min_backoff{50};
  std::chrono::milliseconds max_backoff{1000};
  std::chrono::milliseconds rpc_timeout{2000};
  // Used when the server's RegisterReply says 0.
  std::chrono::milliseconds default_heartbeat_interval{1000};
  // Register and heartbeat the machines that are due together, in
  // RegisterBatch/HeartbeatBatch calls of at most `batch_size` machines
  // (1..1024, the server's limit), instead of one call per machine.
  bool batched = false;
  size_t batch_size = 512;
};

class RegistrationClient {
 public:
  // `machines` must outlive the client; each advertises its ipuof_port()
  // (the port its Agent service listens on), so set those before Start().
  RegistrationClient(RegistrationOptions options, std::vector<SimulatedMachine*> machines);
  ~RegistrationClient();  // Stop()s.

  RegistrationClient(const RegistrationClient&) = delete;
  RegistrationClient& operator=(const RegistrationClient&) = delete;

  void Start();
  // Cancels an RPC in flight and joins the thread. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // True while the server has acknowledged the machine's registration and no
  // heartbeat since said otherwise.
  bool RegisteredForTesting(std::string_view agent_id) const;
  RegistrationStats StatsForTesting() const;
  // True while the thread waits for the next machine to be due (its
  // heartbeat interval or a backoff), the wait Stop() ends. Set with mu_
  // held, which the thread releases only inside that wait: whoever reads
  // true under mu_ knows the thread is waiting.
  bool IdleForTesting() const ABSL_LOCKS_EXCLUDED(mu_);
  // The member the calls go to now.
  std::string ServerForTesting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    SimulatedMachine* machine = nullptr;
    // Written under mu_ by the thread only, which reads it without the lock;
    // not annotated: an annotation here cannot name RegistrationClient::mu_.
    bool registered = false;
    Clock::time_point due;
    std::chrono::milliseconds backoff{0};
    std::chrono::milliseconds interval{0};
    bool failing = false;     // to log the first failure of a streak only
    uint64_t heartbeats = 0;  // numbers each heartbeat (HeartbeatRequest.sequence); thread only
  };

  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // Batched mode: one pass over the due slots.
  void StepBatched(Clock::time_point now);
  void RegisterBatch(const std::vector<Slot*>& batch);
  void HeartbeatBatch(const std::vector<Slot*>& batch);
  // Logs once for the batch, then backs every slot off.
  void RetryBatchLater(const std::vector<Slot*>& batch, std::string_view what,
                       const grpc::Status& status);
  void Step(Slot& slot);
  void Register(Slot& slot);
  void Heartbeat(Slot& slot);
  void RetryLater(Slot& slot, std::string_view what, const grpc::Status& status);
  void SetRegistered(Slot& slot, bool registered) ABSL_LOCKS_EXCLUDED(mu_);
  // After a failed call: moves to the next member when the failure says the
  // current one is down or silent and there is another, and then marks every
  // machine for registering again. True when the caller should retry at
  // once rather than back off (not every member has failed in a row yet).
  bool FailOver(const grpc::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  // The member the calls go to now, for logs.
  std::string CurrentServer() const ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `call(stub, context)` on the current member's stub with a deadline,
  // cancellable by Stop(). CANCELLED when stopping.
  template <typename Call>
  grpc::Status Invoke(Call&& call) ABSL_LOCKS_EXCLUDED(mu_);

  const RegistrationOptions options_;
  std::vector<std::unique_ptr<vipuagent::AgentRegistry::Stub>> stubs_;  // one per member
  std::vector<Slot> slots_;
  // Members that failed one after another with no answer between; thread only.
  size_t misses_in_row_ = 0;
  // The wait the last refusal since a member last answered asked for
  // (`retry-after-ms`: a standby with no leader to forward to yet); none
  // without one. A member that is down between two such refusals (the
  // leader that has just gone) leaves it: its failures must not grow the
  // backoff past the moment the next leader serves. Thread only.
  std::optional<std::chrono::milliseconds> retry_after_;
  // When a failed call goes again: the wait the server asked for, else
  // `backoff`, which then grows. Thread only.
  Clock::time_point RetryAt(std::chrono::milliseconds* backoff) const;

  mutable vipu::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  RegistrationStats stats_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* in_flight_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool idle_ ABSL_GUARDED_BY(mu_) = false;
  size_t current_ ABSL_GUARDED_BY(mu_) = 0;  // index into stubs_
  std::thread thread_;
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_REGISTRATION_H_
