// Users and partition shares (schema version 2).
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/store.h"
#include "tests/unit/temp_dir.h"

namespace vipu::storage {
namespace {

class StorageUsersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(dir_.File("vipu.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  test::TempDir dir_{"vipu-users"};
  std::unique_ptr<Store> store_;
};

TEST_F(StorageUsersTest, InsertGetListDelete) {
  UserRecord alice{"alice", "hash-a", false, {"a1", "a2"}, 5};
  UserRecord root{"root", "hash-r", true, {}, 6};
  ASSERT_TRUE(store_
                  ->Write([&](WriteTxn& txn) -> absl::Status {
                    if (absl::Status s = txn.InsertUser(root); !s.ok()) return s;
                    return txn.InsertUser(alice);
                  })
                  .ok());
  ASSERT_TRUE(store_
                  ->Read([&](ReadTxn& txn) -> absl::Status {
                    auto got = txn.GetUser("alice");
                    EXPECT_TRUE(got.ok());
                    EXPECT_EQ(got->key_hash, "hash-a");
                    EXPECT_FALSE(got->is_admin);
                    EXPECT_EQ(got->allocations, (std::vector<std::string>{"a1", "a2"}));
                    EXPECT_EQ(got->created_unix_ms, 5);
                    auto all = txn.ListUsers();
                    EXPECT_EQ(all->size(), 2u);
                    EXPECT_EQ(all->front().id, "alice");  // ordered by id
                    EXPECT_TRUE(all->back().is_admin);
                    EXPECT_EQ(*txn.CountUsers(), 2);
                    EXPECT_EQ(txn.GetUser("bob").status().code(), absl::StatusCode::kNotFound);
                    return absl::OkStatus();
                  })
                  .ok());
  absl::Status dup = store_->Write([&](WriteTxn& txn) { return txn.InsertUser(alice); });
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(store_->Write([](WriteTxn& txn) { return txn.DeleteUser("alice"); }).ok());
  EXPECT_EQ(store_->Write([](WriteTxn& txn) { return txn.DeleteUser("alice"); }).code(),
            absl::StatusCode::kNotFound);
}

TEST_F(StorageUsersTest, UpdateRewritesKeyAdminAndAllocationsButNotCreation) {
  UserRecord alice{"alice", "hash-a", false, {"a1"}, 5};
  ASSERT_TRUE(store_->Write([&](WriteTxn& txn) { return txn.InsertUser(alice); }).ok());
  UserRecord changed{"alice", "hash-b", true, {"a2", "a3"}, 99};
  ASSERT_TRUE(store_->Write([&](WriteTxn& txn) { return txn.UpdateUser(changed); }).ok());
  // Reopening shows what was committed, not what a cache held.
  store_.reset();
  auto reopened = Store::Open(dir_.File("vipu.db"));
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  store_ = *std::move(reopened);
  ASSERT_TRUE(store_
                  ->Read([&](ReadTxn& txn) -> absl::Status {
                    auto got = txn.GetUser("alice");
                    EXPECT_TRUE(got.ok()) << got.status();
                    EXPECT_EQ(got->key_hash, "hash-b");
                    EXPECT_TRUE(got->is_admin);
                    EXPECT_EQ(got->allocations, (std::vector<std::string>{"a2", "a3"}));
                    EXPECT_EQ(got->created_unix_ms, 5);
                    return absl::OkStatus();
                  })
                  .ok());
  UserRecord ghost{"ghost", "h", false, {}, 1};
  EXPECT_EQ(store_->Write([&](WriteTxn& txn) { return txn.UpdateUser(ghost); }).code(),
            absl::StatusCode::kNotFound);
}

TEST_F(StorageUsersTest, SharesNeedThePartitionAndGoWithIt) {
  absl::Status s = store_->Write([](WriteTxn& txn) { return txn.SetPartitionShared("p", true); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  ASSERT_TRUE(store_
                  ->Write([](WriteTxn& txn) -> absl::Status {
                    fabric::Agent a;
                    a.id = "ag1";
                    a.host = "h";
                    a.port = 1;
                    if (absl::Status s = txn.InsertAgent(a); !s.ok()) return s;
                    fabric::Cluster c;
                    c.id = "c";
                    c.agent_ids = {"ag1"};
                    if (absl::Status s = txn.InsertCluster(c); !s.ok()) return s;
                    fabric::Partition p;
                    p.id = "p";
                    p.cluster_id = "c";
                    p.owner = "alice";
                    if (absl::Status s = txn.InsertPartition(p); !s.ok()) return s;
                    if (absl::Status s = txn.SetPartitionShared("p", true); !s.ok()) return s;
                    return txn.SetPartitionShared("p", true);  // idempotent
                  })
                  .ok());
  auto shared = [&](const std::string& id) {
    bool out = false;
    EXPECT_TRUE(store_
                    ->Read([&](ReadTxn& txn) -> absl::Status {
                      out = *txn.IsPartitionShared(id);
                      EXPECT_EQ(txn.SharedPartitions()->count(id), out ? 1u : 0u);
                      return absl::OkStatus();
                    })
                    .ok());
    return out;
  };
  EXPECT_TRUE(shared("p"));
  ASSERT_TRUE(store_->Write([](WriteTxn& txn) { return txn.SetPartitionShared("p", false); }).ok());
  EXPECT_FALSE(shared("p"));
  ASSERT_TRUE(store_->Write([](WriteTxn& txn) { return txn.SetPartitionShared("p", true); }).ok());
  ASSERT_TRUE(store_->Write([](WriteTxn& txn) { return txn.DeletePartition("p"); }).ok());
  EXPECT_FALSE(shared("p"));
}

}  // namespace
}  // namespace vipu::storage
