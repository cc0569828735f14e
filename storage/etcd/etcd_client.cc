// EtcdClient: etcd v3 calls over gRPC with failover between endpoints.
#include "storage/etcd/etcd_client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/absl_view.h"
#include "base/status_macros.h"
#include "etcd/rpc.grpc.pb.h"
#include "etcd/v3election.grpc.pb.h"
#include "wire/status.h"

namespace vipu::storage::etcd {
namespace {

// How often RangePrefix starts over when etcd compacted its revision
// between two pages.
constexpr int kRangeAttempts = 3;

std::chrono::system_clock::time_point ToChrono(absl::Time t) { return absl::ToChronoTime(t); }

bool Retryable(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

// etcd's error as an absl::Status: the gRPC code, adjusted where etcd's
// choice would mislead a caller, with the call and the member in front of
// etcd's own words.
absl::Status FromEtcd(std::string_view what, const EtcdEndpoint& endpoint,
                      const grpc::Status& status) {
  const std::string& message = status.error_message();
  absl::StatusCode code = wire::FromGrpc(status).code();
  // A request over the server's gRPC message limit is refused by gRPC with
  // RESOURCE_EXHAUSTED before etcd sees it; to the caller it is the same
  // as etcd's "request is too large", which is a malformed request and not
  // a full store.
  if (absl::StrContains(message, "too many operations in txn request") ||
      absl::StrContains(message, "request is too large") ||
      absl::StrContains(message, "received message larger than max") ||
      absl::StrContains(message, "duplicate key given in txn request")) {
    code = absl::StatusCode::kInvalidArgument;
  } else if (absl::StrContains(message, "database space exceeded")) {
    code = absl::StatusCode::kResourceExhausted;
  } else if (absl::StrContains(message, "election: not leader")) {
    code = absl::StatusCode::kFailedPrecondition;
  } else if (absl::StrContains(message, "requested lease not found")) {
    code = absl::StatusCode::kNotFound;
  } else if (absl::StrContains(message, "context deadline exceeded") ||
             absl::StrContains(message, "etcdserver: request timed out") ||
             absl::StrContains(message, "etcdserver: no leader") ||
             absl::StrContains(message, "etcdserver: leader changed") ||
             absl::StrContains(message, "etcdserver: too many requests")) {
    // A member without a majority (or between raft leaders) answers in
    // band, some of it with code UNKNOWN: the member is there but cannot
    // serve now, which is what UNAVAILABLE tells callers that wait.
    code = absl::StatusCode::kUnavailable;
  }
  return absl::Status(code,
                      absl::StrCat("etcd ", AbslView(what), " at ", endpoint.url, ": ", message));
}

absl::StatusOr<std::string> ReadPem(const std::string& path, std::string_view what) {
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd ", AbslView(what), " file ", path, " is not readable"));
  }
  if (!in.is_open() || buffer.str().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd ", AbslView(what), " file ", path, " is missing or empty"));
  }
  return buffer.str();
}

// Whether `channel` is (or gets) connected before `deadline`. A failed
// connection attempt answers at once: a member that refuses connections is
// not waited for.
bool Connected(grpc::Channel& channel, absl::Time deadline) {
  grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
  while (state != GRPC_CHANNEL_READY) {
    if (state == GRPC_CHANNEL_TRANSIENT_FAILURE || state == GRPC_CHANNEL_SHUTDOWN) return false;
    if (!channel.WaitForStateChange(state, ToChrono(deadline))) return false;
    state = channel.GetState(/*try_to_connect=*/true);
  }
  return true;
}

KeyValue FromProto(const mvccpb::KeyValue& kv) {
  KeyValue out;
  out.key = kv.key();
  out.value = kv.value();
  out.create_revision = kv.create_revision();
  out.mod_revision = kv.mod_revision();
  out.version = kv.version();
  out.lease = kv.lease();
  return out;
}

v3electionpb::LeaderKey ToProto(const LeaderKey& leader) {
  v3electionpb::LeaderKey out;
  out.set_name(leader.name);
  out.set_key(leader.key);
  out.set_rev(leader.rev);
  out.set_lease(leader.lease);
  return out;
}

}  // namespace

std::string PrefixRangeEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

TxnCompare TxnCompare::CreateRevision(std::string key, int64_t rev) {
  return TxnCompare{Target::kCreateRevision, std::move(key), rev, {}};
}
TxnCompare TxnCompare::ModRevision(std::string key, int64_t rev) {
  return TxnCompare{Target::kModRevision, std::move(key), rev, {}};
}
TxnCompare TxnCompare::Version(std::string key, int64_t version) {
  return TxnCompare{Target::kVersion, std::move(key), version, {}};
}
TxnCompare TxnCompare::Value(std::string key, std::string value) {
  return TxnCompare{Target::kValue, std::move(key), 0, std::move(value)};
}

TxnOp TxnOp::Put(std::string key, std::string value, int64_t lease) {
  return TxnOp{Kind::kPut, std::move(key), std::move(value), lease};
}
TxnOp TxnOp::Delete(std::string key) { return TxnOp{Kind::kDelete, std::move(key), {}, 0}; }
TxnOp TxnOp::DeletePrefix(std::string prefix) {
  return TxnOp{Kind::kDeletePrefix, std::move(prefix), {}, 0};
}

void EtcdCancel::Cancel() {
  MutexLock lock(&mu_);
  cancelled_ = true;
  if (context_ != nullptr) context_->TryCancel();
}

bool EtcdCancel::cancelled() const {
  MutexLock lock(&mu_);
  return cancelled_;
}

bool EtcdCancel::Attach(grpc::ClientContext* context) {
  MutexLock lock(&mu_);
  if (cancelled_) return false;
  context_ = context;
  return true;
}

void EtcdCancel::Detach() {
  MutexLock lock(&mu_);
  context_ = nullptr;
}

struct EtcdClient::Member {
  EtcdEndpoint endpoint;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
  std::unique_ptr<v3electionpb::Election::Stub> election;
};

EtcdClient::EtcdClient(EtcdClientOptions options) : options_(std::move(options)) {}
EtcdClient::~EtcdClient() = default;

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(const EtcdClientOptions& options) {
  if (options.endpoints.empty()) return absl::InvalidArgumentError("etcd: no endpoints");
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "etcd: a client certificate needs its key, and a key its certificate");
  }
  if (options.call_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("etcd: the call timeout must be positive");
  }
  std::unique_ptr<EtcdClient> client(new EtcdClient(options));
  grpc::ChannelArguments args;
  // Lists of every key under a prefix can be large; etcd bounds requests,
  // not answers.
  args.SetMaxReceiveMessageSize(-1);
  // A restarted member is found again within a second, not after gRPC's
  // default backoff of up to two minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Pings find a member that vanished without closing the connection (a
  // crashed host) while a stream is open. Not more often than etcd's
  // default --grpc-keepalive-min-time (5 s) allows.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  std::shared_ptr<grpc::ChannelCredentials> tls;
  for (const EtcdEndpoint& endpoint : options.endpoints) {
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    if (endpoint.tls) {
      if (tls == nullptr) {
        grpc::SslCredentialsOptions ssl;
        ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem(options.ca_file, "CA"));
        ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadPem(options.cert_file, "certificate"));
        ASSIGN_OR_RETURN(ssl.pem_private_key, ReadPem(options.key_file, "key"));
        tls = grpc::SslCredentials(ssl);
      }
      credentials = tls;
    } else {
      credentials = grpc::InsecureChannelCredentials();
    }
    auto member = std::make_unique<Member>();
    member->endpoint = endpoint;
    member->channel = grpc::CreateCustomChannel(endpoint.host_port, credentials, args);
    member->kv = etcdserverpb::KV::NewStub(member->channel);
    member->lease = etcdserverpb::Lease::NewStub(member->channel);
    member->maintenance = etcdserverpb::Maintenance::NewStub(member->channel);
    member->election = v3electionpb::Election::NewStub(member->channel);
    client->members_.push_back(std::move(member));
  }
  return client;
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Connect(const EtcdClientOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> client, Create(options));
  // Each endpoint gets an equal share of what is left of the timeout, so
  // one that hangs does not use up the time of the others.
  const absl::Time deadline = absl::Now() + options.call_timeout;
  std::vector<std::string> failures;
  for (size_t i = 0; i < client->members_.size(); ++i) {
    const Member& member = *client->members_[i];
    const absl::Duration share = (deadline - absl::Now()) / static_cast<int>(client->size() - i);
    grpc::ClientContext context;
    context.set_deadline(ToChrono(absl::Now() + share));
    // Waits for the connection within the deadline instead of failing on
    // the first refused attempt.
    context.set_wait_for_ready(true);
    etcdserverpb::StatusRequest request;
    etcdserverpb::StatusResponse response;
    const grpc::Status status = member.maintenance->Status(&context, request, &response);
    if (status.ok()) {
      MutexLock lock(&client->mu_);
      client->current_ = i;
      return client;
    }
    failures.push_back(FromEtcd("Status", member.endpoint, status).ToString());
  }
  std::vector<std::string> urls;
  for (const EtcdEndpoint& endpoint : options.endpoints) urls.push_back(endpoint.url);
  return absl::UnavailableError(absl::StrCat(
      "etcd: no endpoint of ", absl::StrJoin(urls, ","), " answered within ",
      absl::FormatDuration(options.call_timeout), ": ", absl::StrJoin(failures, "; ")));
}

size_t EtcdClient::current() const {
  MutexLock lock(&mu_);
  return current_;
}

void EtcdClient::Advance(size_t failed) {
  MutexLock lock(&mu_);
  if (current_ == failed) current_ = (current_ + 1) % members_.size();
}

std::shared_ptr<grpc::Channel> EtcdClient::channel(size_t index) const {
  return members_[index]->channel;
}

std::string EtcdClient::current_endpoint() const { return members_[current()]->endpoint.url; }

absl::Status EtcdClient::WithFailover(std::string_view what,
                                      const std::function<absl::Status(size_t)>& call) {
  size_t index = current();
  absl::Status status;
  std::vector<std::string> failures;
  size_t unreachable = 0;
  for (size_t attempt = 0; attempt < members_.size(); ++attempt) {
    status = call(index);
    if (!Retryable(status)) return status;
    failures.emplace_back(status.message());
    if (absl::StrContains(status.message(), "failed to connect")) ++unreachable;
    Advance(index);
    index = (index + 1) % members_.size();
  }
  // What an operator reads first: whether etcd is gone, or there but
  // without a majority, then every member tried and why.
  std::string verdict;
  if (unreachable == failures.size()) {
    verdict = "no etcd member can be reached";
  } else if (unreachable > 0) {
    verdict =
        absl::StrCat("etcd has no quorum as far as this member can tell: ", unreachable, " of ",
                     failures.size(), " members cannot be reached and the others do not answer");
  } else {
    verdict = "no etcd member answers in time (no quorum, or overloaded)";
  }
  return absl::Status(status.code(), absl::StrCat("etcd ", AbslView(what), ": ", verdict, " (",
                                                  absl::StrJoin(failures, "; "), ")"));
}

absl::StatusOr<RangeResult> EtcdClient::RangePrefix(std::string_view prefix) {
  const std::string end = PrefixRangeEnd(prefix);
  // An empty prefix means every key: etcd reads "\0" .. "\0" as all keys.
  const std::string begin = prefix.empty() ? std::string(1, '\0') : std::string(prefix);
  absl::Status last;
  for (int attempt = 0; attempt < kRangeAttempts; ++attempt) {
    RangeResult result;
    std::string next = begin;
    bool more = true;
    absl::Status status;
    while (more && status.ok()) {
      etcdserverpb::RangeRequest request;
      request.set_key(next);
      request.set_range_end(end);
      request.set_limit(options_.range_page_size);
      request.set_revision(result.revision);  // 0 on the first page: the newest
      etcdserverpb::RangeResponse response;
      status = WithFailover("Range", [&](size_t i) {
        grpc::ClientContext context;
        context.set_deadline(ToChrono(absl::Now() + options_.call_timeout));
        grpc::Status s = members_[i]->kv->Range(&context, request, &response);
        return s.ok() ? absl::OkStatus() : FromEtcd("Range", members_[i]->endpoint, s);
      });
      if (!status.ok()) break;
      if (result.revision == 0) result.revision = response.header().revision();
      for (const mvccpb::KeyValue& kv : response.kvs()) result.kvs.push_back(FromProto(kv));
      more = response.more() && response.kvs_size() > 0;
      // The smallest key after the last one read.
      if (more) next = response.kvs(response.kvs_size() - 1).key() + std::string(1, '\0');
    }
    if (status.ok()) return result;
    // A compaction between two pages removed the pinned revision; a fresh
    // snapshot is as good.
    if (!absl::IsOutOfRange(status)) return status;
    last = status;
  }
  return last;
}

absl::StatusOr<std::optional<KeyValue>> EtcdClient::Get(std::string_view key) {
  etcdserverpb::RangeRequest request;
  request.set_key(std::string(key));
  etcdserverpb::RangeResponse response;
  RETURN_IF_ERROR(WithFailover("Get", [&](size_t i) {
    grpc::ClientContext context;
    context.set_deadline(ToChrono(absl::Now() + options_.call_timeout));
    grpc::Status s = members_[i]->kv->Range(&context, request, &response);
    return s.ok() ? absl::OkStatus() : FromEtcd("Get", members_[i]->endpoint, s);
  }));
  if (response.kvs_size() == 0) return std::nullopt;
  return FromProto(response.kvs(0));
}

absl::StatusOr<TxnResult> EtcdClient::Txn(const std::vector<TxnCompare>& compares,
                                          const std::vector<TxnOp>& ops) {
  return Txn(compares, ops, options_.call_timeout);
}

absl::StatusOr<TxnResult> EtcdClient::Txn(const std::vector<TxnCompare>& compares,
                                          const std::vector<TxnOp>& ops, absl::Duration timeout) {
  etcdserverpb::TxnRequest request;
  for (const TxnCompare& c : compares) {
    etcdserverpb::Compare* compare = request.add_compare();
    compare->set_result(etcdserverpb::Compare::EQUAL);
    compare->set_key(c.key);
    switch (c.target) {
      case TxnCompare::Target::kCreateRevision:
        compare->set_target(etcdserverpb::Compare::CREATE);
        compare->set_create_revision(c.number);
        break;
      case TxnCompare::Target::kModRevision:
        compare->set_target(etcdserverpb::Compare::MOD);
        compare->set_mod_revision(c.number);
        break;
      case TxnCompare::Target::kVersion:
        compare->set_target(etcdserverpb::Compare::VERSION);
        compare->set_version(c.number);
        break;
      case TxnCompare::Target::kValue:
        compare->set_target(etcdserverpb::Compare::VALUE);
        compare->set_value(c.value);
        break;
    }
  }
  for (const TxnOp& op : ops) {
    etcdserverpb::RequestOp* request_op = request.add_success();
    switch (op.kind) {
      case TxnOp::Kind::kPut: {
        etcdserverpb::PutRequest* put = request_op->mutable_request_put();
        put->set_key(op.key);
        put->set_value(op.value);
        put->set_lease(op.lease);
        break;
      }
      case TxnOp::Kind::kDelete:
        request_op->mutable_request_delete_range()->set_key(op.key);
        break;
      case TxnOp::Kind::kDeletePrefix: {
        etcdserverpb::DeleteRangeRequest* del = request_op->mutable_request_delete_range();
        del->set_key(op.key.empty() ? std::string(1, '\0') : op.key);
        del->set_range_end(PrefixRangeEnd(op.key));
        break;
      }
    }
  }

  // Only a member whose channel is connected gets the request: until then
  // nothing was sent, so moving to the next member cannot apply it twice.
  const absl::Duration connect_wait = std::min(timeout, absl::Seconds(2));
  size_t index = current();
  std::vector<std::string> unreachable;
  for (size_t attempt = 0; attempt < members_.size(); ++attempt) {
    Member& member = *members_[index];
    if (!Connected(*member.channel, absl::Now() + connect_wait)) {
      unreachable.push_back(member.endpoint.url);
      Advance(index);
      index = (index + 1) % members_.size();
      continue;
    }
    grpc::ClientContext context;
    context.set_deadline(ToChrono(absl::Now() + timeout));
    etcdserverpb::TxnResponse response;
    const grpc::Status s = member.kv->Txn(&context, request, &response);
    if (s.ok()) return TxnResult{response.succeeded(), response.header().revision()};
    absl::Status status = FromEtcd("Txn", member.endpoint, s);
    if (Retryable(status)) {
      Advance(index);
      return absl::Status(
          status.code(),
          absl::StrCat("outcome unknown (the Txn may have been applied): ", status.message()));
    }
    return status;
  }
  return absl::UnavailableError(absl::StrCat("etcd Txn: not sent, no endpoint could be connected (",
                                             absl::StrJoin(unreachable, ","), ")"));
}

absl::StatusOr<int64_t> EtcdClient::LeaseGrant(absl::Duration ttl) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(std::max<int64_t>(1, absl::ToInt64Seconds(absl::Ceil(ttl, absl::Seconds(1)))));
  etcdserverpb::LeaseGrantResponse response;
  // A grant repeated on another member can leave an unused lease behind; it
  // expires on its own after `ttl`.
  RETURN_IF_ERROR(WithFailover("LeaseGrant", [&](size_t i) {
    grpc::ClientContext context;
    context.set_deadline(ToChrono(absl::Now() + options_.call_timeout));
    grpc::Status s = members_[i]->lease->LeaseGrant(&context, request, &response);
    return s.ok() ? absl::OkStatus() : FromEtcd("LeaseGrant", members_[i]->endpoint, s);
  }));
  if (!response.error().empty()) {
    return absl::UnavailableError(absl::StrCat("etcd LeaseGrant: ", response.error()));
  }
  return response.id();
}

absl::Status EtcdClient::LeaseRevoke(int64_t id) { return LeaseRevoke(id, options_.call_timeout); }

absl::Status EtcdClient::LeaseRevoke(int64_t id, absl::Duration timeout) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(id);
  etcdserverpb::LeaseRevokeResponse response;
  return WithFailover("LeaseRevoke", [&](size_t i) {
    grpc::ClientContext context;
    context.set_deadline(ToChrono(absl::Now() + timeout));
    grpc::Status s = members_[i]->lease->LeaseRevoke(&context, request, &response);
    return s.ok() ? absl::OkStatus() : FromEtcd("LeaseRevoke", members_[i]->endpoint, s);
  });
}

absl::StatusOr<LeaderKey> EtcdClient::Campaign(std::string_view election, int64_t lease,
                                               std::string_view value, absl::Time deadline,
                                               EtcdCancel* cancel) {
  v3electionpb::CampaignRequest request;
  request.set_name(std::string(election));
  request.set_lease(lease);
  request.set_value(std::string(value));
  v3electionpb::CampaignResponse response;
  // Campaigning again with the same lease finds the key the first attempt
  // made and waits on it, so a retry on another member is safe.
  RETURN_IF_ERROR(WithFailover("Campaign", [&](size_t i) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError("etcd Campaign: deadline passed");
    }
    grpc::ClientContext context;
    context.set_deadline(ToChrono(deadline));
    if (cancel != nullptr && !cancel->Attach(&context)) {
      return absl::CancelledError("etcd Campaign: cancelled");
    }
    grpc::Status s = members_[i]->election->Campaign(&context, request, &response);
    if (cancel != nullptr) cancel->Detach();
    if (s.ok()) return absl::OkStatus();
    absl::Status status = FromEtcd("Campaign", members_[i]->endpoint, s);
    // Our own deadline: another member would not do better.
    if (absl::IsDeadlineExceeded(status) || absl::Now() >= deadline) {
      return absl::DeadlineExceededError(status.message());
    }
    return status;
  }));
  const v3electionpb::LeaderKey& leader = response.leader();
  return LeaderKey{leader.name(), leader.key(), leader.rev(), leader.lease()};
}

absl::StatusOr<std::optional<std::string>> EtcdClient::LeaderValue(std::string_view election) {
  v3electionpb::LeaderRequest request;
  request.set_name(std::string(election));
  v3electionpb::LeaderResponse response;
  bool none = false;
  RETURN_IF_ERROR(WithFailover("Leader", [&](size_t i) {
    grpc::ClientContext context;
    context.set_deadline(ToChrono(absl::Now() + options_.call_timeout));
    grpc::Status s = members_[i]->election->Leader(&context, request, &response);
    // etcd reports an election without a leader as an error with these
    // words (concurrency.ErrElectionNoLeader).
    if (!s.ok() && absl::StrContains(s.error_message(), "election: no leader")) {
      none = true;
      return absl::OkStatus();
    }
    return s.ok() ? absl::OkStatus() : FromEtcd("Leader", members_[i]->endpoint, s);
  }));
  if (none) return std::nullopt;
  return response.kv().value();
}

absl::Status EtcdClient::Proclaim(const LeaderKey& leader, std::string_view value) {
  v3electionpb::ProclaimRequest request;
  *request.mutable_leader() = ToProto(leader);
  request.set_value(std::string(value));
  v3electionpb::ProclaimResponse response;
  return WithFailover("Proclaim", [&](size_t i) {
    grpc::ClientContext context;
    context.set_deadline(ToChrono(absl::Now() + options_.call_timeout));
    grpc::Status s = members_[i]->election->Proclaim(&context, request, &response);
    return s.ok() ? absl::OkStatus() : FromEtcd("Proclaim", members_[i]->endpoint, s);
  });
}

absl::Status EtcdClient::Resign(const LeaderKey& leader) {
  v3electionpb::ResignRequest request;
  *request.mutable_leader() = ToProto(leader);
  v3electionpb::ResignResponse response;
  return WithFailover("Resign", [&](size_t i) {
    grpc::ClientContext context;
    context.set_deadline(ToChrono(absl::Now() + options_.call_timeout));
    grpc::Status s = members_[i]->election->Resign(&context, request, &response);
    return s.ok() ? absl::OkStatus() : FromEtcd("Resign", members_[i]->endpoint, s);
  });
}

}  // namespace vipu::storage::etcd
