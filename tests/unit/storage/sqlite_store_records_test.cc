// Records in SqliteStore beyond the contract (tests/unit/support/storage_contract.h):
// how the generation counter counts, and a list of 10,000 partitions
// through LoadPartitions' single merge pass.
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"
#include "tests/unit/support/storage_test_util.h"
#include "tests/unit/support/temp_dir.h"

namespace vipu::storage {
namespace {

using test_util::Ipu;
using test_util::MakeAgent;
using test_util::MakePartition;

using fabric::Agent;
using fabric::Allocation;
using fabric::Cluster;
using fabric::IpuRef;
using fabric::Partition;
using fabric::PartitionIpu;
using test::TempDir;
using ::testing::ElementsAre;

// A store with agents a0..a5; cluster c1 = a0..a3, c2 = a4, a5;
// allocation al1 = a0, a1 and al2 = a2, a3 in c1, al3 = a4 in c2.
class StorageRecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteStore::Open(dir_.File("vipu.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ASSERT_TRUE(W([](WriteTxn& txn) {
                  for (int i = 0; i < 6; ++i) {
                    absl::Status s = txn.InsertAgent(MakeAgent("a" + std::to_string(i)));
                    if (!s.ok()) return s;
                  }
                  Cluster c1;
                  c1.id = "c1";
                  c1.agent_ids = {"a0", "a1", "a2", "a3"};
                  Cluster c2;
                  c2.id = "c2";
                  c2.agent_ids = {"a4", "a5"};
                  if (absl::Status s = txn.InsertCluster(c1); !s.ok()) return s;
                  if (absl::Status s = txn.InsertCluster(c2); !s.ok()) return s;
                  if (absl::Status s = txn.InsertAllocation({"al1", "c1", {"a0", "a1"}}); !s.ok())
                    return s;
                  if (absl::Status s = txn.InsertAllocation({"al2", "c1", {"a2", "a3"}}); !s.ok())
                    return s;
                  return txn.InsertAllocation({"al3", "c2", {"a4"}});
                }).ok());
  }

  absl::Status W(const std::function<absl::Status(WriteTxn&)>& fn) { return store_->Write(fn); }

  template <typename T>
  absl::StatusOr<T> R(const std::function<absl::StatusOr<T>(ReadTxn&)>& fn) {
    absl::StatusOr<T> out = absl::UnknownError("not run");
    absl::Status s = store_->Read([&](ReadTxn& txn) {
      out = fn(txn);
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    return out;
  }

  std::vector<Partition> ListPartitions(const std::string& allocation = "") {
    auto list =
        R<std::vector<Partition>>([&](ReadTxn& txn) { return txn.ListPartitions(allocation); });
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() ? *list : std::vector<Partition>();
  }

  TempDir dir_;
  std::unique_ptr<Store> store_;
};

// The SQLite counter starts at 1 and counts up by one, across a reopen.
TEST_F(StorageRecordsTest, NextGenerationCountsFromOneAcrossReopen) {
  std::vector<uint64_t> seen;
  auto take = [&](Store& store, int n) {
    ASSERT_TRUE(store
                    .Write([&](WriteTxn& txn) {
                      for (int i = 0; i < n; ++i) {
                        absl::StatusOr<uint64_t> g = txn.NextGeneration();
                        if (!g.ok()) return g.status();
                        seen.push_back(*g);
                      }
                      return absl::OkStatus();
                    })
                    .ok());
  };
  take(*store_, 3);
  store_.reset();
  auto reopened = SqliteStore::Open(dir_.File("vipu.db"));
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  take(**reopened, 2);
  EXPECT_THAT(seen, ElementsAre(1, 2, 3, 4, 5));
}

// Its speed is measured in bench/placement_list_bench.cc, not asserted here.
TEST_F(StorageRecordsTest, ListOfTenThousandPartitionsRoundTrips) {
  constexpr int kPartitions = 10000;
  int agents_needed = 0;
  ASSERT_TRUE(W([&](WriteTxn& txn) {
                Cluster big;
                big.id = "big";
                std::vector<Partition> partitions;
                int agent = 0;
                uint32_t slot = 0;
                for (int i = 0; i < kPartitions; ++i) {
                  Partition p =
                      MakePartition("part-" + std::to_string(100000 + i), "big", "bigal", {});
                  for (int k = 0; k <= i % 4; ++k) {
                    p.ipus.push_back(Ipu("m" + std::to_string(agent), slot, k));
                    if (++slot == 4) {
                      slot = 0;
                      ++agent;
                    }
                  }
                  partitions.push_back(std::move(p));
                }
                agents_needed = agent + 1;
                for (int a = 0; a < agents_needed; ++a) {
                  std::string id = "m" + std::to_string(a);
                  if (absl::Status s = txn.InsertAgent(MakeAgent(id)); !s.ok()) return s;
                  big.agent_ids.push_back(id);
                }
                if (absl::Status s = txn.InsertCluster(big); !s.ok()) return s;
                Allocation al{"bigal", "big", big.agent_ids};
                if (absl::Status s = txn.InsertAllocation(al); !s.ok()) return s;
                for (const Partition& p : partitions) {
                  if (absl::Status s = txn.InsertPartition(p); !s.ok()) return s;
                }
                return absl::OkStatus();
              }).ok());
  std::vector<Partition> all = ListPartitions("bigal");
  ASSERT_EQ(all.size(), static_cast<size_t>(kPartitions));
  for (int i : {0, 1, 2, 3, 9999}) {
    EXPECT_EQ(all[i].ipus.size(), static_cast<size_t>(i % 4 + 1)) << i;
    EXPECT_EQ(all[i].ipus.back().routing_id, static_cast<uint32_t>(i % 4)) << i;
  }
  EXPECT_EQ(ListPartitions().size(), static_cast<size_t>(kPartitions));
}

}  // namespace
}  // namespace vipu::storage
