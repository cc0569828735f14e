// Round trips of every record type and field, constraint errors (duplicate
// ids, invariant 1, references, deletes of things in use), the queries and
// list speed.
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
#include "storage/store.h"
#include "tests/unit/temp_dir.h"

namespace vipu::storage {
namespace {

using fabric::Agent;
using fabric::Allocation;
using fabric::Cluster;
using fabric::IpuRef;
using fabric::Partition;
using fabric::PartitionIpu;
using test::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

Agent MakeAgent(const std::string& id, uint32_t port = 8100) {
  Agent a;
  a.id = id;
  a.host = "host-" + id;
  a.port = port;
  return a;
}

PartitionIpu Ipu(const std::string& agent, uint32_t ipu, uint32_t routing_id = 0) {
  PartitionIpu p;
  p.ipu = IpuRef{agent, ipu};
  p.routing_id = routing_id;
  p.topology_id = ipu;
  return p;
}

Partition MakePartition(const std::string& id, const std::string& cluster,
                        const std::string& allocation, std::vector<PartitionIpu> ipus) {
  Partition p;
  p.id = id;
  p.cluster_id = cluster;
  p.allocation_id = allocation;
  p.ipus = std::move(ipus);
  return p;
}

// Every field set to a non-default value, errors with awkward bytes.
Partition FullPartition(const std::string& id) {
  Partition p;
  p.id = id;
  p.cluster_id = "c1";
  p.allocation_id = "al1";
  p.owner = "owner \"quoted\" ü";
  p.routing = fabric::RoutingType::kRingSwnc;
  p.gw_routing = fabric::GwRoutingType::kSwRing;
  p.sync_type = fabric::SyncType::kPodNativeReplicatedPipeline;
  p.num_gcds = 2;
  p.num_ilds = 2;
  p.num_replicas = 4;
  p.reconfigurable = true;
  p.disable_auto_reset = true;
  p.relocatable = true;
  PartitionIpu a{3, 1, 6, 0, IpuRef{"a1", 2}};
  PartitionIpu b{5, 2, 7, 1, IpuRef{"a0", 3}};
  p.ipus = {a, b};
  p.ready_state = fabric::ReadyState::kError;
  p.operation_state = fabric::OperationState::kFailed;
  p.errors = {"",
              "line one\nline two\r\n",
              "quote \" backslash \\ slash / tab\t",
              std::string("nul\0inside", 10),
              "ünïcödé 🎉 \u2028",
              "\x01\x1f\x7f raw \xff\xfe bytes",
              "[\"looks\",\"like\",\"json\"]",
              ",",
              "\\u0041 not an escape"};
  p.generation = (uint64_t{1} << 62) + 5;
  p.max_auto_reset_retries = 7;
  p.auto_reset_retry_count = 2;
  p.last_auto_reset_unix_ms = 1700000000123;
  p.created_unix_ms = 1690000000001;
  p.updated_unix_ms = 1700000000999;
  return p;
}

void ExpectSamePartition(const Partition& got, const Partition& want) {
  EXPECT_EQ(got.id, want.id);
  EXPECT_EQ(got.cluster_id, want.cluster_id);
  EXPECT_EQ(got.allocation_id, want.allocation_id);
  EXPECT_EQ(got.owner, want.owner);
  EXPECT_EQ(got.routing, want.routing);
  EXPECT_EQ(got.gw_routing, want.gw_routing);
  EXPECT_EQ(got.sync_type, want.sync_type);
  EXPECT_EQ(got.num_gcds, want.num_gcds);
  EXPECT_EQ(got.num_ilds, want.num_ilds);
  EXPECT_EQ(got.num_replicas, want.num_replicas);
  EXPECT_EQ(got.reconfigurable, want.reconfigurable);
  EXPECT_EQ(got.disable_auto_reset, want.disable_auto_reset);
  EXPECT_EQ(got.relocatable, want.relocatable);
  ASSERT_EQ(got.ipus.size(), want.ipus.size());
  for (size_t i = 0; i < got.ipus.size(); ++i) {
    EXPECT_EQ(got.ipus[i].ild, want.ipus[i].ild) << i;
    EXPECT_EQ(got.ipus[i].ild_routing, want.ipus[i].ild_routing) << i;
    EXPECT_EQ(got.ipus[i].topology_id, want.ipus[i].topology_id) << i;
    EXPECT_EQ(got.ipus[i].routing_id, want.ipus[i].routing_id) << i;
    EXPECT_EQ(got.ipus[i].ipu, want.ipus[i].ipu) << i;
  }
  EXPECT_EQ(got.ready_state, want.ready_state);
  EXPECT_EQ(got.operation_state, want.operation_state);
  EXPECT_EQ(got.errors, want.errors);
  EXPECT_EQ(got.generation, want.generation);
  EXPECT_EQ(got.max_auto_reset_retries, want.max_auto_reset_retries);
  EXPECT_EQ(got.auto_reset_retry_count, want.auto_reset_retry_count);
  EXPECT_EQ(got.last_auto_reset_unix_ms, want.last_auto_reset_unix_ms);
  EXPECT_EQ(got.created_unix_ms, want.created_unix_ms);
  EXPECT_EQ(got.updated_unix_ms, want.updated_unix_ms);
}

std::vector<std::string> Ids(const std::vector<Partition>& partitions) {
  std::vector<std::string> ids;
  for (const auto& p : partitions) ids.push_back(p.id);
  return ids;
}

// A store with agents a0..a5; cluster c1 = a0..a3, c2 = a4, a5;
// allocation al1 = a0, a1 and al2 = a2, a3 in c1, al3 = a4 in c2.
class StorageRecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Store::Open(dir_.File("vipu.db"));
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

  absl::StatusOr<Partition> GetPartition(const std::string& id) {
    return R<Partition>([&](ReadTxn& txn) { return txn.GetPartition(id); });
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

TEST_F(StorageRecordsTest, AgentRoundTripUpdateDelete) {
  Agent bow = MakeAgent("bow-1", 65535);
  bow.host = "bow.example.org";
  bow.machine_type = fabric::MachineType::kBow;
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertAgent(bow); }).ok());
  auto got = R<Agent>([](ReadTxn& txn) { return txn.GetAgent("bow-1"); });
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->id, "bow-1");
  EXPECT_EQ(got->host, "bow.example.org");
  EXPECT_EQ(got->port, 65535u);
  EXPECT_EQ(got->machine_type, fabric::MachineType::kBow);

  bow.host = "10.0.0.9";
  bow.port = 9000;
  bow.machine_type = fabric::MachineType::kM2000;
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.UpdateAgent(bow); }).ok());
  got = R<Agent>([](ReadTxn& txn) { return txn.GetAgent("bow-1"); });
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->host, "10.0.0.9");
  EXPECT_EQ(got->port, 9000u);
  EXPECT_EQ(got->machine_type, fabric::MachineType::kM2000);

  auto all = R<std::vector<Agent>>([](ReadTxn& txn) { return txn.ListAgents(); });
  ASSERT_TRUE(all.ok());
  std::vector<std::string> ids;
  for (const auto& a : *all) ids.push_back(a.id);
  EXPECT_THAT(ids, ElementsAre("a0", "a1", "a2", "a3", "a4", "a5", "bow-1"));

  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeleteAgent("bow-1"); }).ok());
  got = R<Agent>([](ReadTxn& txn) { return txn.GetAgent("bow-1"); });
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Msg(got.status()), "agent bow-1 not found");
}

TEST_F(StorageRecordsTest, AgentErrors) {
  absl::Status s = W([](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("a0")); });
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_EQ(Msg(s), "agent a0 already exists");

  s = W([](WriteTxn& txn) { return txn.UpdateAgent(MakeAgent("ghost")); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(Msg(s), "agent ghost not found");

  s = W([](WriteTxn& txn) { return txn.DeleteAgent("ghost"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;

  s = W([](WriteTxn& txn) { return txn.DeleteAgent("a5"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Msg(s), HasSubstr("agent a5 is in cluster c2"));
}

TEST_F(StorageRecordsTest, ClusterRoundTripAndErrors) {
  auto c1 = R<Cluster>([](ReadTxn& txn) { return txn.GetCluster("c1"); });
  ASSERT_TRUE(c1.ok()) << c1.status();
  EXPECT_THAT(c1->agent_ids, ElementsAre("a0", "a1", "a2", "a3"));

  ASSERT_TRUE(W([](WriteTxn& txn) {
                for (const char* id : {"z9", "m1", "b2"}) {
                  if (absl::Status s = txn.InsertAgent(MakeAgent(id)); !s.ok()) return s;
                }
                Cluster c;
                c.id = "c3";
                c.agent_ids = {"z9", "m1", "b2"};  // ladder order, not sorted
                c.num_ilds = 4;
                c.topology = fabric::IldTopology::kMesh;
                c.cluster_topology = fabric::ClusterTopology::kSwitched;
                return txn.InsertCluster(c);
              }).ok());
  auto c3 = R<Cluster>([](ReadTxn& txn) { return txn.GetCluster("c3"); });
  ASSERT_TRUE(c3.ok()) << c3.status();
  EXPECT_THAT(c3->agent_ids, ElementsAre("z9", "m1", "b2"));
  EXPECT_EQ(c3->num_ilds, 4u);
  EXPECT_EQ(c3->topology, fabric::IldTopology::kMesh);
  EXPECT_EQ(c3->cluster_topology, fabric::ClusterTopology::kSwitched);

  auto all = R<std::vector<Cluster>>([](ReadTxn& txn) { return txn.ListClusters(); });
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].id, "c3");
  EXPECT_THAT((*all)[1].agent_ids, ElementsAre("a4", "a5"));

  auto of = R<std::string>([](ReadTxn& txn) { return txn.ClusterOfAgent("m1"); });
  EXPECT_EQ(*of, "c3");
  of = R<std::string>([](ReadTxn& txn) { return txn.ClusterOfAgent("nobody"); });
  EXPECT_EQ(*of, "");

  Cluster dup;
  dup.id = "c1";
  absl::Status s = W([&](WriteTxn& txn) { return txn.InsertCluster(dup); });
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_EQ(Msg(s), "cluster c1 already exists");

  Cluster taken;
  taken.id = "c4";
  taken.agent_ids = {"a0"};
  s = W([&](WriteTxn& txn) { return txn.InsertCluster(taken); });
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_EQ(Msg(s), "agent a0 is already in cluster c1");

  Cluster unknown;
  unknown.id = "c4";
  unknown.agent_ids = {"ghost"};
  s = W([&](WriteTxn& txn) { return txn.InsertCluster(unknown); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(Msg(s), "cluster c4: agent ghost does not exist");

  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("solo")); }).ok());
  Cluster twice;
  twice.id = "c4";
  twice.agent_ids = {"solo", "solo"};
  s = W([&](WriteTxn& txn) { return txn.InsertCluster(twice); });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(Msg(s), "cluster c4: agent solo is listed twice");

  // Failed inserts left nothing, even when the callback ignores the error.
  ASSERT_TRUE(W([&](WriteTxn& txn) {
                txn.InsertCluster(twice).IgnoreError();
                return absl::OkStatus();
              }).ok());
  auto c4 = R<Cluster>([](ReadTxn& txn) { return txn.GetCluster("c4"); });
  EXPECT_EQ(c4.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Msg(c4.status()), "cluster c4 not found");
  of = R<std::string>([](ReadTxn& txn) { return txn.ClusterOfAgent("solo"); });
  EXPECT_EQ(*of, "");
}

TEST_F(StorageRecordsTest, ClusterDeleteRefusedWhileInUse) {
  absl::Status s = W([](WriteTxn& txn) { return txn.DeleteCluster("c2"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(Msg(s), "cluster c2 has 1 allocation (al3); remove them first");

  // A partition without an allocation still holds the cluster.
  ASSERT_TRUE(W([](WriteTxn& txn) {
                if (absl::Status s = txn.DeleteAllocation("al3"); !s.ok()) return s;
                return txn.InsertPartition(MakePartition("p", "c2", "", {Ipu("a5", 0)}));
              }).ok());
  s = W([](WriteTxn& txn) { return txn.DeleteCluster("c2"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(Msg(s), "cluster c2 has 1 partition (p); remove them first");

  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeletePartition("p"); }).ok());
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeleteCluster("c2"); }).ok());
  // Its agents are free again and may be deleted.
  auto of = R<std::string>([](ReadTxn& txn) { return txn.ClusterOfAgent("a5"); });
  EXPECT_EQ(*of, "");
  EXPECT_TRUE(W([](WriteTxn& txn) { return txn.DeleteAgent("a5"); }).ok());

  s = W([](WriteTxn& txn) { return txn.DeleteCluster("c2"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(Msg(s), "cluster c2 not found");
}

TEST_F(StorageRecordsTest, AllocationRoundTripAndErrors) {
  auto al1 = R<Allocation>([](ReadTxn& txn) { return txn.GetAllocation("al1"); });
  ASSERT_TRUE(al1.ok()) << al1.status();
  EXPECT_EQ(al1->cluster_id, "c1");
  EXPECT_THAT(al1->agent_ids, ElementsAre("a0", "a1"));
  auto all = R<std::vector<Allocation>>([](ReadTxn& txn) { return txn.ListAllocations(); });
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[1].id, "al2");
  EXPECT_THAT((*all)[1].agent_ids, ElementsAre("a2", "a3"));
  EXPECT_EQ((*all)[2].cluster_id, "c2");
  EXPECT_EQ(*R<std::string>([](ReadTxn& txn) { return txn.AllocationOfAgent("a3"); }), "al2");
  EXPECT_EQ(*R<std::string>([](ReadTxn& txn) { return txn.AllocationOfAgent("a5"); }), "");

  struct Case {
    Allocation allocation;
    absl::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"al1", "c1", {}}, absl::StatusCode::kAlreadyExists, "allocation al1 already exists"},
      {{"x", "nope", {}},
       absl::StatusCode::kFailedPrecondition,
       "allocation x: cluster nope does not exist"},
      {{"x", "c1", {"a5"}},
       absl::StatusCode::kFailedPrecondition,
       "allocation x: agent a5 is not in cluster c1"},
      {{"x", "c1", {"ghost"}},
       absl::StatusCode::kFailedPrecondition,
       "allocation x: agent ghost is not in cluster c1"},
      {{"x", "c1", {"a0"}},
       absl::StatusCode::kAlreadyExists,
       "agent a0 is already in allocation al1"},
      {{"x", "c2", {"a5", "a5"}},
       absl::StatusCode::kInvalidArgument,
       "allocation x: agent a5 is listed twice"},
  };
  for (const Case& c : cases) {
    absl::Status s = W([&](WriteTxn& txn) { return txn.InsertAllocation(c.allocation); });
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_EQ(Msg(s), c.message);
    auto x = R<Allocation>([](ReadTxn& txn) { return txn.GetAllocation("x"); });
    EXPECT_EQ(x.status().code(), absl::StatusCode::kNotFound) << "left behind by " << c.message;
  }
  EXPECT_EQ(*R<std::string>([](ReadTxn& txn) { return txn.AllocationOfAgent("a5"); }), "");

  absl::Status s = W([](WriteTxn& txn) { return txn.DeleteAllocation("x"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Msg(s), "allocation x not found");
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeleteAllocation("al3"); }).ok());
  EXPECT_EQ(*R<std::string>([](ReadTxn& txn) { return txn.AllocationOfAgent("a4"); }), "");
}

TEST_F(StorageRecordsTest, PartitionEveryFieldRoundTrips) {
  Partition want = FullPartition("p-full");
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertPartition(want); }).ok());
  auto got = GetPartition("p-full");
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSamePartition(*got, want);

  std::vector<Partition> list = ListPartitions();
  ASSERT_EQ(list.size(), 1u);
  ExpectSamePartition(list[0], want);

  // Defaults and an empty allocation id round-trip too.
  Partition plain = MakePartition("p-plain", "c1", "", {Ipu("a2", 0)});
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertPartition(plain); }).ok());
  got = GetPartition("p-plain");
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSamePartition(*got, plain);

  // A partition without IPUs (never produced by the server, but storable).
  Partition empty = MakePartition("p-empty", "c1", "al1", {});
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertPartition(empty); }).ok());
  got = GetPartition("p-empty");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->ipus.empty());
  EXPECT_THAT(Ids(ListPartitions()), ElementsAre("p-empty", "p-full", "p-plain"));
}

TEST_F(StorageRecordsTest, PartitionUpdateRewritesEverything) {
  Partition p = MakePartition("p", "c1", "al1", {Ipu("a0", 0), Ipu("a0", 1)});
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertPartition(p); }).ok());
  Partition changed = FullPartition("p");
  changed.ipus = {PartitionIpu{1, 0, 4, 0, IpuRef{"a1", 0}}, PartitionIpu{1, 0, 5, 1, {"a0", 1}}};
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.UpdatePartition(changed); }).ok());
  auto got = GetPartition("p");
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSamePartition(*got, changed);
  // a0:0 was released by the update.
  auto used = R<std::set<IpuRef>>([](ReadTxn& txn) { return txn.UsedIpus("c1"); });
  ASSERT_TRUE(used.ok());
  EXPECT_EQ(*used, (std::set<IpuRef>{{"a0", 1}, {"a1", 0}}));

  absl::Status s = W([](WriteTxn& txn) { return txn.UpdatePartition(FullPartition("ghost")); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(Msg(s), "partition ghost not found");

  // An update that would take a held IPU changes nothing at all.
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertPartition(MakePartition("q", "c1", "al2", {Ipu("a2", 0)}));
              }).ok());
  Partition grab = *got;
  grab.generation = 99;
  grab.ipus.push_back(Ipu("a2", 0));
  s = W([&](WriteTxn& txn) {
    txn.UpdatePartition(grab).IgnoreError();
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok());
  got = GetPartition("p");
  ASSERT_TRUE(got.ok());
  ExpectSamePartition(*got, changed);

  s = W([&](WriteTxn& txn) {
    Partition bad = changed;
    bad.allocation_id = "nope";
    return txn.UpdatePartition(bad);
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(Msg(s), "partition p: allocation nope does not exist");
}

TEST_F(StorageRecordsTest, PartitionStateUpdateKeepsMembership) {
  Partition p = MakePartition("p", "c1", "al1", {Ipu("a0", 0), Ipu("a0", 1)});
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertPartition(p); }).ok());
  Partition changed = p;
  changed.ready_state = fabric::ReadyState::kError;
  changed.operation_state = fabric::OperationState::kFailed;
  changed.errors = {"agent a0: IPU 1 error"};
  changed.generation = 42;
  changed.ipus = {Ipu("a1", 0)};  // ignored: membership is not a state
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.UpdatePartitionState(changed); }).ok());
  auto got = GetPartition("p");
  ASSERT_TRUE(got.ok()) << got.status();
  Partition expected = changed;
  expected.ipus = p.ipus;
  ExpectSamePartition(*got, expected);

  absl::Status s =
      W([](WriteTxn& txn) { return txn.UpdatePartitionState(FullPartition("ghost")); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(Msg(s), "partition ghost not found");

  s = W([&](WriteTxn& txn) {
    Partition bad = changed;
    bad.allocation_id = "nope";
    return txn.UpdatePartitionState(bad);
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  got = GetPartition("p");
  ASSERT_TRUE(got.ok());
  ExpectSamePartition(*got, expected);
}

TEST_F(StorageRecordsTest, PartitionInsertErrors) {
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertPartition(MakePartition("p1", "c1", "al1", {Ipu("a0", 0)}));
              }).ok());
  struct Case {
    Partition partition;
    absl::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases = {
      {MakePartition("p1", "c1", "al1", {Ipu("a0", 1)}), absl::StatusCode::kAlreadyExists,
       "partition p1 already exists"},
      {MakePartition("p2", "nope", "al1", {Ipu("a0", 1)}), absl::StatusCode::kFailedPrecondition,
       "partition p2: cluster nope does not exist"},
      {MakePartition("p2", "c1", "nope", {Ipu("a0", 1)}), absl::StatusCode::kFailedPrecondition,
       "partition p2: allocation nope does not exist"},
      {MakePartition("p2", "c1", "al1", {Ipu("a0", 1), Ipu("ghost", 0)}),
       absl::StatusCode::kFailedPrecondition, "partition p2: agent ghost does not exist"},
      // Invariant 1: a held IPU, and the same IPU twice in one partition.
      {MakePartition("p2", "c1", "al1", {Ipu("a0", 1), Ipu("a0", 0)}),
       absl::StatusCode::kAlreadyExists, "IPU a0:0 is already in a partition (p1)"},
      {MakePartition("p2", "c1", "al1", {Ipu("a1", 3), Ipu("a1", 3)}),
       absl::StatusCode::kAlreadyExists, "IPU a1:3 is already in a partition (p2)"},
  };
  for (const Case& c : cases) {
    // The callback ignores the error: the method itself must leave nothing.
    absl::Status s;
    ASSERT_TRUE(W([&](WriteTxn& txn) {
                  s = txn.InsertPartition(c.partition);
                  return absl::OkStatus();
                }).ok());
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_EQ(Msg(s), c.message);
    EXPECT_EQ(GetPartition("p2").status().code(), absl::StatusCode::kNotFound) << c.message;
  }
  EXPECT_THAT(Ids(ListPartitions()), ElementsAre("p1"));
  auto used = R<std::set<IpuRef>>([](ReadTxn& txn) { return txn.UsedIpus("c1"); });
  EXPECT_EQ(*used, (std::set<IpuRef>{{"a0", 0}}));
}

TEST_F(StorageRecordsTest, SameIpuInTwoPartitionsRefusedInOneCallback) {
  absl::Status second;
  absl::Status s = W([&](WriteTxn& txn) {
    if (absl::Status s = txn.InsertPartition(MakePartition("x", "c1", "al1", {Ipu("a1", 2)}));
        !s.ok())
      return s;
    second = txn.InsertPartition(MakePartition("y", "c1", "al1", {Ipu("a0", 0), Ipu("a1", 2)}));
    return second;
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_EQ(Msg(second), "IPU a1:2 is already in a partition (x)");
  // The whole callback failed: neither partition is there.
  EXPECT_TRUE(ListPartitions().empty());
}

TEST_F(StorageRecordsTest, DeletesRefusedWhileInUse) {
  ASSERT_TRUE(
      W([](WriteTxn& txn) {
        return txn.InsertPartition(MakePartition("p", "c1", "al1", {Ipu("a0", 0), Ipu("a1", 0)}));
      }).ok());
  absl::Status s = W([](WriteTxn& txn) { return txn.DeleteAllocation("al1"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(Msg(s), "allocation al1 has 1 partition (p); remove them first");
  s = W([](WriteTxn& txn) { return txn.DeleteCluster("c1"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(Msg(s), "cluster c1 has 2 allocations (al1); remove them first");
  s = W([](WriteTxn& txn) { return txn.DeleteAgent("a0"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Msg(s), HasSubstr("agent a0 is in cluster c1"));

  // An agent outside any cluster that still holds a partition's IPU.
  ASSERT_TRUE(W([](WriteTxn& txn) {
                if (absl::Status s = txn.InsertAgent(MakeAgent("stray")); !s.ok()) return s;
                return txn.InsertPartition(MakePartition("q", "c1", "", {Ipu("stray", 0)}));
              }).ok());
  s = W([](WriteTxn& txn) { return txn.DeleteAgent("stray"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(Msg(s), "agent stray has IPUs in partition q");

  // Removing the partitions frees everything in order.
  ASSERT_TRUE(W([](WriteTxn& txn) {
                if (absl::Status s = txn.DeletePartition("p"); !s.ok()) return s;
                if (absl::Status s = txn.DeletePartition("q"); !s.ok()) return s;
                if (absl::Status s = txn.DeleteAgent("stray"); !s.ok()) return s;
                if (absl::Status s = txn.DeleteAllocation("al1"); !s.ok()) return s;
                return txn.DeleteAllocation("al2");
              }).ok());
  auto used = R<std::set<IpuRef>>([](ReadTxn& txn) { return txn.UsedIpus("c1"); });
  EXPECT_TRUE(used->empty());
  s = W([](WriteTxn& txn) { return txn.DeletePartition("p"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_EQ(Msg(s), "partition p not found");
  EXPECT_EQ(GetPartition("p").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(W([](WriteTxn& txn) { return txn.DeleteCluster("c1"); }).ok());
}

TEST_F(StorageRecordsTest, QueriesByAllocationAgentAndCluster) {
  ASSERT_TRUE(W([](WriteTxn& txn) {
                std::vector<Partition> ps = {
                    MakePartition("p3", "c1", "al2", {Ipu("a2", 0), Ipu("a2", 1)}),
                    MakePartition("p1", "c1", "al1", {Ipu("a0", 0), Ipu("a0", 1)}),
                    MakePartition("p2", "c1", "al1", {Ipu("a0", 2), Ipu("a1", 0)}),
                    MakePartition("p4", "c2", "al3", {Ipu("a4", 3)}),
                };
                for (const Partition& p : ps) {
                  if (absl::Status s = txn.InsertPartition(p); !s.ok()) return s;
                }
                return absl::OkStatus();
              }).ok());
  EXPECT_THAT(Ids(ListPartitions()), ElementsAre("p1", "p2", "p3", "p4"));
  std::vector<Partition> al1 = ListPartitions("al1");
  EXPECT_THAT(Ids(al1), ElementsAre("p1", "p2"));
  ASSERT_EQ(al1.size(), 2u);
  ASSERT_EQ(al1[1].ipus.size(), 2u);
  EXPECT_EQ(al1[1].ipus[1].ipu, (IpuRef{"a1", 0}));
  EXPECT_THAT(Ids(ListPartitions("al3")), ElementsAre("p4"));
  EXPECT_TRUE(ListPartitions("nope").empty());

  auto on_a0 = R<std::vector<Partition>>([](ReadTxn& txn) { return txn.PartitionsOnAgent("a0"); });
  ASSERT_TRUE(on_a0.ok()) << on_a0.status();
  EXPECT_THAT(Ids(*on_a0), ElementsAre("p1", "p2"));
  // Whole partitions come back, including their IPUs on other agents.
  ASSERT_EQ((*on_a0)[1].ipus.size(), 2u);
  EXPECT_EQ((*on_a0)[1].ipus[1].ipu, (IpuRef{"a1", 0}));
  auto on_a3 = R<std::vector<Partition>>([](ReadTxn& txn) { return txn.PartitionsOnAgent("a3"); });
  EXPECT_TRUE(on_a3->empty());

  EXPECT_EQ(*R<int64_t>([](ReadTxn& txn) { return txn.CountPartitionsInCluster("c1"); }), 3);
  EXPECT_EQ(*R<int64_t>([](ReadTxn& txn) { return txn.CountPartitionsInCluster("c2"); }), 1);
  EXPECT_EQ(*R<int64_t>([](ReadTxn& txn) { return txn.CountPartitionsInCluster("zz"); }), 0);
  EXPECT_EQ(*R<int64_t>([](ReadTxn& txn) { return txn.CountPartitionsInAllocation("al1"); }), 2);
  EXPECT_EQ(*R<int64_t>([](ReadTxn& txn) { return txn.CountPartitionsInAllocation("al3"); }), 1);
  EXPECT_EQ(*R<int64_t>([](ReadTxn& txn) { return txn.CountPartitionsInAllocation("zz"); }), 0);

  auto used = R<std::set<IpuRef>>([](ReadTxn& txn) { return txn.UsedIpus("c1"); });
  EXPECT_EQ(*used,
            (std::set<IpuRef>{{"a0", 0}, {"a0", 1}, {"a0", 2}, {"a1", 0}, {"a2", 0}, {"a2", 1}}));
  used = R<std::set<IpuRef>>([](ReadTxn& txn) { return txn.UsedIpus("c2"); });
  EXPECT_EQ(*used, (std::set<IpuRef>{{"a4", 3}}));
  used = R<std::set<IpuRef>>([](ReadTxn& txn) { return txn.UsedIpus("zz"); });
  EXPECT_TRUE(used->empty());
}

TEST_F(StorageRecordsTest, NextGenerationIsMonotonicAcrossReopen) {
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
  auto reopened = Store::Open(dir_.File("vipu.db"));
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  take(**reopened, 2);
  EXPECT_THAT(seen, ElementsAre(1, 2, 3, 4, 5));
}

TEST_F(StorageRecordsTest, ReadSeesConsistentSnapshot) {
  // A read transaction keeps its snapshot while a write commits.
  absl::Status s = store_->Read([&](ReadTxn& txn) {
    auto before = txn.ListAgents();
    if (!before.ok()) return before.status();
    absl::Status w = store_->Write([](WriteTxn& w) { return w.InsertAgent(MakeAgent("late")); });
    if (!w.ok()) return w;
    auto after = txn.ListAgents();
    if (!after.ok()) return after.status();
    EXPECT_EQ(before->size(), after->size());
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s;
  auto late = R<Agent>([](ReadTxn& txn) { return txn.GetAgent("late"); });
  EXPECT_TRUE(late.ok());
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
