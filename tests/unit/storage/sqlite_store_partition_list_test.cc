// How LoadPartitions (sqlite_read_txn.cc) treats IPU rows without a
// partition row, which only a damaged or hand-edited file holds. The merge's
// ordinary cases are in the StoreContract suite (storage_contract.cc).
#include <sqlite3.h>

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

using test_util::IpuList;
using test_util::Summaries;

using fabric::IpuRef;
using fabric::Partition;
using fabric::PartitionIpu;
using test::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Agents a0..a3 in cluster c; allocation al1 = a0, a1, allocation al2 = a2, a3.
class StoragePartitionListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteStore::Open(dir_.File("vipu.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ASSERT_TRUE(
        store_
            ->Write([](WriteTxn& txn) {
              fabric::Cluster c;
              c.id = "c";
              for (int i = 0; i < 4; ++i) {
                fabric::Agent a{"a" + std::to_string(i), "h", 1, fabric::MachineType::kM2000};
                if (absl::Status s = txn.InsertAgent(a); !s.ok()) return s;
                c.agent_ids.push_back(a.id);
              }
              if (absl::Status s = txn.InsertCluster(c); !s.ok()) return s;
              if (absl::Status s = txn.InsertAllocation({"al1", "c", {"a0", "a1"}}); !s.ok()) {
                return s;
              }
              return txn.InsertAllocation({"al2", "c", {"a2", "a3"}});
            })
            .ok());
  }

  // Inserts partitions `id` with IPUs (agent, ipu) in the given order.
  void Insert(const std::string& id, const std::string& allocation,
              const std::vector<std::pair<std::string, uint32_t>>& ipus,
              std::vector<std::string> errors = {}) {
    Partition p;
    p.id = id;
    p.cluster_id = "c";
    p.allocation_id = allocation;
    p.errors = std::move(errors);
    for (const auto& [agent, ipu] : ipus) {
      PartitionIpu pi;
      pi.ipu = IpuRef{agent, ipu};
      pi.routing_id = static_cast<uint32_t>(p.ipus.size());
      p.ipus.push_back(pi);
    }
    ASSERT_TRUE(store_->Write([&](WriteTxn& txn) { return txn.InsertPartition(p); }).ok());
  }

  absl::StatusOr<std::vector<Partition>> List(const std::string& allocation = "") {
    std::vector<Partition> out;
    absl::Status s = store_->Read([&](ReadTxn& txn) {
      auto list = txn.ListPartitions(allocation);
      if (!list.ok()) return list.status();
      out = *std::move(list);
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    return out;
  }

  // Runs `sql` on a second, raw connection (foreign keys off, as a damaged
  // or hand-edited file would be).
  void RawExec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(dir_.File("vipu.db").c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }

  TempDir dir_{"vipu-storage"};
  std::unique_ptr<Store> store_;
};

// IPU rows whose partition row is gone (before the first partition, between
// two, after the last) are reported, not attached to a neighbour.
TEST_F(StoragePartitionListTest, IpuRowWithoutItsPartitionIsAnInternalError) {
  Insert("m", "al1", {{"a0", 0}});
  Insert("p", "al1", {{"a0", 1}});
  for (const std::string orphan : {"a-before", "n-between", "z-after"}) {
    SCOPED_TRACE(orphan);
    RawExec(
        "INSERT INTO partition_ipus (partition_id, position, agent_id, ipu, ild,"
        " ild_routing, topology_id, routing_id) VALUES ('" +
        orphan + "', 0, 'a1', 3, 0, 0, 0, 0)");
    auto list = List();
    ASSERT_FALSE(list.ok());
    EXPECT_EQ(list.status().code(), absl::StatusCode::kInternal);
    EXPECT_THAT(std::string(list.status().message()),
                HasSubstr("IPU row of partition " + orphan + " does not match a partition row"));
    RawExec("DELETE FROM partition_ipus WHERE partition_id = '" + orphan + "'");
  }
  auto list = List();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(Summaries(*list), ElementsAre("m=[a0:0/r0]", "p=[a0:1/r0]"));
}

}  // namespace
}  // namespace vipu::storage
