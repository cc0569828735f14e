// How LoadPartitions (read_txn.cc) merges the partition rows with their IPU
// rows: partitions without IPUs anywhere in the list, per-row errors, every
// query that shares the merge, and IPU rows without a partition row.
#include <sqlite3.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/store.h"
#include "tests/unit/temp_dir.h"

namespace vipu::storage {
namespace {

using fabric::IpuRef;
using fabric::Partition;
using fabric::PartitionIpu;
using test::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// `ipus` as "agent:ipu" in position order; "" for none.
std::string IpuList(const Partition& p) {
  std::string out;
  for (const PartitionIpu& ipu : p.ipus) {
    if (!out.empty()) out += " ";
    out += ipu.ipu.agent_id + ":" + std::to_string(ipu.ipu.ipu) + "/r" +
           std::to_string(ipu.routing_id);
  }
  return out;
}

std::vector<std::string> Summaries(const std::vector<Partition>& partitions) {
  std::vector<std::string> out;
  for (const Partition& p : partitions) out.push_back(p.id + "=[" + IpuList(p) + "]");
  return out;
}

// Agents a0..a3 in cluster c; allocation al1 = a0, a1, allocation al2 = a2, a3.
class StoragePartitionListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(dir_.File("vipu.db"));
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

TEST_F(StoragePartitionListTest, PartitionsWithoutIpusAnywhereKeepTheirNeighboursIpus) {
  Insert("a-first-empty", "al1", {});
  Insert("b", "al1", {{"a0", 0}, {"a0", 1}});
  Insert("c-empty", "al1", {});
  Insert("d-empty", "al1", {});
  Insert("e", "al1", {{"a1", 3}});
  Insert("f", "al1", {{"a1", 0}, {"a0", 2}, {"a1", 1}});
  Insert("g-last-empty", "al1", {});
  auto list = List();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_THAT(Summaries(*list),
              ElementsAre("a-first-empty=[]", "b=[a0:0/r0 a0:1/r1]", "c-empty=[]", "d-empty=[]",
                          "e=[a1:3/r0]", "f=[a1:0/r0 a0:2/r1 a1:1/r2]", "g-last-empty=[]"));
}

TEST_F(StoragePartitionListTest, EveryQuerySharingTheMergeGetsWholePartitions) {
  Insert("p1", "al1", {{"a0", 0}, {"a1", 0}});
  Insert("p2", "al2", {{"a2", 0}});
  Insert("p3", "al1", {});
  Insert("p4", "al2", {{"a3", 1}, {"a2", 1}});
  Insert("p5", "al1", {{"a1", 2}});

  auto al1 = List("al1");
  ASSERT_TRUE(al1.ok()) << al1.status();
  EXPECT_THAT(Summaries(*al1), ElementsAre("p1=[a0:0/r0 a1:0/r1]", "p3=[]", "p5=[a1:2/r0]"));
  auto al2 = List("al2");
  ASSERT_TRUE(al2.ok()) << al2.status();
  EXPECT_THAT(Summaries(*al2), ElementsAre("p2=[a2:0/r0]", "p4=[a3:1/r0 a2:1/r1]"));

  std::vector<Partition> on_a2;
  std::vector<Partition> one;
  ASSERT_TRUE(store_
                  ->Read([&](ReadTxn& txn) {
                    auto on = txn.PartitionsOnAgent("a2");
                    if (!on.ok()) return on.status();
                    on_a2 = *std::move(on);
                    auto p = txn.GetPartition("p4");
                    if (!p.ok()) return p.status();
                    one.push_back(*std::move(p));
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_THAT(Summaries(on_a2), ElementsAre("p2=[a2:0/r0]", "p4=[a3:1/r0 a2:1/r1]"));
  EXPECT_THAT(Summaries(one), ElementsAre("p4=[a3:1/r0 a2:1/r1]"));
}

TEST_F(StoragePartitionListTest, ErrorsStayWithTheirOwnRow) {
  Insert("p1", "al1", {{"a0", 0}}, {"agent a0: not connected"});
  Insert("p2", "al1", {{"a0", 1}});
  Insert("p3", "al1", {{"a1", 0}}, {"two \"quoted\"\nlines \\", "", "second"});
  Insert("p4", "al1", {});
  auto list = List();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 4u);
  EXPECT_THAT((*list)[0].errors, ElementsAre("agent a0: not connected"));
  EXPECT_TRUE((*list)[1].errors.empty());
  EXPECT_THAT((*list)[2].errors, ElementsAre("two \"quoted\"\nlines \\", "", "second"));
  EXPECT_TRUE((*list)[3].errors.empty());
}

TEST_F(StoragePartitionListTest, EmptyStoreAndUnknownAllocationListNothing) {
  auto all = List();
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->empty());
  Insert("p1", "al1", {{"a0", 0}});
  auto none = List("al2");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  auto unknown = List("no-such-allocation");
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_TRUE(unknown->empty());
}

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
