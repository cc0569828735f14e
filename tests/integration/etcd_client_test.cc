// The etcd client, lease keeper and leader election against real etcd
// members (tests/etcd_harness.h); the endpoint parser without etcd.
#include "storage/etcd/etcd_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/mutex.h"
#include "coordination/leader_election.h"
#include "coordination/lease_keeper.h"
#include "storage/etcd/etcd_endpoints.h"
#include "tests/etcd_harness.h"
#include "tests/integration/cannot_run.h"
#include "tests/integration/daemon_process.h"  // FreePort

namespace vipu::storage::etcd {
namespace {

using ::testing::HasSubstr;
using vipu::testing::EtcdCluster;
using vipu::testing::EtcdClusterOptions;

// ---- Endpoint lists (no etcd) ----

TEST(EtcdEndpoints, ParsesHttpHttpsAndIpv6) {
  absl::StatusOr<std::vector<EtcdEndpoint>> parsed =
      ParseEtcdEndpoints("http://127.0.0.1:2379, https://etcd-2.example:2380,http://[::1]:12379");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_FALSE((*parsed)[0].tls);
  EXPECT_EQ((*parsed)[0].host_port, "127.0.0.1:2379");
  EXPECT_EQ((*parsed)[0].url, "http://127.0.0.1:2379");
  EXPECT_TRUE((*parsed)[1].tls);
  EXPECT_EQ((*parsed)[1].host_port, "etcd-2.example:2380");
  EXPECT_EQ((*parsed)[2].host_port, "[::1]:12379");
}

TEST(EtcdEndpoints, RefusesBadEntriesNamingThem) {
  struct Case {
    std::string list, words;
  };
  const std::vector<Case> cases = {
      {"", "empty"},
      {"  ", "empty"},
      {"http://a:1,,http://b:2", "entry 2 is empty"},
      {"127.0.0.1:2379", "\"127.0.0.1:2379\": no scheme"},
      {"grpc://a:2379", "scheme \"grpc\""},
      {"http://a", "\"http://a\": no port"},
      {"http://a:", "no port"},
      {"http://a:x1", "port \"x1\""},
      {"http://a:70000", "port \"70000\""},
      {"http://a:0", "port \"0\""},
      {"http://a:2379/v3", "path"},
      {"http://:2379", "empty host"},
      {"http://[::1:2379", "unclosed"},
      {"http://::1:2379", "brackets"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<EtcdEndpoint>> parsed = ParseEtcdEndpoints(c.list);
    ASSERT_FALSE(parsed.ok()) << c.list;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.list;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr(c.words)) << c.list;
  }
}

TEST(EtcdEndpoints, PrefixRangeEnd) {
  EXPECT_EQ(PrefixRangeEnd("/vipu/"), "/vipu0");
  EXPECT_EQ(PrefixRangeEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(PrefixRangeEnd(""), std::string(1, '\0'));
}

// ---- Against etcd ----

// A cluster of `members` in a fresh directory and a client of all of them.
class EtcdTest : public ::testing::Test {
 protected:
  void StartCluster(int members, int64_t page_size = 1000) {
    if (!EtcdCluster::Available()) VIPU_CANNOT_RUN_HERE() << "no etcd at " << EtcdCluster::Binary();
    EtcdClusterOptions options;
    options.members = members;
    absl::StatusOr<std::unique_ptr<EtcdCluster>> cluster = EtcdCluster::Launch(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    client_ = NewClient(page_size);
    ASSERT_NE(client_, nullptr);
  }

  std::unique_ptr<EtcdClient> NewClient(int64_t page_size = 1000) {
    EtcdClientOptions options;
    absl::StatusOr<std::vector<EtcdEndpoint>> endpoints = ParseEtcdEndpoints(cluster_->endpoints());
    EXPECT_TRUE(endpoints.ok()) << endpoints.status();
    if (!endpoints.ok()) return nullptr;
    options.endpoints = *endpoints;
    options.call_timeout = absl::Seconds(3);
    options.range_page_size = page_size;
    absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Connect(options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  void TearDown() override {
    client_.reset();
    cluster_.reset();
  }

  std::unique_ptr<EtcdCluster> cluster_;
  std::unique_ptr<EtcdClient> client_;
};

// Hands a status from a callback thread to the test thread.
class StatusLatch {
 public:
  void Set(absl::Status status) {
    MutexLock lock(&mu_);
    if (!status_.has_value()) status_ = std::move(status);
    ++count_;
  }
  std::optional<absl::Status> WaitFor(absl::Duration timeout) {
    MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(this, &StatusLatch::IsSet), timeout);
    return status_;
  }
  int count() {
    MutexLock lock(&mu_);
    return count_;
  }

 private:
  bool IsSet() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return status_.has_value(); }
  Mutex mu_;
  std::optional<absl::Status> status_ ABSL_GUARDED_BY(mu_);
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST(EtcdClientConnect, UnavailableNamesTheEndpoints) {
  EtcdClientOptions options;
  const int port = vipu::testing::FreePort();  // nothing listens there
  options.endpoints = *ParseEtcdEndpoints(absl::StrCat("http://127.0.0.1:", port));
  options.call_timeout = absl::Milliseconds(500);
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(client.status().message()),
              HasSubstr(absl::StrCat("http://127.0.0.1:", port)));
}

TEST_F(EtcdTest, TxnWritesOnlyWhenComparesHold) {
  StartCluster(1);
  // Create-if-absent: the first succeeds, the second finds the key.
  absl::StatusOr<TxnResult> created =
      client_->Txn({TxnCompare::CreateRevision("/t/a", 0)}, {TxnOp::Put("/t/a", "1")});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(created->succeeded);
  absl::StatusOr<TxnResult> again =
      client_->Txn({TxnCompare::CreateRevision("/t/a", 0)}, {TxnOp::Put("/t/a", "2")});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->succeeded);
  EXPECT_EQ(again->revision, created->revision);  // nothing written

  absl::StatusOr<std::optional<KeyValue>> a = client_->Get("/t/a");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->has_value());
  EXPECT_EQ((*a)->value, "1");
  EXPECT_EQ((*a)->create_revision, created->revision);
  EXPECT_EQ((*a)->mod_revision, created->revision);
  EXPECT_EQ((*a)->version, 1);

  // MOD, VERSION and VALUE compares, right and wrong.
  const int64_t mod = (*a)->mod_revision;
  EXPECT_FALSE(client_->Txn({TxnCompare::ModRevision("/t/a", mod + 1)}, {TxnOp::Put("/t/a", "x")})
                   ->succeeded);
  EXPECT_FALSE(
      client_->Txn({TxnCompare::Version("/t/a", 2)}, {TxnOp::Put("/t/a", "x")})->succeeded);
  EXPECT_FALSE(
      client_->Txn({TxnCompare::Value("/t/a", "2")}, {TxnOp::Put("/t/a", "x")})->succeeded);
  absl::StatusOr<TxnResult> all =
      client_->Txn({TxnCompare::ModRevision("/t/a", mod), TxnCompare::Version("/t/a", 1),
                    TxnCompare::Value("/t/a", "1")},
                   {TxnOp::Put("/t/a", "3"), TxnOp::Put("/t/b/1", "b1"), TxnOp::Put("/t/b/2", "b2"),
                    TxnOp::Put("/t/c", "c")});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->succeeded);
  EXPECT_EQ(client_->Get("/t/a")->value().value, "3");

  // Delete and DeletePrefix.
  ASSERT_TRUE(client_->Txn({}, {TxnOp::Delete("/t/c"), TxnOp::DeletePrefix("/t/b/")})->succeeded);
  EXPECT_FALSE(client_->Get("/t/c")->has_value());
  absl::StatusOr<RangeResult> left = client_->RangePrefix("/t/");
  ASSERT_TRUE(left.ok()) << left.status();
  ASSERT_EQ(left->kvs.size(), 1u);
  EXPECT_EQ(left->kvs[0].key, "/t/a");
  EXPECT_FALSE(client_->Get("/t/missing")->has_value());
}

TEST_F(EtcdTest, RangePrefixPagesAtOneRevision) {
  StartCluster(1, /*page_size=*/7);
  std::vector<TxnOp> ops;
  for (int i = 0; i < 50; ++i) ops.push_back(TxnOp::Put(absl::StrCat("/r/k", 100 + i), "v"));
  ops.push_back(TxnOp::Put("/r0", "outside"));  // the range end itself
  ops.push_back(TxnOp::Put("/q", "outside"));
  ASSERT_TRUE(client_->Txn({}, ops)->succeeded);

  // A writer adds keys under the prefix while the pages are read: a
  // snapshot has none newer than its revision, and every key at it.
  std::atomic<bool> stop{false};
  std::unique_ptr<EtcdClient> writer_client = NewClient();
  ASSERT_NE(writer_client, nullptr);
  std::thread writer([&] {
    for (int i = 0; !stop.load(); ++i) {
      (void)writer_client->Txn({}, {TxnOp::Put(absl::StrCat("/r/n", 1000 + i), "new")});
    }
  });
  for (int round = 0; round < 5; ++round) {
    absl::StatusOr<RangeResult> range = client_->RangePrefix("/r/");
    ASSERT_TRUE(range.ok()) << range.status();
    size_t old_keys = 0;
    for (size_t i = 0; i < range->kvs.size(); ++i) {
      const KeyValue& kv = range->kvs[i];
      EXPECT_LE(kv.mod_revision, range->revision) << kv.key;
      EXPECT_EQ(kv.key.rfind("/r/", 0), 0u) << kv.key;
      if (i > 0) {
        EXPECT_LT(range->kvs[i - 1].key, kv.key);
      }
      if (kv.key.rfind("/r/k", 0) == 0) ++old_keys;
    }
    EXPECT_EQ(old_keys, 50u);
    // Every key that existed at the revision: the count of new keys equals
    // what etcd holds at that revision (checked against a fresh snapshot:
    // keys created later have a higher create revision).
    absl::StatusOr<RangeResult> later = client_->RangePrefix("/r/");
    ASSERT_TRUE(later.ok()) << later.status();
    size_t at_revision = 0;
    for (const KeyValue& kv : later->kvs) {
      if (kv.create_revision <= range->revision) ++at_revision;
    }
    EXPECT_EQ(at_revision, range->kvs.size());
  }
  stop = true;
  writer.join();
}

TEST_F(EtcdTest, TooManyOpsAndTooLargeAreRefusedAndWriteNothing) {
  StartCluster(1);
  std::vector<TxnOp> ops;
  for (int i = 0; i < 129; ++i) ops.push_back(TxnOp::Put(absl::StrCat("/big/", i), "v"));
  absl::StatusOr<TxnResult> refused = client_->Txn({}, ops);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("too many operations"));

  // Over --max-request-bytes (1.5 MiB) and over gRPC's limit above it.
  for (size_t bytes : {size_t{1700} * 1024, size_t{3} * 1024 * 1024}) {
    absl::StatusOr<TxnResult> large =
        client_->Txn({}, {TxnOp::Put("/big/large", std::string(bytes, 'x'))});
    ASSERT_FALSE(large.ok()) << bytes;
    EXPECT_EQ(large.status().code(), absl::StatusCode::kInvalidArgument) << large.status();
  }
  absl::StatusOr<RangeResult> nothing = client_->RangePrefix("/big/");
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_TRUE(nothing->kvs.empty());

  // 128 is allowed.
  ops.pop_back();
  EXPECT_TRUE(client_->Txn({}, ops)->succeeded);
}

TEST_F(EtcdTest, LeaseKeeperKeepsKeysAndReportsLoss) {
  StartCluster(1);
  StatusLatch lost;
  absl::StatusOr<std::unique_ptr<coordination::LeaseKeeper>> keeper =
      coordination::LeaseKeeper::Start(client_.get(), absl::Seconds(2),
                                       [&](absl::Status why) { lost.Set(why); });
  ASSERT_TRUE(keeper.ok()) << keeper.status();
  ASSERT_TRUE(client_->Txn({}, {TxnOp::Put("/lease/k", "v", (*keeper)->id())})->succeeded);
  // Twice the TTL: only keep-alives keep the key.
  EXPECT_FALSE(lost.WaitFor(absl::Seconds(4)).has_value());
  EXPECT_TRUE((*keeper)->alive());
  EXPECT_TRUE(client_->Get("/lease/k")->has_value());

  // Revoked behind the keeper's back: the next keep-alive answers TTL 0.
  ASSERT_TRUE(client_->LeaseRevoke((*keeper)->id()).ok());
  std::optional<absl::Status> why = lost.WaitFor(absl::Seconds(60));
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->code(), absl::StatusCode::kNotFound) << *why;
  EXPECT_FALSE((*keeper)->alive());
  EXPECT_FALSE(client_->Get("/lease/k")->has_value());

  // Stop() revokes; a stopped keeper's key is gone at once.
  absl::StatusOr<std::unique_ptr<coordination::LeaseKeeper>> second =
      coordination::LeaseKeeper::Start(client_.get(), absl::Seconds(30), nullptr);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(client_->Txn({}, {TxnOp::Put("/lease/k2", "v", (*second)->id())})->succeeded);
  EXPECT_TRUE((*second)->Stop().ok());
  EXPECT_FALSE(client_->Get("/lease/k2")->has_value());
  EXPECT_EQ(lost.count(), 1);
}

TEST_F(EtcdTest, LeaseKeeperReportsLossWhenEtcdIsGone) {
  StartCluster(1);
  StatusLatch lost;
  absl::StatusOr<std::unique_ptr<coordination::LeaseKeeper>> keeper =
      coordination::LeaseKeeper::Start(client_.get(), absl::Seconds(2),
                                       [&](absl::Status why) { lost.Set(why); });
  ASSERT_TRUE(keeper.ok()) << keeper.status();
  const absl::Time known_before = (*keeper)->expiry();
  ASSERT_GT(known_before, absl::Now());
  const absl::Time killed = absl::Now();
  cluster_->Kill(0);
  // What the keeper believes rests on answers etcd gave before it died: the
  // lease cannot be believed to last beyond the TTL after the kill, which is
  // the direction that matters for a leader serving from memory.
  EXPECT_LE((*keeper)->expiry(), killed + (*keeper)->ttl());
  std::optional<absl::Status> why = lost.WaitFor(absl::Seconds(60));
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(absl::IsUnavailable(*why) || absl::IsDeadlineExceeded(*why)) << *why;
  // Given up only once the lease could have expired, not while it surely held.
  EXPECT_GE(absl::Now(), known_before);
  EXPECT_FALSE((*keeper)->alive());
  EXPECT_EQ((*keeper)->expiry(), absl::InfinitePast());
}

TEST_F(EtcdTest, CampaignAndLeader) {
  StartCluster(1);
  coordination::LeaderElection a(client_.get(), {"/vipu/leader", "host-a:8090", absl::Seconds(3)});
  coordination::LeaderElection b(client_.get(), {"/vipu/leader", "host-b:8090", absl::Seconds(3)});
  EXPECT_FALSE(*a.CurrentLeader());  // nobody yet

  absl::StatusOr<etcd::LeaderKey> key = a.WinLeadership(absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_TRUE(a.is_leader());
  EXPECT_EQ(key->name, "/vipu/leader");
  EXPECT_EQ(key->key.rfind("/vipu/leader/", 0), 0u) << key->key;
  EXPECT_GT(key->rev, 0);
  EXPECT_EQ(*b.CurrentLeader(), std::optional<std::string>("host-a:8090"));
  EXPECT_EQ(*client_->LeaderValue("/vipu/leader"), std::optional<std::string>("host-a:8090"));
  // Proclaim changes the advertised value.
  ASSERT_TRUE(client_->Proclaim(*key, "host-a:9090").ok());
  EXPECT_EQ(*b.CurrentLeader(), std::optional<std::string>("host-a:9090"));

  // B waits in vain while A leads, and leaves no key behind.
  absl::StatusOr<etcd::LeaderKey> b_key = b.WinLeadership(absl::Now() + absl::Seconds(1));
  ASSERT_FALSE(b_key.ok());
  EXPECT_EQ(b_key.status().code(), absl::StatusCode::kDeadlineExceeded) << b_key.status();
  EXPECT_FALSE(b.is_leader());
  EXPECT_EQ(client_->RangePrefix("/vipu/leader/")->kvs.size(), 1u);
  EXPECT_EQ(a.WinLeadership(absl::Now() + absl::Seconds(1)).status().code(),
            absl::StatusCode::kFailedPrecondition);

  // A resigns: B takes over at once.
  ASSERT_TRUE(a.Resign().ok());
  EXPECT_FALSE(a.is_leader());
  absl::StatusOr<etcd::LeaderKey> b_wins = b.WinLeadership(absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(b_wins.ok()) << b_wins.status();
  EXPECT_EQ(*a.CurrentLeader(), std::optional<std::string>("host-b:8090"));
}

TEST_F(EtcdTest, FencedWritesOfALostLeaderChangeNothing) {
  StartCluster(1);
  coordination::LeaderElection a(client_.get(), {"/vipu/leader", "a", absl::Seconds(3)});
  coordination::LeaderElection b(client_.get(), {"/vipu/leader", "b", absl::Seconds(3)});
  // Before any leadership the fence never holds.
  EXPECT_FALSE(client_->Txn(a.Fence(), {TxnOp::Put("/state/x", "never")})->succeeded);

  StatusLatch a_lost;
  a.OnLost([&](absl::Status why) { a_lost.Set(why); });
  absl::StatusOr<etcd::LeaderKey> a_key = a.WinLeadership(absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(a_key.ok()) << a_key.status();
  ASSERT_TRUE(client_->Txn(a.Fence(), {TxnOp::Put("/state/x", "from a")})->succeeded);

  // B campaigns meanwhile; A's lease ends (as if A had paused past its TTL).
  absl::StatusOr<LeaderKey> b_key = absl::UnknownError("not run");
  std::thread campaign([&] { b_key = b.WinLeadership(absl::Now() + absl::Seconds(20)); });
  ASSERT_TRUE(client_->LeaseRevoke(a_key->lease).ok());
  campaign.join();
  ASSERT_TRUE(b_key.ok()) << b_key.status();
  EXPECT_TRUE(client_->Txn(b.Fence(), {TxnOp::Put("/state/x", "from b")})->succeeded);

  // A's fenced write is refused whether or not A noticed yet.
  absl::StatusOr<TxnResult> stale =
      client_->Txn(a.Fence(), {TxnOp::Put("/state/x", "stale a"), TxnOp::Put("/state/y", "a")});
  ASSERT_TRUE(stale.ok()) << stale.status();
  EXPECT_FALSE(stale->succeeded);
  EXPECT_EQ(client_->Get("/state/x")->value().value, "from b");
  EXPECT_FALSE(client_->Get("/state/y")->has_value());

  // And A learns it lost, once.
  std::optional<absl::Status> why = a_lost.WaitFor(absl::Seconds(5));
  ASSERT_TRUE(why.has_value());
  EXPECT_FALSE(a.is_leader());
  EXPECT_EQ(a_lost.count(), 1);
  EXPECT_EQ(*a.CurrentLeader(), std::optional<std::string>("b"));
}

TEST_F(EtcdTest, LeaseLossCancelsACampaign) {
  StartCluster(1);
  coordination::LeaderElection a(client_.get(), {"/vipu/leader", "a", absl::Seconds(30)});
  coordination::LeaderElection b(client_.get(), {"/vipu/leader", "b", absl::Seconds(2)});
  ASSERT_TRUE(a.WinLeadership(absl::Now() + absl::Seconds(10)).ok());
  absl::StatusOr<LeaderKey> b_key = absl::UnknownError("not run");
  std::thread campaign([&] { b_key = b.WinLeadership(absl::Now() + absl::Seconds(20)); });
  // B's lease is the only one besides A's 30 s one: revoke it under B.
  // Until B's key is queued behind A's (each look is a call to etcd).
  absl::StatusOr<RangeResult> keys;
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  do {
    keys = client_->RangePrefix("/vipu/leader/");
  } while ((!keys.ok() || keys->kvs.size() < 2) && absl::Now() < give_up);
  ASSERT_TRUE(keys.ok()) << keys.status();
  ASSERT_EQ(keys->kvs.size(), 2u);
  const KeyValue& b_queued =
      keys->kvs[0].create_revision > keys->kvs[1].create_revision ? keys->kvs[0] : keys->kvs[1];
  ASSERT_TRUE(client_->LeaseRevoke(b_queued.lease).ok());
  campaign.join();
  ASSERT_FALSE(b_key.ok());
  EXPECT_EQ(b_key.status().code(), absl::StatusCode::kUnavailable) << b_key.status();
  // Cancelled by the loss, not ended by its deadline (DEADLINE_EXCEEDED).
  EXPECT_THAT(std::string(b_key.status().message()), HasSubstr("lease lost"));
}

TEST_F(EtcdTest, ReadsAndWritesFailOverWhenTheMemberIsKilled) {
  StartCluster(3);
  ASSERT_TRUE(client_->Txn({}, {TxnOp::Put("/f/a", "1"), TxnOp::Put("/f/b", "2")})->succeeded);
  // Kill whichever member the clients talk to. `second` has not called
  // since it connected.
  int victim = -1;
  for (int i = 0; i < cluster_->size(); ++i) {
    if (cluster_->endpoint(i) == client_->current_endpoint()) victim = i;
  }
  ASSERT_GE(victim, 0);
  std::unique_ptr<EtcdClient> second_client;
  {
    EtcdClientOptions options;
    options.endpoints =
        *ParseEtcdEndpoints(absl::StrCat(cluster_->endpoint(victim), ",", cluster_->endpoints()));
    options.call_timeout = absl::Seconds(3);
    absl::StatusOr<std::unique_ptr<EtcdClient>> connected = EtcdClient::Connect(options);
    ASSERT_TRUE(connected.ok()) << connected.status();
    second_client = *std::move(connected);
    ASSERT_EQ(second_client->current_endpoint(), cluster_->endpoint(victim));
  }
  cluster_->Kill(victim);

  // Reads go on, from the members left.
  absl::StatusOr<std::optional<KeyValue>> a = client_->Get("/f/a");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(a->has_value());
  EXPECT_EQ((*a)->value, "1");
  EXPECT_NE(client_->current_endpoint(), cluster_->endpoint(victim));
  absl::StatusOr<RangeResult> range = client_->RangePrefix("/f/");
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ(range->kvs.size(), 2u);

  // By now the second client's channel has seen its connection close, so
  // the Txn finds the member unreachable, was never sent, and moves on.
  absl::StatusOr<TxnResult> written =
      second_client->Txn({TxnCompare::CreateRevision("/f/c", 0)}, {TxnOp::Put("/f/c", "3")});
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(written->succeeded);
  EXPECT_NE(second_client->current_endpoint(), cluster_->endpoint(victim));

  // A read whose member dies moves on too: kill the member now current.
  int second = -1;
  for (int i = 0; i < cluster_->size(); ++i) {
    if (cluster_->endpoint(i) == client_->current_endpoint()) second = i;
  }
  ASSERT_GE(second, 0);
  ASSERT_TRUE(cluster_->Start(victim).ok());  // keeps a quorum of two
  cluster_->Kill(second);
  absl::StatusOr<std::optional<KeyValue>> c = client_->Get("/f/c");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->has_value());
  EXPECT_EQ((*c)->value, "3");

  // The restarted member came back with its data and caught up.
  EtcdClientOptions only;
  only.endpoints = *ParseEtcdEndpoints(cluster_->endpoint(victim));
  absl::StatusOr<std::unique_ptr<EtcdClient>> back = EtcdClient::Connect(only);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)->Get("/f/c")->value().value, "3");
}

}  // namespace
}  // namespace vipu::storage::etcd
