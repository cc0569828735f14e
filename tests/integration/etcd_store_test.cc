// The etcd store against a real etcd member: the storage contract every
// store passes, and what only the etcd store has (its format, its fence, and
// groups bigger than one etcd transaction).
#include "storage/etcd/etcd_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/etcd/etcd_client.h"
#include "storage/etcd/etcd_layout.h"
#include "storage/etcd/state_import.h"
#include "storage/sqlite_store.h"
#include "tests/etcd_harness.h"
#include "tests/integration/cannot_run.h"
#include "tests/unit/support/storage_contract.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::storage {
namespace {

using etcd::EtcdClient;
using etcd::EtcdStore;
using etcd::EtcdStoreOptions;
using vipu::testing::EtcdCluster;

// One etcd member for the whole binary; each store gets a prefix of its own.
EtcdCluster* SharedEtcd() {
  static std::unique_ptr<EtcdCluster> cluster = [] {
    absl::StatusOr<std::unique_ptr<EtcdCluster>> c = EtcdCluster::Launch({});
    if (!c.ok()) {
      ADD_FAILURE() << c.status();
      return std::unique_ptr<EtcdCluster>();
    }
    return std::move(*c);
  }();
  return cluster.get();
}

std::unique_ptr<EtcdClient> Connect(EtcdCluster* cluster) {
  absl::StatusOr<std::vector<etcd::EtcdEndpoint>> endpoints =
      etcd::ParseEtcdEndpoints(cluster->endpoints());
  if (!endpoints.ok()) return nullptr;
  etcd::EtcdClientOptions options;
  options.endpoints = *endpoints;
  absl::StatusOr<std::unique_ptr<EtcdClient>> client = EtcdClient::Connect(options);
  if (!client.ok()) {
    ADD_FAILURE() << client.status();
    return nullptr;
  }
  return std::move(*client);
}

// An EtcdStore with the client it uses, as one Store the suite can own.
class OwnedEtcdStore final : public Store {
 public:
  OwnedEtcdStore(std::unique_ptr<EtcdClient> client, std::unique_ptr<EtcdStore> store)
      : client_(std::move(client)), store_(std::move(store)) {}
  ~OwnedEtcdStore() override { store_.reset(); }

  absl::Status Read(const std::function<absl::Status(ReadTxn&)>& fn) override {
    return store_->Read(fn);
  }
  absl::Status Write(const std::function<absl::Status(WriteTxn&)>& fn) override {
    return store_->Write(fn);
  }
  void WriteAsync(std::function<absl::Status(WriteTxn&)> fn,
                  std::function<void(absl::Status)> done) override {
    store_->WriteAsync(std::move(fn), std::move(done));
  }
  absl::Status Backup(const std::string& path) override { return store_->Backup(path); }
  uint64_t commits() const override { return store_->commits(); }
  uint64_t writes() const override { return store_->writes(); }
  uint64_t pending_writes() const override { return store_->pending_writes(); }
  void SetCommitObserver(std::function<void(double, size_t)> observer) override {
    store_->SetCommitObserver(std::move(observer));
  }

 private:
  std::unique_ptr<EtcdClient> client_;
  std::unique_ptr<EtcdStore> store_;
};

// The prefix of a test directory: its last path element.
std::string PrefixOf(const std::string& dir) {
  return absl::StrCat("/", dir.substr(dir.rfind('/') + 1), "/");
}

std::unique_ptr<Store> OpenEtcdStore(const std::string& dir) {
  EtcdCluster* cluster = SharedEtcd();
  if (cluster == nullptr) return nullptr;
  std::unique_ptr<EtcdClient> client = Connect(cluster);
  if (!client) return nullptr;
  EtcdStoreOptions options;
  options.prefix = PrefixOf(dir);
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Open(client.get(), options);
  if (!store.ok()) {
    ADD_FAILURE() << store.status();
    return nullptr;
  }
  return std::make_unique<OwnedEtcdStore>(std::move(client), std::move(*store));
}

INSTANTIATE_TEST_SUITE_P(Etcd, StoreContract,
                         ::testing::Values(StoreContractParam{"Etcd", OpenEtcdStore}),
                         StoreContractParamName);

class EtcdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = SharedEtcd();
    ASSERT_NE(cluster_, nullptr);
    client_ = Connect(cluster_);
    ASSERT_NE(client_, nullptr);
    static std::atomic<int> n{0};
    prefix_ = absl::StrCat("/etcd-store-test-", getpid(), "-", n++, "/");
  }

  absl::StatusOr<std::unique_ptr<EtcdStore>> Open(EtcdStoreOptions options = {}) {
    options.prefix = prefix_;
    return EtcdStore::Open(client_.get(), std::move(options));
  }

  EtcdCluster* cluster_ = nullptr;
  std::unique_ptr<EtcdClient> client_;
  std::string prefix_;
};

TEST_F(EtcdStoreTest, RefusesAPrefixOfAnotherFormatAndChangesNothing) {
  ASSERT_TRUE(client_->Txn({}, {etcd::TxnOp::Put(prefix_ + "something", "else")}).ok());
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = Open();
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("another format"), std::string::npos) << store.status();
  absl::StatusOr<etcd::RangeResult> range = client_->RangePrefix(prefix_);
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->kvs.size(), 1u);
}

TEST_F(EtcdStoreTest, RefusesANewerFormatVersion) {
  ASSERT_TRUE(client_->Txn({}, {etcd::TxnOp::Put(prefix_ + "format", "open-vipu-state 99")}).ok());
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = Open();
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(store.status().message().find("version 99"), std::string::npos) << store.status();
}

TEST_F(EtcdStoreTest, RefusesABadPrefix) {
  for (const std::string bad : {"", "/", "vipu/", "/vipu", "/vi pu/"}) {
    EtcdStoreOptions options;
    options.prefix = bad;
    absl::StatusOr<std::unique_ptr<EtcdStore>> store = EtcdStore::Open(client_.get(), options);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST_F(EtcdStoreTest, AWriteAfterTheFenceFailsChangesNothingAndStopsTheStore) {
  const std::string fence_key = prefix_.substr(0, prefix_.size() - 1) + "-fence";
  absl::StatusOr<etcd::TxnResult> put = client_->Txn({}, {etcd::TxnOp::Put(fence_key, "x")});
  ASSERT_TRUE(put.ok());
  absl::StatusOr<std::optional<etcd::KeyValue>> kv = client_->Get(fence_key);
  ASSERT_TRUE(kv.ok() && kv->has_value());
  std::atomic<int> lost{0};
  EtcdStoreOptions options;
  options.fence = {etcd::TxnCompare::CreateRevision(fence_key, (*kv)->create_revision)};
  options.on_lost = [&](absl::Status) { ++lost; };
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)
                  ->Write([](WriteTxn& txn) {
                    return txn.InsertAgent({"a1", "h", 1, {}});
                  })
                  .ok());
  // Another member takes over: the fence no longer holds.
  ASSERT_TRUE(client_->Txn({}, {etcd::TxnOp::Delete(fence_key)}).ok());
  absl::Status s = (*store)->Write([](WriteTxn& txn) {
    return txn.InsertAgent({"a2", "h", 2, {}});
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(lost.load(), 1);
  // Nothing of the refused write in etcd, and no read answered from a copy
  // that another leader may have changed since.
  absl::StatusOr<std::optional<etcd::KeyValue>> a2 = client_->Get(prefix_ + "state/agents/a2");
  ASSERT_TRUE(a2.ok());
  EXPECT_FALSE(a2->has_value());
  absl::Status read = (*store)->Read([](ReadTxn& txn) { return txn.GetAgent("a1").status(); });
  EXPECT_EQ(read.code(), absl::StatusCode::kUnavailable) << read;
  EXPECT_NE(read.message().find("stopped leading"), std::string::npos) << read;
  // And it stays refused, even once the key is back.
  ASSERT_TRUE(client_->Txn({}, {etcd::TxnOp::Put(fence_key, "y")}).ok());
  s = (*store)->Write([](WriteTxn& txn) { return txn.InsertAgent({"a3", "h", 3, {}}); });
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(lost.load(), 1);
}

// The leadership's lease bounds how long the copy in memory may be served:
// past it, reads and writes are refused without breaking the store, and
// once the lease is confirmed again the store serves again.
TEST_F(EtcdStoreTest, NothingIsAnsweredFromMemoryOnceTheLeadershipMayHaveLapsed) {
  std::atomic<bool> held{true};
  std::atomic<int> lost{0};
  EtcdStoreOptions options;
  options.held_until = [&] { return held.load() ? absl::InfiniteFuture() : absl::InfinitePast(); };
  options.on_lost = [&](absl::Status) { ++lost; };
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = Open(options);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)
                  ->Write([](WriteTxn& txn) {
                    return txn.InsertAgent({"a1", "h", 1, {}});
                  })
                  .ok());
  held = false;
  absl::Status read = (*store)->Read([](ReadTxn& txn) { return txn.GetAgent("a1").status(); });
  EXPECT_EQ(read.code(), absl::StatusCode::kUnavailable) << read;
  EXPECT_NE(read.message().find("may no longer lead"), std::string::npos) << read;
  absl::Status write = (*store)->Write([](WriteTxn& txn) {
    return txn.InsertAgent({"a2", "h", 2, {}});
  });
  EXPECT_EQ(write.code(), absl::StatusCode::kUnavailable) << write;
  absl::StatusOr<std::optional<etcd::KeyValue>> a2 = client_->Get(prefix_ + "state/agents/a2");
  ASSERT_TRUE(a2.ok());
  EXPECT_FALSE(a2->has_value());
  EXPECT_EQ(lost.load(), 0);
  held = true;
  EXPECT_TRUE((*store)->Read([](ReadTxn& txn) { return txn.GetAgent("a1").status(); }).ok());
  EXPECT_TRUE((*store)
                  ->Write([](WriteTxn& txn) {
                    return txn.InsertAgent({"a2", "h", 2, {}});
                  })
                  .ok());
}

TEST_F(EtcdStoreTest, AWriteOfMoreKeysThanOneTransactionTakesIsWrittenWhole) {
  EtcdStoreOptions options;
  options.max_ops_per_txn = 16;
  {
    absl::StatusOr<std::unique_ptr<EtcdStore>> store = Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE(
        (*store)
            ->Write([](WriteTxn& txn) {
              for (int i = 0; i < 100; ++i) {
                absl::Status s = txn.InsertAgent(
                    {absl::StrCat("m", i), "127.0.0.1", static_cast<uint32_t>(9000 + i), {}});
                if (!s.ok()) return s;
              }
              return absl::OkStatus();
            })
            .ok());
    EXPECT_GE((*store)->commits(), 1u);
  }
  absl::StatusOr<std::unique_ptr<EtcdStore>> again = Open(options);
  ASSERT_TRUE(again.ok()) << again.status();
  size_t agents = 0;
  ASSERT_TRUE((*again)
                  ->Read([&](ReadTxn& txn) {
                    absl::StatusOr<std::vector<fabric::Agent>> list = txn.ListAgents();
                    if (!list.ok()) return list.status();
                    agents = list->size();
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(agents, 100u);
}

// A store on a member of its own, started with `flags`, for the limits of
// etcd that the shared member keeps at their defaults.
struct LimitedEtcd {
  std::unique_ptr<EtcdCluster> cluster;
  std::unique_ptr<EtcdClient> client;
  std::unique_ptr<EtcdStore> store;
  std::atomic<int> lost{0};
};

void StartLimited(const std::vector<std::string>& flags, LimitedEtcd* e) {
  vipu::testing::EtcdClusterOptions options;
  options.extra_flags = flags;
  absl::StatusOr<std::unique_ptr<EtcdCluster>> cluster = EtcdCluster::Launch(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  e->cluster = std::move(*cluster);
  e->client = Connect(e->cluster.get());
  ASSERT_NE(e->client, nullptr);
  EtcdStoreOptions store_options;
  store_options.prefix = "/vipu/";
  store_options.on_lost = [e](absl::Status) { ++e->lost; };
  absl::StatusOr<std::unique_ptr<EtcdStore>> store =
      EtcdStore::Open(e->client.get(), store_options);
  ASSERT_TRUE(store.ok()) << store.status();
  e->store = std::move(*store);
}

absl::Status InsertAgent(Store& store, const std::string& id, size_t host_bytes) {
  return store.Write([&](WriteTxn& txn) {
    return txn.InsertAgent({id, std::string(host_bytes, 'h'), 9000, {}});
  });
}

bool HasAgent(Store& store, const std::string& id) {
  return store.Read([&](ReadTxn& txn) { return txn.GetAgent(id).status(); }).ok();
}

TEST(EtcdStoreLimitsTest, AWriteOverEtcdsRequestLimitIsRefusedAndChangesNothing) {
  if (!EtcdCluster::Available()) VIPU_CANNOT_RUN_HERE() << "no etcd binary";
  LimitedEtcd e;
  StartLimited({"--max-request-bytes=4096"}, &e);
  if (HasFatalFailure()) return;
  absl::Status s = InsertAgent(*e.store, "big", 8192);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("etcd refused the write"), std::string::npos) << s;
  EXPECT_NE(s.message().find("too large"), std::string::npos) << s;
  // Nothing of it, in etcd or in what the store serves; the store goes on.
  EXPECT_FALSE(HasAgent(*e.store, "big"));
  absl::StatusOr<std::optional<etcd::KeyValue>> kv = e.client->Get("/vipu/state/agents/big");
  ASSERT_TRUE(kv.ok());
  EXPECT_FALSE(kv->has_value());
  EXPECT_TRUE(InsertAgent(*e.store, "small", 10).ok());
  EXPECT_TRUE(HasAgent(*e.store, "small"));
  EXPECT_EQ(e.lost.load(), 0);
}

TEST(EtcdStoreLimitsTest, AWriteIntoAFullEtcdIsRefusedAndChangesNothing) {
  if (!EtcdCluster::Available()) VIPU_CANNOT_RUN_HERE() << "no etcd binary";
  LimitedEtcd e;
  StartLimited({"--quota-backend-bytes=1048576"}, &e);
  if (HasFatalFailure()) return;
  // Fill etcd until its space quota refuses a write.
  absl::Status s;
  int written = 0;
  for (; written < 10000; ++written) {
    s = InsertAgent(*e.store, absl::StrCat("m", written), 16 * 1024);
    if (!s.ok()) break;
  }
  ASSERT_FALSE(s.ok()) << "etcd took " << written << " agents of 16 KiB under a 1 MiB quota";
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("database space exceeded"), std::string::npos) << s;
  const std::string refused = absl::StrCat("m", written);
  EXPECT_FALSE(HasAgent(*e.store, refused));
  absl::StatusOr<std::optional<etcd::KeyValue>> kv =
      e.client->Get(absl::StrCat("/vipu/state/agents/", refused));
  ASSERT_TRUE(kv.ok());
  EXPECT_FALSE(kv->has_value());
  // What was acknowledged before stays, and the store still serves it.
  EXPECT_TRUE(HasAgent(*e.store, absl::StrCat("m", written - 1)));
  EXPECT_EQ(e.lost.load(), 0);
}

TEST_F(EtcdStoreTest, BackupNamesEtcdctl) {
  absl::StatusOr<std::unique_ptr<EtcdStore>> store = Open();
  ASSERT_TRUE(store.ok()) << store.status();
  absl::Status s = (*store)->Backup("/tmp/x.db");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("etcdctl snapshot save"), std::string::npos);
}

TEST_F(EtcdStoreTest, ImportCarriesASqliteStateOverWholeAndOnlyOnce) {
  test::TempDir dir("vipu-import");
  absl::StatusOr<std::unique_ptr<SqliteStore>> sqlite = SqliteStore::Open(dir.File("vipu.db"));
  ASSERT_TRUE(sqlite.ok()) << sqlite.status();
  uint64_t last_generation = 0;
  ASSERT_TRUE(
      (*sqlite)
          ->Write([&](WriteTxn& txn) {
            for (int i = 0; i < 8; ++i) {
              absl::Status s = txn.InsertAgent(
                  {absl::StrCat("ag", i), "127.0.0.1", static_cast<uint32_t>(7000 + i), {}});
              if (!s.ok()) return s;
            }
            fabric::Cluster c;
            c.id = "pod";
            for (int i = 0; i < 8; ++i) c.agent_ids.push_back(absl::StrCat("ag", i));
            if (absl::Status s = txn.InsertCluster(c); !s.ok()) return s;
            fabric::Allocation a{"default", "pod", c.agent_ids};
            if (absl::Status s = txn.InsertAllocation(a); !s.ok()) return s;
            fabric::Partition p;
            p.id = "p1";
            p.cluster_id = "pod";
            p.allocation_id = "default";
            p.ready_state = fabric::ReadyState::kActive;
            for (uint32_t ipu = 0; ipu < 4; ++ipu) {
              fabric::PartitionIpu pi;
              pi.ipu = {"ag1", ipu};
              pi.topology_id = 4 + ipu;
              pi.routing_id = ipu;
              p.ipus.push_back(pi);
            }
            absl::StatusOr<uint64_t> g = txn.NextGeneration();
            if (!g.ok()) return g.status();
            p.generation = *g;
            // A later generation went to a partition since removed.
            absl::StatusOr<uint64_t> later = txn.NextGeneration();
            if (!later.ok()) return later.status();
            last_generation = *later;
            if (absl::Status s = txn.InsertPartition(p); !s.ok()) return s;
            return txn.SetPartitionShared("p1", true);
          })
          .ok());
  absl::StatusOr<etcd::ImportCounts> counts =
      etcd::ImportState(**sqlite, client_.get(), prefix_, /*max_ops_per_txn=*/4);
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(counts->agents, 8);
  EXPECT_EQ(counts->partitions, 1);
  EXPECT_EQ(counts->generation, last_generation);
  EXPECT_GT(counts->transactions, 2);
  // A second import into the same prefix writes nothing.
  absl::StatusOr<etcd::ImportCounts> again = etcd::ImportState(**sqlite, client_.get(), prefix_);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();

  absl::StatusOr<std::unique_ptr<EtcdStore>> store = Open();
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)
                  ->Read([&](ReadTxn& txn) {
                    absl::StatusOr<fabric::Partition> p = txn.GetPartition("p1");
                    EXPECT_TRUE(p.ok()) << p.status();
                    if (p.ok()) {
                      EXPECT_EQ(p->ipus.size(), 4u);
                      EXPECT_EQ(p->ready_state, fabric::ReadyState::kActive);
                    }
                    EXPECT_TRUE(*txn.IsPartitionShared("p1"));
                    EXPECT_EQ(txn.ListAgents()->size(), 8u);
                    EXPECT_EQ(txn.GetAllocation("default")->agent_ids.size(), 8u);
                    return absl::OkStatus();
                  })
                  .ok());
  // Generations go on above every one the file handed out.
  absl::StatusOr<uint64_t> next = absl::UnknownError("not run");
  ASSERT_TRUE((*store)
                  ->Write([&](WriteTxn& txn) {
                    next = txn.NextGeneration();
                    return next.status();
                  })
                  .ok());
  EXPECT_GT(*next, last_generation);
}

}  // namespace
}  // namespace vipu::storage
