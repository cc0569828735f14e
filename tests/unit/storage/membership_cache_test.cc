// The membership cache (storage/membership_cache.h): ClusterRef and
// AllocationRef are served from memory after the first read, and are always
// what the transaction's own snapshot holds: a delete then a read never
// returns the deleted cluster, a reader that began before a change neither
// sees it nor leaves it in the cache, and the writer's own group sees its
// changes.
#include "storage/membership_cache.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "tests/unit/support/storage_test_util.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::storage {
namespace {

using fabric::Agent;
using fabric::Allocation;
using fabric::Cluster;
using test::TempDir;
using test_util::MakeAgent;
using ::testing::ElementsAre;

Cluster MakeCluster(const std::string& id, const std::vector<std::string>& agents) {
  Cluster c;
  c.id = id;
  c.agent_ids = agents;
  c.num_ilds = 1;
  return c;
}

Allocation MakeAllocation(const std::string& id, const std::string& cluster,
                          const std::vector<std::string>& agents) {
  Allocation a;
  a.id = id;
  a.cluster_id = cluster;
  a.agent_ids = agents;
  return a;
}

// A one-shot gate between two threads.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class MembershipCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteStore::Open(dir_.path() + "/vipu.db");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ASSERT_TRUE(store_
                    ->Write([](WriteTxn& txn) -> absl::Status {
                      for (const char* id : {"a0", "a1", "a2", "a3"}) {
                        if (absl::Status s = txn.InsertAgent(MakeAgent(id)); !s.ok()) return s;
                      }
                      return absl::OkStatus();
                    })
                    .ok());
  }

  absl::Status W(const std::function<absl::Status(WriteTxn&)>& fn) { return store_->Write(fn); }

  absl::StatusOr<std::shared_ptr<const Cluster>> ReadCluster(const std::string& id) {
    absl::StatusOr<std::shared_ptr<const Cluster>> out;
    absl::Status s = store_->Read([&](ReadTxn& txn) {
      out = txn.ClusterRef(id);
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    return out;
  }

  absl::StatusOr<std::shared_ptr<const Allocation>> ReadAllocation(const std::string& id) {
    absl::StatusOr<std::shared_ptr<const Allocation>> out;
    absl::Status s = store_->Read([&](ReadTxn& txn) {
      out = txn.AllocationRef(id);
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    return out;
  }

  TempDir dir_{"vipu-membership"};
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(MembershipCacheTest, SecondReadIsTheSameObject) {
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertCluster(MakeCluster("c", {"a0", "a1"}));
              }).ok());
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertAllocation(MakeAllocation("al", "c", {"a1"}));
              }).ok());
  auto first = ReadCluster("c");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT((*first)->agent_ids, ElementsAre("a0", "a1"));
  auto second = ReadCluster("c");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->get(), second->get());  // served from the cache

  auto al = ReadAllocation("al");
  ASSERT_TRUE(al.ok()) << al.status();
  EXPECT_EQ((*al)->cluster_id, "c");
  EXPECT_THAT((*al)->agent_ids, ElementsAre("a1"));
  auto al_again = ReadAllocation("al");
  ASSERT_TRUE(al_again.ok());
  EXPECT_EQ(al->get(), al_again->get());

  // The copies and lists agree with the refs.
  ASSERT_TRUE(store_
                  ->Read([&](ReadTxn& txn) -> absl::Status {
                    auto c = txn.GetCluster("c");
                    EXPECT_TRUE(c.ok());
                    if (c.ok()) {
                      EXPECT_THAT(c->agent_ids, ElementsAre("a0", "a1"));
                    }
                    auto refs = txn.ClusterRefs();
                    EXPECT_TRUE(refs.ok());
                    if (refs.ok()) {
                      EXPECT_EQ(refs->size(), 1u);
                      EXPECT_EQ((*refs)[0].get(), first->get());
                    }
                    auto allocations = txn.AllocationRefs();
                    EXPECT_TRUE(allocations.ok());
                    if (allocations.ok()) {
                      EXPECT_EQ(allocations->size(), 1u);
                    }
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST_F(MembershipCacheTest, DeleteThenReadNeverReturnsTheDeleted) {
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertCluster(MakeCluster("c", {"a0", "a1"}));
              }).ok());
  ASSERT_TRUE(ReadCluster("c").ok());  // cached
  ASSERT_TRUE(ReadCluster("c").ok());
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeleteCluster("c"); }).ok());
  EXPECT_EQ(ReadCluster("c").status().code(), absl::StatusCode::kNotFound);

  // Created again with other agents: the new content, not the old entry.
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertCluster(MakeCluster("c", {"a2", "a3"}));
              }).ok());
  auto again = ReadCluster("c");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_THAT((*again)->agent_ids, ElementsAre("a2", "a3"));

  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertAllocation(MakeAllocation("al", "c", {"a2"}));
              }).ok());
  ASSERT_TRUE(ReadAllocation("al").ok());
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeleteAllocation("al"); }).ok());
  EXPECT_EQ(ReadAllocation("al").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(MembershipCacheTest, EpochIsEvenOutsideChangesAndMovesWithEach) {
  const uint64_t e0 = store_->MembershipEpochForTesting();
  EXPECT_EQ(e0 % 2, 0u);
  // A write that changes no membership leaves the epoch alone.
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("a9")); }).ok());
  EXPECT_EQ(store_->MembershipEpochForTesting(), e0);
  // Inside the group of a change it is odd; after the commit even again.
  uint64_t inside = 0;
  ASSERT_TRUE(W([&](WriteTxn& txn) {
                absl::Status s = txn.InsertCluster(MakeCluster("c", {"a0"}));
                inside = store_->MembershipEpochForTesting();
                return s;
              }).ok());
  EXPECT_EQ(inside % 2, 1u);
  EXPECT_EQ(store_->MembershipEpochForTesting(), e0 + 2);
  // A change that fails (rolled back) still ends the change.
  EXPECT_FALSE(W([](WriteTxn& txn) { return txn.InsertCluster(MakeCluster("c", {"a1"})); }).ok());
  EXPECT_EQ(store_->MembershipEpochForTesting(), e0 + 4);
}

TEST_F(MembershipCacheTest, WritersOwnGroupSeesItsChanges) {
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertCluster(MakeCluster("c", {"a0", "a1"}));
              }).ok());
  ASSERT_TRUE(ReadCluster("c").ok());  // cached at the current epoch
  absl::Status s = W([](WriteTxn& txn) -> absl::Status {
    // Before the group changes anything, the cached entry is right.
    auto before = txn.ClusterRef("c");
    EXPECT_TRUE(before.ok());
    if (absl::Status d = txn.DeleteCluster("c"); !d.ok()) return d;
    EXPECT_EQ(txn.ClusterRef("c").status().code(), absl::StatusCode::kNotFound);
    if (absl::Status i = txn.InsertCluster(MakeCluster("c", {"a2"})); !i.ok()) return i;
    auto after = txn.ClusterRef("c");
    EXPECT_TRUE(after.ok());
    if (after.ok()) {
      EXPECT_THAT((*after)->agent_ids, ElementsAre("a2"));
    }
    if (absl::Status a = txn.InsertAllocation(MakeAllocation("al", "c", {"a2"})); !a.ok()) return a;
    auto al = txn.AllocationRef("al");
    EXPECT_TRUE(al.ok());
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s;
  auto c = ReadCluster("c");
  ASSERT_TRUE(c.ok());
  EXPECT_THAT((*c)->agent_ids, ElementsAre("a2"));
  EXPECT_TRUE(ReadAllocation("al").ok());
}

TEST_F(MembershipCacheTest, RolledBackChangeLeavesNothingBehind) {
  absl::Status s = W([](WriteTxn& txn) -> absl::Status {
    if (absl::Status i = txn.InsertCluster(MakeCluster("c", {"a0"})); !i.ok()) return i;
    EXPECT_TRUE(txn.ClusterRef("c").ok());  // its own change, inside the group
    return absl::AbortedError("changed my mind");
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(ReadCluster("c").status().code(), absl::StatusCode::kNotFound);
}

// A reader whose snapshot predates a delete keeps seeing the cluster (its
// snapshot has it), and does not put it back in the cache for later readers.
TEST_F(MembershipCacheTest, ReaderThatBeganBeforeAChangeDoesNotPoison) {
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertCluster(MakeCluster("c", {"a0", "a1"}));
              }).ok());
  Gate snapshot_taken, deleted;
  std::atomic<bool> saw_old{false};
  std::thread reader([&] {
    absl::Status s = store_->Read([&](ReadTxn& txn) -> absl::Status {
      // Takes the snapshot (the first read), without touching the cache.
      auto agents = txn.ListAgents();
      EXPECT_TRUE(agents.ok());
      snapshot_taken.Open();
      deleted.Wait();
      // The snapshot still holds the cluster: loaded from SQL, not cached.
      auto c = txn.ClusterRef("c");
      saw_old = c.ok() && (*c)->agent_ids.size() == 2;
      auto again = txn.ClusterRef("c");
      EXPECT_TRUE(again.ok());
      return absl::OkStatus();
    });
    EXPECT_TRUE(s.ok()) << s;
  });
  snapshot_taken.Wait();
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeleteCluster("c"); }).ok());
  deleted.Open();
  reader.join();
  EXPECT_TRUE(saw_old);
  EXPECT_EQ(ReadCluster("c").status().code(), absl::StatusCode::kNotFound);
}

// A reader that recorded its epoch before a change but took its snapshot
// after it reads the new state, never the cached old one.
TEST_F(MembershipCacheTest, ReaderWhoseSnapshotFollowsTheChangeSeesIt) {
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertCluster(MakeCluster("c", {"a0", "a1"}));
              }).ok());
  ASSERT_TRUE(ReadCluster("c").ok());  // cached
  Gate began, deleted;
  absl::StatusCode code = absl::StatusCode::kOk;
  std::thread reader([&] {
    absl::Status s = store_->Read([&](ReadTxn& txn) -> absl::Status {
      began.Open();  // epoch recorded, no snapshot yet
      deleted.Wait();
      code = txn.ClusterRef("c").status().code();
      return absl::OkStatus();
    });
    EXPECT_TRUE(s.ok()) << s;
  });
  began.Wait();
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeleteCluster("c"); }).ok());
  deleted.Open();
  reader.join();
  EXPECT_EQ(code, absl::StatusCode::kNotFound);
}

// A hit before any other read of the transaction fixes the snapshot there:
// what the transaction reads afterwards is of the same moment.
TEST_F(MembershipCacheTest, HitFixesTheSnapshot) {
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertCluster(MakeCluster("c", {"a0", "a1"}));
              }).ok());
  ASSERT_TRUE(ReadCluster("c").ok());  // cached
  Gate hit, deleted;
  absl::StatusCode after = absl::StatusCode::kUnknown;
  std::thread reader([&] {
    absl::Status s = store_->Read([&](ReadTxn& txn) -> absl::Status {
      EXPECT_TRUE(txn.ClusterRef("c").ok());
      hit.Open();
      deleted.Wait();
      after = txn.GetCluster("c").status().code();  // same snapshot: still there
      return absl::OkStatus();
    });
    EXPECT_TRUE(s.ok()) << s;
  });
  hit.Wait();
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeleteCluster("c"); }).ok());
  deleted.Open();
  reader.join();
  EXPECT_EQ(after, absl::StatusCode::kOk);
  EXPECT_EQ(ReadCluster("c").status().code(), absl::StatusCode::kNotFound);
}

// A change to one allocation keeps the other entries (re-tagged).
TEST_F(MembershipCacheTest, ChangeOfOneKeepsTheOthers) {
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertCluster(MakeCluster("c", {"a0", "a1"}));
              }).ok());
  auto c = ReadCluster("c");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertAllocation(MakeAllocation("al", "c", {"a0"}));
              }).ok());
  auto c_after = ReadCluster("c");
  ASSERT_TRUE(c_after.ok());
  EXPECT_EQ(c->get(), c_after->get());
}

// The cache's own rules, without SQLite.
TEST(MembershipCacheRules, HitsOnlyAtTheEpochItWasPutAt) {
  MembershipCache cache;
  const uint64_t e = cache.epoch();
  auto c = std::make_shared<const Cluster>(MakeCluster("c", {"a0"}));
  cache.PutCluster(e, c);
  EXPECT_EQ(cache.FindCluster("c", e), c);
  EXPECT_EQ(cache.FindCluster("c", e + 2), nullptr);  // not this epoch

  cache.BeginChange();
  EXPECT_EQ(cache.epoch(), e + 1);
  EXPECT_EQ(cache.FindCluster("c", e), nullptr);  // a change is in flight
  cache.PutCluster(e, c);                         // refused: the epoch moved
  cache.PutCluster(e + 1, c);                     // refused: odd
  cache.EndChange({"c"}, {});
  EXPECT_EQ(cache.epoch(), e + 2);
  EXPECT_EQ(cache.FindCluster("c", e + 2), nullptr);  // touched: dropped
  EXPECT_EQ(cache.SizeForTesting(), 0u);

  cache.PutCluster(e + 2, c);
  auto d = std::make_shared<const Cluster>(MakeCluster("d", {"a1"}));
  cache.PutCluster(e + 2, d);
  cache.BeginChange();
  cache.EndChange({"d"}, {});
  EXPECT_EQ(cache.FindCluster("c", e + 4), c);  // untouched: re-tagged
  EXPECT_EQ(cache.FindCluster("d", e + 4), nullptr);
  EXPECT_EQ(cache.FindCluster("c", e + 2), nullptr);  // a reader of before the change
}

}  // namespace
}  // namespace vipu::storage
