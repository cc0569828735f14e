// EtcdStore: loading the state from etcd, and how a group of write callbacks
// becomes fenced etcd transactions.
#include "storage/etcd/etcd_store.h"

#include <atomic>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "base/nothing_done.h"
#include "base/status_macros.h"
#include "spdlog/spdlog.h"
#include "storage/etcd/etcd_layout.h"
#include "storage/etcd/etcd_state.h"
#include "storage/write_queue.h"

namespace vipu::storage::etcd {
namespace {

// How long a client refused before anything was done should wait: about
// the time a standby takes to learn of a new leader.
constexpr int64_t kRetryAfterMs = 200;
// A handover takes a few tens of milliseconds: its successor serves soon.
constexpr int64_t kHandoverRetryAfterMs = 50;

// Write callbacks taken from the queue at once; a group is committed
// earlier when its keys reach a transaction's limit.
constexpr size_t kMaxBatch = 256;

// Puts every decoded record of `kvs` under the state prefix into `state`.
absl::Status LoadState(const EtcdLayout& layout, const RangeResult& range, EtcdState* state) {
  for (const KeyValue& kv : range.kvs) {
    if (!absl::StartsWith(kv.key, layout.StatePrefix())) continue;
    if (kv.key == layout.GenerationKey()) {
      if (!absl::SimpleAtoi(kv.value, &state->generation)) {
        return absl::DataLossError(
            absl::StrCat("etcd key ", kv.key, " is not a generation number: '", kv.value, "'"));
      }
      continue;
    }
    Table table;
    std::string id;
    if (!layout.ParseKey(kv.key, &table, &id)) {
      return absl::FailedPreconditionError(
          absl::StrCat("etcd key ", kv.key, " is not one this server writes; a newer server's?"));
    }
    switch (table) {
      case Table::kAgents: {
        ASSIGN_OR_RETURN(fabric::Agent v, DecodeAgent(id, kv.value));
        state->agents.Mutable()[id] = std::make_shared<const fabric::Agent>(std::move(v));
        break;
      }
      case Table::kClusters: {
        ASSIGN_OR_RETURN(fabric::Cluster v, DecodeCluster(id, kv.value));
        state->clusters.Mutable()[id] = std::make_shared<const fabric::Cluster>(std::move(v));
        break;
      }
      case Table::kAllocations: {
        ASSIGN_OR_RETURN(fabric::Allocation v, DecodeAllocation(id, kv.value));
        state->allocations.Mutable()[id] = std::make_shared<const fabric::Allocation>(std::move(v));
        break;
      }
      case Table::kPartitions: {
        ASSIGN_OR_RETURN(PartitionEntry v, DecodePartition(id, kv.value));
        state->partitions.Mutable()[id] = std::make_shared<const PartitionEntry>(std::move(v));
        break;
      }
      case Table::kUsers: {
        ASSIGN_OR_RETURN(UserRecord v, DecodeUser(id, kv.value));
        state->users.Mutable()[id] = std::make_shared<const UserRecord>(std::move(v));
        break;
      }
    }
  }
  return absl::OkStatus();
}

// A token prefix of its own for each store opened: random, so that two
// leaders (one after the other, or one deposed) never write the same token.
std::string NewInstance() {
  std::random_device random;
  return absl::StrCat(absl::Hex(random()), absl::Hex(random()));
}

}  // namespace

class EtcdStore::Impl {
 public:
  Impl(EtcdClient* client, EtcdStoreOptions options)
      : client_(client), options_(std::move(options)), layout_(options_.prefix) {}

  absl::Status Load() {
    ASSIGN_OR_RETURN(RangeResult range, client_->RangePrefix(layout_.prefix()));
    bool formatted = false;
    std::string foreign;
    for (const KeyValue& kv : range.kvs) {
      if (kv.key == layout_.FormatKey()) {
        RETURN_IF_ERROR(layout_.CheckFormat(kv.value));
        formatted = true;
      } else if (kv.key == layout_.CommitKey()) {
        commit_token_ = kv.value;
      } else if (!absl::StartsWith(kv.key, layout_.ElectionName() + "/") && foreign.empty()) {
        foreign = kv.key;
      }
    }
    if (!formatted && !foreign.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("etcd prefix ", layout_.prefix(), " holds data of another format (", foreign,
                       ", and no ", layout_.FormatKey(), "); choose another --etcd-prefix"));
    }
    auto state = std::make_unique<EtcdState>();
    RETURN_IF_ERROR(LoadState(layout_, range, state.get()));
    loaded_keys_ = range.kvs.size();
    if (!formatted) {
      std::vector<TxnCompare> compares = options_.fence;
      compares.push_back(TxnCompare::Version(layout_.FormatKey(), 0));
      ASSIGN_OR_RETURN(
          TxnResult r,
          client_->Txn(compares, {TxnOp::Put(layout_.FormatKey(), layout_.FormatValue())}));
      if (!r.succeeded) {
        return absl::UnavailableError(absl::StrCat(
            "etcd prefix ", layout_.prefix(), " changed while this member loaded it; try again"));
      }
    }
    state->Seal();
    work_ = *state;
    work_.Seal();
    {
      MutexLock lock(&snapshot_mu_);
      snapshot_ = std::shared_ptr<const EtcdState>(std::move(state));
    }
    // Only now: the writer commits onto what was loaded.
    queue_ = std::make_unique<WriteQueue>(QueueOptions(),
                                          [this](WriteQueue::Group& group) { RunBatch(group); });
    return absl::OkStatus();
  }

  absl::Status Read(const std::function<absl::Status(ReadTxn&)>& fn) {
    RETURN_IF_ERROR(MayAnswer());
    std::shared_ptr<const EtcdState> snapshot;
    {
      MutexLock lock(&snapshot_mu_);
      snapshot = snapshot_;
    }
    EtcdTxn txn(snapshot.get());
    return fn(txn);
  }

  void StopAnswering() {
    handing_over_.store(true);
    // The queue admits under its lock, so a write it took before the flag
    // is queued by now, and none is taken after.
    queue().AwaitIdle();
  }

  // Set once Load has succeeded, which Open requires before it hands the
  // store out.
  WriteQueue& queue() { return *queue_; }
  const WriteQueue& queue() const { return *queue_; }
  size_t loaded_keys() const { return loaded_keys_; }

  // OK while this member may answer from its copy: the store is not broken
  // and the leadership surely holds. The refusals are made before anything
  // reaches etcd, so a client may send even a change to another member.
  absl::Status MayAnswer() const {
    if (handing_over_.load()) {
      return NothingDone(
          absl::UnavailableError(
              "this member is handing the leadership over to another; nothing was done; try "
              "again or another member"),
          kHandoverRetryAfterMs);
    }
    if (lost_.load()) {
      return NothingDone(
          absl::UnavailableError(
              "this member has stopped leading and does not answer from a copy of the state "
              "that may be stale; try again or another member"),
          kRetryAfterMs);
    }
    if (options_.held_until && absl::Now() >= options_.held_until()) {
      return NothingDone(
          absl::UnavailableError(
              "this member may no longer lead: etcd has not confirmed its leadership lease in "
              "time, so it does not answer from a copy of the state that may be stale; nothing "
              "was done; try again or another member"),
          kRetryAfterMs);
    }
    return absl::OkStatus();
  }

 private:
  WriteQueueOptions QueueOptions() {
    WriteQueueOptions queue;
    queue.thread_name = "etcd-writer";
    queue.max_group_size = kMaxBatch;
    // Refused before anything is queued, so the refusal says nothing was done.
    queue.admit = [this] { return MayAnswer(); };
    return queue;
  }

  // Runs the callbacks in order, committing whenever the keys changed so
  // far fill a transaction, and once at the end.
  void RunBatch(WriteQueue::Group& batch) {
    std::vector<absl::Status> results(batch.size());
    size_t group_start = 0;
    std::set<TouchedKey> touched;
    absl::Time began = absl::Now();
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!broken_.ok()) {
        results[i] = broken_;
        continue;
      }
      EtcdTxn txn(&work_);
      results[i] = batch.Run(i, txn);
      if (!results[i].ok()) {
        txn.Rollback();
        continue;
      }
      touched.insert(txn.touched().begin(), txn.touched().end());
      if (touched.size() >= options_.max_ops_per_txn) {
        Commit(batch, results, group_start, i + 1, touched, began);
        group_start = i + 1;
        touched.clear();
        began = absl::Now();
      }
    }
    Commit(batch, results, group_start, batch.size(), touched, began);
  }

  // Writes the keys of writes [from, to) to etcd, then answers each write
  // (`results` holds what its callback returned).
  void Commit(WriteQueue::Group& batch, std::vector<absl::Status>& results, size_t from, size_t to,
              const std::set<TouchedKey>& keys, absl::Time began) {
    if (from == to) return;
    absl::Status failure = keys.empty() ? absl::OkStatus() : WriteKeys(keys);
    if (failure.ok()) {
      if (!keys.empty()) Publish(batch, to - from, began);
    } else {
      // What the callbacks changed never reached etcd (or may not have):
      // back to the last published state.
      work_ = *CurrentSnapshot();
      work_.Seal();
    }
    for (size_t i = from; i < to; ++i) {
      if (!failure.ok() && results[i].ok()) results[i] = failure;
      batch.Answer(i, std::move(results[i]));
    }
  }

  // The etcd transactions of one group. OK once all committed.
  absl::Status WriteKeys(const std::set<TouchedKey>& keys) {
    std::vector<std::vector<TxnOp>> txns(1);
    size_t bytes = 0;
    for (const TouchedKey& k : keys) {
      TxnOp op = MakeOp(k);
      const size_t size = op.key.size() + op.value.size() + 16;
      if (!txns.back().empty() && (txns.back().size() >= options_.max_ops_per_txn ||
                                   bytes + size > options_.max_bytes_per_txn)) {
        txns.emplace_back();
        bytes = 0;
      }
      bytes += size;
      txns.back().push_back(std::move(op));
    }
    for (size_t t = 0; t < txns.size(); ++t) {
      // Each transaction moves the commit token on from the one this store
      // last wrote, so that it can apply only once and never after a later
      // one: what makes a lost answer safe to find out and resend.
      std::vector<TxnCompare> compares = options_.fence;
      compares.push_back(commit_token_ ? TxnCompare::Value(layout_.CommitKey(), *commit_token_)
                                       : TxnCompare::Version(layout_.CommitKey(), 0));
      const std::string token = absl::StrCat(instance_, "-", ++commits_made_);
      txns[t].push_back(TxnOp::Put(layout_.CommitKey(), token));
      absl::StatusOr<TxnResult> r = client_->Txn(compares, txns[t], CommitTimeout());
      if (!r.ok() && absl::IsResourceExhausted(r.status())) r = AppliedAnyway(token, r.status());
      const bool definite =
          !r.ok() && (absl::IsInvalidArgument(r.status()) || absl::IsResourceExhausted(r.status()));
      if (t == 0 && definite) {
        // etcd refused it whole: nothing changed, and the next write may fit.
        return absl::Status(r.status().code(),
                            absl::StrCat("etcd refused the write: ", r.status().message()));
      }
      if (!r.ok() && !definite) r = FindOut(compares, txns[t], token, r.status());
      if (!r.ok()) {
        return Break(absl::UnavailableError(absl::StrCat(
            "lost etcd's answer to a commit (", r.status().message(),
            "); this member stops leading so that the next leader reads what etcd holds")));
      }
      if (!r->succeeded) {
        return Break(absl::UnavailableError(
            "this member no longer leads: its fenced write to etcd was refused"));
      }
      commit_token_ = token;
    }
    return absl::OkStatus();
  }

  // etcd answers "database space exceeded" both to a transaction it
  // refused before applying it and to the one that took it over its space
  // quota, which it applied all the same. The token tells them apart: the
  // outcome as if etcd had answered plainly, or `refused` (also when etcd
  // cannot be asked; the refusal then stands, as it did before).
  absl::StatusOr<TxnResult> AppliedAnyway(const std::string& token, absl::Status refused) {
    absl::StatusOr<std::optional<KeyValue>> now = client_->Get(layout_.CommitKey());
    if (now.ok() && now->has_value() && (*now)->value == token) {
      spdlog::warn("etcd store: etcd applied a commit although it answered: {}",
                   std::string(refused.message()));
      return TxnResult{true, (*now)->mod_revision};
    }
    return refused;
  }

  absl::Duration CommitTimeout() const {
    return options_.commit_timeout > absl::ZeroDuration() ? options_.commit_timeout
                                                          : absl::Seconds(5);
  }

  // A transaction whose answer was lost (etcd electing a new raft leader, a
  // member gone): sends it again, with the same compares and token, until
  // etcd answers or the leadership may have lapsed. Either the resend
  // applies it (the first never did, and now never can: the token it
  // requires has moved on), or its compares fail and the token tells
  // whether the first applied. Returns the outcome as if the first had
  // been answered, or the last error.
  absl::StatusOr<TxnResult> FindOut(const std::vector<TxnCompare>& compares,
                                    const std::vector<TxnOp>& ops, const std::string& token,
                                    absl::Status lost) {
    const absl::Time fixed_until = absl::Now() + 2 * CommitTimeout();
    // The leadership's bound moves on while etcd renews the lease.
    auto until = [&] {
      return options_.held_until ? options_.held_until() + options_.lost_answer_grace : fixed_until;
    };
    spdlog::warn("etcd store: lost etcd's answer to a commit ({}); finding out whether it applied",
                 std::string(lost.message()));
    absl::Duration pause = absl::Milliseconds(100);
    while (absl::Now() + pause < until()) {
      absl::SleepFor(pause);
      pause = std::min(2 * pause, absl::Milliseconds(500));
      absl::StatusOr<TxnResult> again = client_->Txn(compares, ops, CommitTimeout());
      if (!again.ok()) {
        lost = again.status();
        continue;
      }
      if (again->succeeded) return again;
      absl::StatusOr<std::optional<KeyValue>> now = client_->Get(layout_.CommitKey());
      if (!now.ok()) {
        lost = now.status();
        continue;
      }
      if (now->has_value() && (*now)->value == token) {
        spdlog::info("etcd store: the commit whose answer was lost had applied");
        return TxnResult{true, (*now)->mod_revision};
      }
      return again;  // not applied, and the compares fail: another leads
    }
    return lost;
  }

  TxnOp MakeOp(const TouchedKey& k) const {
    if (k.generation) {
      return TxnOp::Put(layout_.GenerationKey(), absl::StrCat(work_.generation));
    }
    const std::string key = layout_.Key(k.table, k.id);
    switch (k.table) {
      case Table::kAgents:
        if (const fabric::Agent* v = work_.agents.Find(k.id))
          return TxnOp::Put(key, EncodeAgent(*v));
        break;
      case Table::kClusters:
        if (const fabric::Cluster* v = work_.clusters.Find(k.id)) {
          return TxnOp::Put(key, EncodeCluster(*v));
        }
        break;
      case Table::kAllocations:
        if (const fabric::Allocation* v = work_.allocations.Find(k.id)) {
          return TxnOp::Put(key, EncodeAllocation(*v));
        }
        break;
      case Table::kPartitions:
        if (const PartitionEntry* v = work_.partitions.Find(k.id)) {
          return TxnOp::Put(key, EncodePartition(*v));
        }
        break;
      case Table::kUsers:
        if (const UserRecord* v = work_.users.Find(k.id)) return TxnOp::Put(key, EncodeUser(*v));
        break;
    }
    return TxnOp::Delete(key);
  }

  // Refuses every later read and write and tells the owner, once.
  absl::Status Break(absl::Status why) {
    broken_ = why;
    lost_.store(true);
    spdlog::error("etcd store: {}", std::string(why.message()));
    if (options_.on_lost) options_.on_lost(why);
    return why;
  }

  void Publish(WriteQueue::Group& batch, size_t writes, absl::Time began) {
    work_.Seal();
    auto snapshot = std::make_shared<const EtcdState>(work_);
    {
      MutexLock lock(&snapshot_mu_);
      snapshot_ = std::move(snapshot);
    }
    batch.Committed(absl::Now() - began, writes);
  }

  std::shared_ptr<const EtcdState> CurrentSnapshot() {
    MutexLock lock(&snapshot_mu_);
    return snapshot_;
  }

  EtcdClient* const client_;
  const EtcdStoreOptions options_;
  const EtcdLayout layout_;
  size_t loaded_keys_ = 0;

  Mutex snapshot_mu_;
  std::shared_ptr<const EtcdState> snapshot_ ABSL_GUARDED_BY(snapshot_mu_);

  // The writer thread's own: its working state and whether it gave up.
  EtcdState work_;
  absl::Status broken_;
  // The value of the commit key as this store last wrote or read it;
  // nullopt while it does not exist.
  std::optional<std::string> commit_token_;
  // Tells this store's tokens apart from any other's.
  const std::string instance_ = NewInstance();
  uint64_t commits_made_ = 0;
  // Set with broken_, for the readers.
  std::atomic<bool> lost_{false};
  // Set once by StopAnswering; read by every MayAnswer.
  std::atomic<bool> handing_over_{false};

  // Last: destroyed first, so the writer thread has answered every queued
  // write and stopped before the state it commits into goes.
  std::unique_ptr<WriteQueue> queue_;
};

absl::StatusOr<std::unique_ptr<EtcdStore>> EtcdStore::Open(EtcdClient* client,
                                                           EtcdStoreOptions options) {
  RETURN_IF_ERROR(EtcdLayout::ValidatePrefix(options.prefix));
  auto impl = std::make_unique<Impl>(client, std::move(options));
  RETURN_IF_ERROR(impl->Load());
  return std::unique_ptr<EtcdStore>(new EtcdStore(std::move(impl)));
}

EtcdStore::EtcdStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EtcdStore::~EtcdStore() = default;

absl::Status EtcdStore::Read(const std::function<absl::Status(ReadTxn&)>& fn) {
  return impl_->Read(fn);
}
absl::Status EtcdStore::Answerable() const { return impl_->MayAnswer(); }

void EtcdStore::StopAnswering() { impl_->StopAnswering(); }
absl::Status EtcdStore::Write(const std::function<absl::Status(WriteTxn&)>& fn) {
  return impl_->queue().Write(fn);
}
void EtcdStore::WriteAsync(std::function<absl::Status(WriteTxn&)> fn,
                           std::function<void(absl::Status)> done) {
  impl_->queue().WriteAsync(std::move(fn), std::move(done));
}
absl::Status EtcdStore::Backup(const std::string& /*path*/) {
  return absl::FailedPreconditionError(
      "the state is in etcd: back it up with `etcdctl snapshot save FILE` (docs/ha.md)");
}
uint64_t EtcdStore::commits() const { return impl_->queue().commits(); }
uint64_t EtcdStore::writes() const { return impl_->queue().writes(); }
uint64_t EtcdStore::pending_writes() const { return impl_->queue().pending_writes(); }
void EtcdStore::SetCommitObserver(std::function<void(double, size_t)> observer) {
  impl_->queue().SetCommitObserver(std::move(observer));
}
size_t EtcdStore::loaded_keys() const { return impl_->loaded_keys(); }

}  // namespace vipu::storage::etcd
