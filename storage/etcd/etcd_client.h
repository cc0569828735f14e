// A client of etcd's v3 gRPC API for the parts a highly available
// vipu-server needs: consistent reads of a key prefix, compare-and-write
// transactions, leases and the Election service. It speaks to one member at
// a time and moves to the next of the configured endpoints when that member
// stops answering.
//
// Retries and "outcome unknown": reads (Get, RangePrefix, LeaderValue), lease
// calls, Campaign, Proclaim and Resign are safe to repeat, so a call that
// fails with UNAVAILABLE or DEADLINE_EXCEEDED is tried on the next endpoint,
// once per endpoint. A Txn is only moved to another endpoint when the
// channel to the current one could not even be connected, so the request
// provably never left this process. Once a Txn was sent, an UNAVAILABLE or
// DEADLINE_EXCEEDED answer means the outcome is unknown: etcd may or may not
// have applied it. The caller must then read back (or rely on its fence, see
// coordination/leader_election.h) before deciding what happened; the next call goes to
// the next endpoint.
//
// Ownership: the client owns its gRPC channels. Objects that use a client
// (LeaseKeeper, LeaderElection) hold a plain pointer and must be destroyed
// before it.
//
// Thread-safety: every method may be called from any thread at the same time.
#ifndef VIPU_STORAGE_ETCD_ETCD_CLIENT_H_
#define VIPU_STORAGE_ETCD_ETCD_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "storage/etcd/etcd_endpoints.h"

namespace grpc {
class Channel;
class ClientContext;
}  // namespace grpc

namespace vipu::coordination {
class LeaseKeeper;
}  // namespace vipu::coordination

namespace vipu::storage::etcd {

struct EtcdClientOptions {
  // Tried in order; at least one.
  std::vector<EtcdEndpoint> endpoints;
  // For https endpoints: the CA bundle that signs the members' certificates
  // (empty: the system's roots), and this client's certificate and key when
  // etcd asks for client certificates (both or neither). PEM files.
  std::string ca_file, cert_file, key_file;
  // The deadline of each unary call to one member (Campaign has its own).
  absl::Duration call_timeout = absl::Seconds(5);
  // Keys per Range request when RangePrefix pages through a prefix.
  int64_t range_page_size = 1000;
};

// One key as etcd stores it.
struct KeyValue {
  std::string key, value;
  // The revision that created the key (since its last deletion), the revision
  // of its last change, and the number of changes since creation.
  int64_t create_revision = 0, mod_revision = 0, version = 0;
  // The lease the key is attached to, 0 for none.
  int64_t lease = 0;
};

struct RangeResult {
  std::vector<KeyValue> kvs;  // in key order
  // The store revision every key was read at.
  int64_t revision = 0;
};

// One condition of a Txn; all must hold for the writes to happen.
struct TxnCompare {
  enum class Target { kCreateRevision, kModRevision, kVersion, kValue };
  Target target = Target::kCreateRevision;
  std::string key;
  int64_t number = 0;  // the revision or version compared against
  std::string value;   // for kValue

  // CREATE(key) == rev; rev 0 means "the key does not exist".
  static TxnCompare CreateRevision(std::string key, int64_t rev);
  // MOD(key) == rev.
  static TxnCompare ModRevision(std::string key, int64_t rev);
  // VERSION(key) == version; 0 means "the key does not exist".
  static TxnCompare Version(std::string key, int64_t version);
  // VALUE(key) == value.
  static TxnCompare Value(std::string key, std::string value);
};

// One write of a Txn.
struct TxnOp {
  enum class Kind { kPut, kDelete, kDeletePrefix };
  Kind kind = Kind::kPut;
  std::string key;  // the key, or the prefix for kDeletePrefix
  std::string value;
  int64_t lease = 0;

  // Sets key to value, attached to `lease` when it is not 0.
  static TxnOp Put(std::string key, std::string value, int64_t lease = 0);
  // Deletes the key (nothing when it does not exist).
  static TxnOp Delete(std::string key);
  // Deletes every key that starts with `prefix`.
  static TxnOp DeletePrefix(std::string prefix);
};

struct TxnResult {
  // Whether every compare held, i.e. whether the writes were made.
  bool succeeded = false;
  // The store revision after the transaction.
  int64_t revision = 0;
};

// The key that makes its holder leader of an election (v3election's
// LeaderKey). `rev` is the key's create revision: a Txn that compares
// CREATE(key) == rev succeeds only while this leadership lasts.
struct LeaderKey {
  std::string name, key;
  int64_t rev = 0;
  int64_t lease = 0;
};

// Cancels a blocking call (Campaign) from another thread. Cancel() may come
// before, during or after the call; a call started after Cancel() fails at
// once. Thread-safe. Must outlive the call it is passed to.
class EtcdCancel {
 public:
  EtcdCancel() = default;
  EtcdCancel(const EtcdCancel&) = delete;
  EtcdCancel& operator=(const EtcdCancel&) = delete;

  void Cancel();
  bool cancelled() const;

 private:
  friend class EtcdClient;
  // Registers the context of the running call; returns false when already
  // cancelled.
  bool Attach(grpc::ClientContext* context);
  void Detach();

  mutable Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
};

class EtcdClient {
 public:
  // Builds the channels and checks that some endpoint answers a status call
  // within options.call_timeout; that endpoint becomes the current one.
  // Returns INVALID_ARGUMENT for no endpoints or unreadable TLS files, and
  // UNAVAILABLE naming every endpoint when none answers.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Connect(const EtcdClientOptions& options);
  // Builds the channels and calls nothing: a client of a cluster that is
  // down for now, whose calls fail until it answers and then succeed (the
  // channels reconnect by themselves). INVALID_ARGUMENT as Connect.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Create(const EtcdClientOptions& options);

  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // Every key that starts with `prefix` ("" for all keys), read at one
  // revision: the first page fixes the revision and later pages are read at
  // it, so the result is a snapshot even when others write meanwhile. Fails
  // with UNAVAILABLE/DEADLINE_EXCEEDED when no endpoint answers, and
  // OUT_OF_RANGE when etcd compacted the revision between pages on every of
  // a few attempts.
  absl::StatusOr<RangeResult> RangePrefix(std::string_view prefix);

  // The key, or nullopt when it does not exist (a linearizable read).
  absl::StatusOr<std::optional<KeyValue>> Get(std::string_view key);

  // If every compare holds, makes every op, atomically; otherwise makes
  // none. Errors: INVALID_ARGUMENT with etcd's words for a request etcd
  // refuses as malformed or too big (more ops than its --max-txn-ops,
  // more bytes than its --max-request-bytes, the same key written twice);
  // RESOURCE_EXHAUSTED when etcd's space quota is used up (the NOSPACE
  // alarm); UNAVAILABLE/DEADLINE_EXCEEDED when no member could be reached or
  // when the outcome is unknown (see the file comment). Nothing was written
  // on INVALID_ARGUMENT or RESOURCE_EXHAUSTED.
  absl::StatusOr<TxnResult> Txn(const std::vector<TxnCompare>& compares,
                                const std::vector<TxnOp>& ops);
  // Same, waiting at most `timeout` for the connection and the answer
  // instead of the call timeout: for a caller that must know in time (a
  // leader's commit within its lease).
  absl::StatusOr<TxnResult> Txn(const std::vector<TxnCompare>& compares,
                                const std::vector<TxnOp>& ops, absl::Duration timeout);

  // A new lease of at least `ttl` (rounded up to whole seconds; etcd may
  // raise it to its minimum). Returns its id.
  absl::StatusOr<int64_t> LeaseGrant(absl::Duration ttl);
  // Ends the lease and deletes its keys. NOT_FOUND when it does not exist
  // (expired or revoked before).
  absl::Status LeaseRevoke(int64_t id);
  // Same, with `timeout` for each member instead of the call timeout (for
  // best-effort revocations on the way out).
  absl::Status LeaseRevoke(int64_t id, absl::Duration timeout);

  // Waits until this caller leads `election`, holding the leader key under
  // `lease` with `value`, and returns the key. The caller must keep the
  // lease alive (LeaseKeeper): etcd does not. Fails with DEADLINE_EXCEEDED at
  // `deadline`, CANCELLED when `cancel` fires (may be null), and with etcd's
  // error otherwise. On failure the caller should revoke the lease: a key
  // left in the queue would make it leader later.
  absl::StatusOr<LeaderKey> Campaign(std::string_view election, int64_t lease,
                                     std::string_view value, absl::Time deadline,
                                     EtcdCancel* cancel = nullptr);
  // The current leader's value in `election`, nullopt when nobody leads.
  absl::StatusOr<std::optional<std::string>> LeaderValue(std::string_view election);
  // Replaces the leader's value. FAILED_PRECONDITION when `leader` no longer
  // leads.
  absl::Status Proclaim(const LeaderKey& leader, std::string_view value);
  // Gives up leadership: deletes the leader key if it is still `leader`'s.
  absl::Status Resign(const LeaderKey& leader);

  // The endpoint calls currently go to ("http://127.0.0.1:2379").
  std::string current_endpoint() const;
  const EtcdClientOptions& options() const { return options_; }

 private:
  friend class ::vipu::coordination::LeaseKeeper;
  struct Member;

  explicit EtcdClient(EtcdClientOptions options);

  // The index of the endpoint calls go to now.
  size_t current() const;
  // Moves on from endpoint `failed` (when it is still current).
  void Advance(size_t failed);
  std::shared_ptr<grpc::Channel> channel(size_t index) const;
  size_t size() const { return members_.size(); }

  // Runs `call` against the current endpoint and, while it fails with
  // UNAVAILABLE or DEADLINE_EXCEEDED, against each further one once.
  // `call` gets the endpoint index and returns its status.
  absl::Status WithFailover(std::string_view what, const std::function<absl::Status(size_t)>& call);

  const EtcdClientOptions options_;
  std::vector<std::unique_ptr<Member>> members_;
  mutable Mutex mu_;
  size_t current_ ABSL_GUARDED_BY(mu_) = 0;
};

// The end of the key range that holds exactly the keys starting with
// `prefix` (etcd's range_end): the prefix with its last byte below 0xff
// incremented and what follows dropped; "\0" (every key) when there is none.
std::string PrefixRangeEnd(std::string_view prefix);

}  // namespace vipu::storage::etcd

#endif  // VIPU_STORAGE_ETCD_ETCD_CLIENT_H_
