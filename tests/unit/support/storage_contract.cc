// The StoreContract test bodies (tests/unit/support/storage_contract.h), written
// against storage/store.h alone so that every implementation runs them.
#include "tests/unit/support/storage_contract.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/store.h"
#include "tests/unit/support/storage_test_util.h"

namespace vipu::storage {
namespace {

using test_util::AsyncResults;
using test_util::Ipu;
using test_util::IpuList;
using test_util::MakeAgent;
using test_util::MakePartition;
using test_util::Summaries;

using fabric::Agent;
using fabric::Allocation;
using fabric::Cluster;
using fabric::IpuRef;
using fabric::Partition;
using fabric::PartitionIpu;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The ids `example` names: its words that hold a digit, and the digit-less
// ids these tests use. The wording of a message is the implementation's;
// which objects it names is the contract.
::testing::Matcher<std::string> NamesAsIn(const std::string& example) {
  static const std::set<std::string> kPlainIds = {"ghost", "solo", "nope", "stray", "x", "p", "q"};
  std::vector<::testing::Matcher<std::string>> names;
  for (absl::string_view word : absl::StrSplit(example, absl::ByAnyChar(" ();,"))) {
    std::string id(word);
    if (id.empty()) continue;
    if (std::any_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        kPlainIds.count(id) > 0) {
      names.push_back(HasSubstr(id));
    }
  }
  return ::testing::AllOfArray(names);
}

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

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

std::set<std::string> AgentIds(Store& store) {
  std::set<std::string> ids;
  absl::Status s = store.Read([&](ReadTxn& txn) {
    auto agents = txn.ListAgents();
    if (!agents.ok()) return agents.status();
    for (const auto& a : *agents) ids.insert(a.id);
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return ids;
}

}  // namespace

void PrintTo(const StoreContractParam& param, std::ostream* os) { *os << param.name; }

std::string StoreContractParamName(const ::testing::TestParamInfo<StoreContractParam>& info) {
  return info.param.name;
}

void StoreContract::SetUp() {
  ASSERT_FALSE(dir_.path().empty());
  store_ = GetParam().factory(dir_.path());
  ASSERT_NE(store_, nullptr) << GetParam().name << ": the factory opened no store";
  absl::Status seeded = W([](WriteTxn& txn) {
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
    if (absl::Status s = txn.InsertAllocation({"al1", "c1", {"a0", "a1"}}); !s.ok()) return s;
    if (absl::Status s = txn.InsertAllocation({"al2", "c1", {"a2", "a3"}}); !s.ok()) return s;
    return txn.InsertAllocation({"al3", "c2", {"a4"}});
  });
  ASSERT_TRUE(seeded.ok()) << seeded;
}

void StoreContract::Reopen() {
  store_.reset();
  store_ = GetParam().factory(dir_.path());
  ASSERT_NE(store_, nullptr) << GetParam().name << ": the factory did not reopen the store";
}

namespace {

absl::StatusOr<Partition> GetPartitionOf(Store& store, const std::string& id) {
  absl::StatusOr<Partition> out = absl::UnknownError("not run");
  absl::Status s = store.Read([&](ReadTxn& txn) {
    out = txn.GetPartition(id);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

std::vector<Partition> ListPartitionsOf(Store& store, const std::string& allocation = "") {
  std::vector<Partition> out;
  absl::Status s = store.Read([&](ReadTxn& txn) {
    auto list = txn.ListPartitions(allocation);
    if (!list.ok()) return list.status();
    out = *std::move(list);
    return absl::OkStatus();
  });
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

}  // namespace

TEST_P(StoreContract, AgentRoundTripUpdateDelete) {
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
  EXPECT_THAT(Msg(got.status()), NamesAsIn("agent bow-1 not found"));
}

TEST_P(StoreContract, AgentErrors) {
  absl::Status s = W([](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("a0")); });
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("agent a0 already exists"));

  s = W([](WriteTxn& txn) { return txn.UpdateAgent(MakeAgent("ghost")); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("agent ghost not found"));

  s = W([](WriteTxn& txn) { return txn.DeleteAgent("ghost"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;

  s = W([](WriteTxn& txn) { return txn.DeleteAgent("a5"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("agent a5 is in cluster c2"));
}

TEST_P(StoreContract, ClusterRoundTripAndErrors) {
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
  EXPECT_THAT(Msg(s), NamesAsIn("cluster c1 already exists"));

  Cluster taken;
  taken.id = "c4";
  taken.agent_ids = {"a0"};
  s = W([&](WriteTxn& txn) { return txn.InsertCluster(taken); });
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("agent a0 is already in cluster c1"));

  Cluster unknown;
  unknown.id = "c4";
  unknown.agent_ids = {"ghost"};
  s = W([&](WriteTxn& txn) { return txn.InsertCluster(unknown); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("cluster c4: agent ghost does not exist"));

  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("solo")); }).ok());
  Cluster twice;
  twice.id = "c4";
  twice.agent_ids = {"solo", "solo"};
  s = W([&](WriteTxn& txn) { return txn.InsertCluster(twice); });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("cluster c4: agent solo is listed twice"));

  // Failed inserts left nothing, even when the callback ignores the error.
  ASSERT_TRUE(W([&](WriteTxn& txn) {
                txn.InsertCluster(twice).IgnoreError();
                return absl::OkStatus();
              }).ok());
  auto c4 = R<Cluster>([](ReadTxn& txn) { return txn.GetCluster("c4"); });
  EXPECT_EQ(c4.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Msg(c4.status()), NamesAsIn("cluster c4 not found"));
  of = R<std::string>([](ReadTxn& txn) { return txn.ClusterOfAgent("solo"); });
  EXPECT_EQ(*of, "");
}

TEST_P(StoreContract, ClusterDeleteRefusedWhileInUse) {
  absl::Status s = W([](WriteTxn& txn) { return txn.DeleteCluster("c2"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("cluster c2 has 1 allocation (al3); remove them first"));

  // A partition without an allocation still holds the cluster.
  ASSERT_TRUE(W([](WriteTxn& txn) {
                if (absl::Status s = txn.DeleteAllocation("al3"); !s.ok()) return s;
                return txn.InsertPartition(MakePartition("p", "c2", "", {Ipu("a5", 0)}));
              }).ok());
  s = W([](WriteTxn& txn) { return txn.DeleteCluster("c2"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("cluster c2 has 1 partition (p); remove them first"));

  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeletePartition("p"); }).ok());
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeleteCluster("c2"); }).ok());
  // Its agents are free again and may be deleted.
  auto of = R<std::string>([](ReadTxn& txn) { return txn.ClusterOfAgent("a5"); });
  EXPECT_EQ(*of, "");
  EXPECT_TRUE(W([](WriteTxn& txn) { return txn.DeleteAgent("a5"); }).ok());

  s = W([](WriteTxn& txn) { return txn.DeleteCluster("c2"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("cluster c2 not found"));
}

TEST_P(StoreContract, AllocationRoundTripAndErrors) {
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
    EXPECT_THAT(Msg(s), NamesAsIn(c.message));
    auto x = R<Allocation>([](ReadTxn& txn) { return txn.GetAllocation("x"); });
    EXPECT_EQ(x.status().code(), absl::StatusCode::kNotFound) << "left behind by " << c.message;
  }
  EXPECT_EQ(*R<std::string>([](ReadTxn& txn) { return txn.AllocationOfAgent("a5"); }), "");

  absl::Status s = W([](WriteTxn& txn) { return txn.DeleteAllocation("x"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Msg(s), NamesAsIn("allocation x not found"));
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeleteAllocation("al3"); }).ok());
  EXPECT_EQ(*R<std::string>([](ReadTxn& txn) { return txn.AllocationOfAgent("a4"); }), "");
}

TEST_P(StoreContract, PartitionEveryFieldRoundTrips) {
  Partition want = FullPartition("p-full");
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertPartition(want); }).ok());
  auto got = GetPartitionOf(*store_, "p-full");
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSamePartition(*got, want);

  std::vector<Partition> list = ListPartitionsOf(*store_);
  ASSERT_EQ(list.size(), 1u);
  ExpectSamePartition(list[0], want);

  // Defaults and an empty allocation id round-trip too.
  Partition plain = MakePartition("p-plain", "c1", "", {Ipu("a2", 0)});
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertPartition(plain); }).ok());
  got = GetPartitionOf(*store_, "p-plain");
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSamePartition(*got, plain);

  // A partition without IPUs (never produced by the server, but storable).
  Partition empty = MakePartition("p-empty", "c1", "al1", {});
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertPartition(empty); }).ok());
  got = GetPartitionOf(*store_, "p-empty");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->ipus.empty());
  EXPECT_THAT(Ids(ListPartitionsOf(*store_)), ElementsAre("p-empty", "p-full", "p-plain"));
}

TEST_P(StoreContract, PartitionUpdateRewritesEverything) {
  Partition p = MakePartition("p", "c1", "al1", {Ipu("a0", 0), Ipu("a0", 1)});
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertPartition(p); }).ok());
  Partition changed = FullPartition("p");
  changed.ipus = {PartitionIpu{1, 0, 4, 0, IpuRef{"a1", 0}}, PartitionIpu{1, 0, 5, 1, {"a0", 1}}};
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.UpdatePartition(changed); }).ok());
  auto got = GetPartitionOf(*store_, "p");
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSamePartition(*got, changed);
  // a0:0 was released by the update.
  auto used = R<std::set<IpuRef>>([](ReadTxn& txn) { return txn.UsedIpus("c1"); });
  ASSERT_TRUE(used.ok());
  EXPECT_EQ(*used, (std::set<IpuRef>{{"a0", 1}, {"a1", 0}}));

  absl::Status s = W([](WriteTxn& txn) { return txn.UpdatePartition(FullPartition("ghost")); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("partition ghost not found"));

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
  got = GetPartitionOf(*store_, "p");
  ASSERT_TRUE(got.ok());
  ExpectSamePartition(*got, changed);

  s = W([&](WriteTxn& txn) {
    Partition bad = changed;
    bad.allocation_id = "nope";
    return txn.UpdatePartition(bad);
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("partition p: allocation nope does not exist"));
}

TEST_P(StoreContract, PartitionStateUpdateKeepsMembership) {
  Partition p = MakePartition("p", "c1", "al1", {Ipu("a0", 0), Ipu("a0", 1)});
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertPartition(p); }).ok());
  Partition changed = p;
  changed.ready_state = fabric::ReadyState::kError;
  changed.operation_state = fabric::OperationState::kFailed;
  changed.errors = {"agent a0: IPU 1 error"};
  changed.generation = 42;
  changed.ipus = {Ipu("a1", 0)};  // ignored: membership is not a state
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.UpdatePartitionState(changed); }).ok());
  auto got = GetPartitionOf(*store_, "p");
  ASSERT_TRUE(got.ok()) << got.status();
  Partition expected = changed;
  expected.ipus = p.ipus;
  ExpectSamePartition(*got, expected);

  absl::Status s =
      W([](WriteTxn& txn) { return txn.UpdatePartitionState(FullPartition("ghost")); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("partition ghost not found"));

  s = W([&](WriteTxn& txn) {
    Partition bad = changed;
    bad.allocation_id = "nope";
    return txn.UpdatePartitionState(bad);
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  got = GetPartitionOf(*store_, "p");
  ASSERT_TRUE(got.ok());
  ExpectSamePartition(*got, expected);
}

TEST_P(StoreContract, PartitionInsertErrors) {
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
    EXPECT_THAT(Msg(s), NamesAsIn(c.message));
    EXPECT_EQ(GetPartitionOf(*store_, "p2").status().code(), absl::StatusCode::kNotFound)
        << c.message;
  }
  EXPECT_THAT(Ids(ListPartitionsOf(*store_)), ElementsAre("p1"));
  auto used = R<std::set<IpuRef>>([](ReadTxn& txn) { return txn.UsedIpus("c1"); });
  EXPECT_EQ(*used, (std::set<IpuRef>{{"a0", 0}}));
}

TEST_P(StoreContract, SameIpuInTwoPartitionsRefusedInOneCallback) {
  absl::Status second;
  absl::Status s = W([&](WriteTxn& txn) {
    if (absl::Status s = txn.InsertPartition(MakePartition("x", "c1", "al1", {Ipu("a1", 2)}));
        !s.ok())
      return s;
    second = txn.InsertPartition(MakePartition("y", "c1", "al1", {Ipu("a0", 0), Ipu("a1", 2)}));
    return second;
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_THAT(Msg(second), NamesAsIn("IPU a1:2 is already in a partition (x)"));
  // The whole callback failed: neither partition is there.
  EXPECT_TRUE(ListPartitionsOf(*store_).empty());
}

TEST_P(StoreContract, DeletesRefusedWhileInUse) {
  ASSERT_TRUE(
      W([](WriteTxn& txn) {
        return txn.InsertPartition(MakePartition("p", "c1", "al1", {Ipu("a0", 0), Ipu("a1", 0)}));
      }).ok());
  absl::Status s = W([](WriteTxn& txn) { return txn.DeleteAllocation("al1"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("allocation al1 has 1 partition (p); remove them first"));
  s = W([](WriteTxn& txn) { return txn.DeleteCluster("c1"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("cluster c1 has 2 allocations (al1); remove them first"));
  s = W([](WriteTxn& txn) { return txn.DeleteAgent("a0"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("agent a0 is in cluster c1"));

  // An agent outside any cluster that still holds a partition's IPU.
  ASSERT_TRUE(W([](WriteTxn& txn) {
                if (absl::Status s = txn.InsertAgent(MakeAgent("stray")); !s.ok()) return s;
                return txn.InsertPartition(MakePartition("q", "c1", "", {Ipu("stray", 0)}));
              }).ok());
  s = W([](WriteTxn& txn) { return txn.DeleteAgent("stray"); });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(Msg(s), NamesAsIn("agent stray has IPUs in partition q"));

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
  EXPECT_THAT(Msg(s), NamesAsIn("partition p not found"));
  EXPECT_EQ(GetPartitionOf(*store_, "p").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(W([](WriteTxn& txn) { return txn.DeleteCluster("c1"); }).ok());
}

TEST_P(StoreContract, QueriesByAllocationAgentAndCluster) {
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
  EXPECT_THAT(Ids(ListPartitionsOf(*store_)), ElementsAre("p1", "p2", "p3", "p4"));
  std::vector<Partition> al1 = ListPartitionsOf(*store_, "al1");
  EXPECT_THAT(Ids(al1), ElementsAre("p1", "p2"));
  ASSERT_EQ(al1.size(), 2u);
  ASSERT_EQ(al1[1].ipus.size(), 2u);
  EXPECT_EQ(al1[1].ipus[1].ipu, (IpuRef{"a1", 0}));
  EXPECT_THAT(Ids(ListPartitionsOf(*store_, "al3")), ElementsAre("p4"));
  EXPECT_TRUE(ListPartitionsOf(*store_, "nope").empty());

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

TEST_P(StoreContract, ClusterAndAllocationRefsAgreeWithGets) {
  auto check = [](ReadTxn& txn) -> absl::Status {
    auto clusters = txn.ListClusters();
    auto cluster_refs = txn.ClusterRefs();
    EXPECT_TRUE(clusters.ok() && cluster_refs.ok());
    if (!clusters.ok() || !cluster_refs.ok()) return absl::OkStatus();
    EXPECT_EQ(clusters->size(), cluster_refs->size());
    for (size_t i = 0; i < std::min(clusters->size(), cluster_refs->size()); ++i) {
      const Cluster& c = (*clusters)[i];
      EXPECT_EQ((*cluster_refs)[i]->id, c.id);
      EXPECT_EQ((*cluster_refs)[i]->agent_ids, c.agent_ids);
      auto ref = txn.ClusterRef(c.id);
      auto got = txn.GetCluster(c.id);
      EXPECT_TRUE(ref.ok() && got.ok()) << c.id;
      if (ref.ok() && got.ok()) {
        EXPECT_EQ((*ref)->agent_ids, got->agent_ids);
        EXPECT_EQ((*ref)->num_ilds, got->num_ilds);
        EXPECT_EQ((*ref)->topology, got->topology);
        EXPECT_EQ((*ref)->cluster_topology, got->cluster_topology);
      }
    }
    auto allocations = txn.ListAllocations();
    auto allocation_refs = txn.AllocationRefs();
    EXPECT_TRUE(allocations.ok() && allocation_refs.ok());
    if (!allocations.ok() || !allocation_refs.ok()) return absl::OkStatus();
    EXPECT_EQ(allocations->size(), allocation_refs->size());
    for (size_t i = 0; i < std::min(allocations->size(), allocation_refs->size()); ++i) {
      const Allocation& a = (*allocations)[i];
      EXPECT_EQ((*allocation_refs)[i]->id, a.id);
      auto ref = txn.AllocationRef(a.id);
      auto got = txn.GetAllocation(a.id);
      EXPECT_TRUE(ref.ok() && got.ok()) << a.id;
      if (ref.ok() && got.ok()) {
        EXPECT_EQ((*ref)->cluster_id, got->cluster_id);
        EXPECT_EQ((*ref)->agent_ids, got->agent_ids);
      }
    }
    EXPECT_EQ(txn.ClusterRef("nope").status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(txn.AllocationRef("nope").status().code(), absl::StatusCode::kNotFound);
    return absl::OkStatus();
  };
  ASSERT_TRUE(store_->Read(check).ok());
  // Twice: a second read may be served from memory, and must agree too.
  ASSERT_TRUE(store_->Read(check).ok());

  // After changes, inside the write that makes them and in later reads.
  ASSERT_TRUE(W([&](WriteTxn& txn) -> absl::Status {
                if (absl::Status s = txn.DeleteAllocation("al3"); !s.ok()) return s;
                if (absl::Status s = txn.InsertAllocation({"al4", "c2", {"a5", "a4"}}); !s.ok())
                  return s;
                EXPECT_EQ(txn.AllocationRef("al3").status().code(), absl::StatusCode::kNotFound);
                auto al4 = txn.AllocationRef("al4");
                EXPECT_TRUE(al4.ok()) << al4.status();
                if (al4.ok()) {
                  EXPECT_THAT((*al4)->agent_ids, ElementsAre("a5", "a4"));
                }
                return check(txn);
              }).ok());
  ASSERT_TRUE(store_->Read(check).ok());
  auto al3 =
      R<std::shared_ptr<const Allocation>>([](ReadTxn& txn) { return txn.AllocationRef("al3"); });
  EXPECT_EQ(al3.status().code(), absl::StatusCode::kNotFound);
  auto refs = R<std::vector<std::shared_ptr<const Allocation>>>(
      [](ReadTxn& txn) { return txn.AllocationRefs(); });
  ASSERT_TRUE(refs.ok());
  std::vector<std::string> ids;
  for (const auto& a : *refs) ids.push_back(a->id);
  EXPECT_THAT(ids, ElementsAre("al1", "al2", "al4"));
}

TEST_P(StoreContract, NextGenerationIsMonotonicAcrossReopen) {
  std::vector<uint64_t> committed;
  auto take = [&](int n, bool fail) {
    std::vector<uint64_t> got;
    absl::Status s = store_->Write([&](WriteTxn& txn) {
      for (int i = 0; i < n; ++i) {
        absl::StatusOr<uint64_t> g = txn.NextGeneration();
        if (!g.ok()) return g.status();
        got.push_back(*g);
      }
      return fail ? absl::AbortedError("gives up") : absl::OkStatus();
    });
    EXPECT_EQ(s.ok(), !fail) << s;
    ASSERT_EQ(got.size(), static_cast<size_t>(n));
    // Within one callback too.
    for (size_t i = 1; i < got.size(); ++i) EXPECT_LT(got[i - 1], got[i]);
    if (!fail) committed.insert(committed.end(), got.begin(), got.end());
  };
  take(3, false);
  take(2, true);  // may be handed out again
  take(1, false);
  Reopen();
  take(2, false);
  ASSERT_EQ(committed.size(), 6u);
  EXPECT_GE(committed.front(), 1u);
  for (size_t i = 1; i < committed.size(); ++i) {
    EXPECT_LT(committed[i - 1], committed[i]) << "generation " << i << " went backwards";
  }
  // The last one handed out is what a copy of the state carries on.
  absl::StatusOr<uint64_t> last = R<uint64_t>([](ReadTxn& txn) { return txn.LastGeneration(); });
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, committed.back());
}

TEST_P(StoreContract, ReadSeesConsistentSnapshot) {
  // A read keeps its snapshot while a write commits.
  absl::Status s = store_->Read([&](ReadTxn& txn) {
    auto before = txn.ListAgents();
    if (!before.ok()) return before.status();
    absl::Status w = store_->Write([](WriteTxn& w) { return w.InsertAgent(MakeAgent("late")); });
    if (!w.ok()) return w;
    auto after = txn.ListAgents();
    if (!after.ok()) return after.status();
    EXPECT_EQ(before->size(), after->size());
    EXPECT_EQ(txn.GetAgent("late").status().code(), absl::StatusCode::kNotFound);
    return absl::OkStatus();
  });
  ASSERT_TRUE(s.ok()) << s;
  auto late = R<Agent>([](ReadTxn& txn) { return txn.GetAgent("late"); });
  EXPECT_TRUE(late.ok()) << late.status();
}

TEST_P(StoreContract, ReadSeesEveryAcknowledgedWriteFromAnyThread) {
  constexpr int kThreads = 4;
  constexpr int kWrites = 10;
  std::vector<std::thread> threads;
  std::atomic<int> missing{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
        absl::Status s =
            store_->Write([&](WriteTxn& txn) { return txn.InsertAgent(MakeAgent(id)); });
        EXPECT_TRUE(s.ok()) << s;
        absl::Status r = store_->Read([&](ReadTxn& txn) { return txn.GetAgent(id).status(); });
        if (!r.ok()) ++missing;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(missing.load(), 0);
  EXPECT_EQ(AgentIds(*store_).size(), static_cast<size_t>(6 + kThreads * kWrites));
  // Durable: the same after a reopen.
  Reopen();
  EXPECT_EQ(AgentIds(*store_).size(), static_cast<size_t>(6 + kThreads * kWrites));
}

TEST_P(StoreContract, ListsKeepPartitionsWithoutIpusAndTheirNeighboursIpus) {
  auto insert = [&](const std::string& id, const std::string& allocation,
                    const std::vector<std::pair<std::string, uint32_t>>& ipus,
                    std::vector<std::string> errors = {}) {
    Partition p = MakePartition(id, "c1", allocation, {});
    p.errors = std::move(errors);
    for (const auto& [agent, ipu] : ipus) {
      p.ipus.push_back(Ipu(agent, ipu, static_cast<uint32_t>(p.ipus.size())));
    }
    absl::Status s = W([&](WriteTxn& txn) { return txn.InsertPartition(p); });
    EXPECT_TRUE(s.ok()) << id << ": " << s;
  };
  EXPECT_TRUE(ListPartitionsOf(*store_).empty());
  insert("a-first-empty", "al1", {});
  insert("b", "al1", {{"a0", 0}, {"a0", 1}}, {"agent a0: not connected"});
  insert("c-empty", "al2", {});
  insert("d-empty", "al1", {});
  insert("e", "al2", {{"a3", 1}, {"a2", 1}}, {"two \"quoted\"\nlines \\", "", "second"});
  insert("f", "al1", {{"a1", 0}, {"a0", 2}, {"a1", 1}});
  insert("g-last-empty", "al1", {});

  std::vector<Partition> all = ListPartitionsOf(*store_);
  EXPECT_THAT(Summaries(all),
              ElementsAre("a-first-empty=[]", "b=[a0:0/r0 a0:1/r1]", "c-empty=[]", "d-empty=[]",
                          "e=[a3:1/r0 a2:1/r1]", "f=[a1:0/r0 a0:2/r1 a1:1/r2]", "g-last-empty=[]"));
  ASSERT_EQ(all.size(), 7u);
  EXPECT_THAT(all[1].errors, ElementsAre("agent a0: not connected"));
  EXPECT_THAT(all[4].errors, ElementsAre("two \"quoted\"\nlines \\", "", "second"));
  EXPECT_TRUE(all[5].errors.empty());

  EXPECT_THAT(Summaries(ListPartitionsOf(*store_, "al2")),
              ElementsAre("c-empty=[]", "e=[a3:1/r0 a2:1/r1]"));
  EXPECT_TRUE(ListPartitionsOf(*store_, "al3").empty());
  EXPECT_TRUE(ListPartitionsOf(*store_, "no-such-allocation").empty());
  auto on_a2 = R<std::vector<Partition>>([](ReadTxn& txn) { return txn.PartitionsOnAgent("a2"); });
  ASSERT_TRUE(on_a2.ok()) << on_a2.status();
  EXPECT_THAT(Summaries(*on_a2), ElementsAre("e=[a3:1/r0 a2:1/r1]"));
  auto on_nobody =
      R<std::vector<Partition>>([](ReadTxn& txn) { return txn.PartitionsOnAgent(""); });
  ASSERT_TRUE(on_nobody.ok());
  EXPECT_TRUE(on_nobody->empty());
}

TEST_P(StoreContract, UsersInsertGetListDelete) {
  UserRecord alice{"alice", "hash-a", false, {"a1", "a2"}, 5};
  UserRecord root{"root", "hash-r", true, {}, 6};
  EXPECT_EQ(*R<int64_t>([](ReadTxn& txn) { return txn.CountUsers(); }), 0);
  ASSERT_TRUE(W([&](WriteTxn& txn) -> absl::Status {
                if (absl::Status s = txn.InsertUser(root); !s.ok()) return s;
                return txn.InsertUser(alice);
              }).ok());
  ASSERT_TRUE(store_
                  ->Read([&](ReadTxn& txn) -> absl::Status {
                    auto got = txn.GetUser("alice");
                    EXPECT_TRUE(got.ok()) << got.status();
                    if (!got.ok()) return absl::OkStatus();
                    EXPECT_EQ(got->key_hash, "hash-a");
                    EXPECT_FALSE(got->is_admin);
                    EXPECT_EQ(got->allocations, (std::vector<std::string>{"a1", "a2"}));
                    EXPECT_EQ(got->created_unix_ms, 5);
                    auto all = txn.ListUsers();
                    EXPECT_TRUE(all.ok());
                    if (!all.ok()) return absl::OkStatus();
                    EXPECT_EQ(all->size(), 2u);
                    EXPECT_EQ(all->front().id, "alice");  // ordered by id
                    EXPECT_TRUE(all->back().is_admin);
                    EXPECT_EQ(*txn.CountUsers(), 2);
                    absl::Status bob = txn.GetUser("bob").status();
                    EXPECT_EQ(bob.code(), absl::StatusCode::kNotFound);
                    EXPECT_THAT(Msg(bob), HasSubstr("bob"));
                    return absl::OkStatus();
                  })
                  .ok());
  absl::Status dup = W([&](WriteTxn& txn) { return txn.InsertUser(alice); });
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists) << dup;
  EXPECT_THAT(Msg(dup), HasSubstr("alice"));
  EXPECT_TRUE(W([](WriteTxn& txn) { return txn.DeleteUser("alice"); }).ok());
  absl::Status gone = W([](WriteTxn& txn) { return txn.DeleteUser("alice"); });
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound) << gone;
  EXPECT_EQ(*R<int64_t>([](ReadTxn& txn) { return txn.CountUsers(); }), 1);
}

TEST_P(StoreContract, UserUpdateRewritesKeyAdminAndAllocationsButNotCreation) {
  UserRecord alice{"alice", "hash-a", false, {"a1"}, 5};
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertUser(alice); }).ok());
  UserRecord changed{"alice", "hash-b", true, {"a2", "a3"}, 99};
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.UpdateUser(changed); }).ok());
  // Reopening shows what was committed, not what a cache held.
  Reopen();
  auto got = R<UserRecord>([](ReadTxn& txn) { return txn.GetUser("alice"); });
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->key_hash, "hash-b");
  EXPECT_TRUE(got->is_admin);
  EXPECT_EQ(got->allocations, (std::vector<std::string>{"a2", "a3"}));
  EXPECT_EQ(got->created_unix_ms, 5);
  UserRecord ghost{"ghost", "h", false, {}, 1};
  absl::Status s = W([&](WriteTxn& txn) { return txn.UpdateUser(ghost); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(Msg(s), HasSubstr("ghost"));
}

TEST_P(StoreContract, SharesNeedThePartitionAndGoWithIt) {
  absl::Status s = W([](WriteTxn& txn) { return txn.SetPartitionShared("p", true); });
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  ASSERT_TRUE(W([](WriteTxn& txn) -> absl::Status {
                Partition p = MakePartition("p", "c1", "al1", {Ipu("a0", 0)});
                p.owner = "alice";
                if (absl::Status s = txn.InsertPartition(p); !s.ok()) return s;
                if (absl::Status s = txn.InsertPartition(MakePartition("q", "c1", "al1", {}));
                    !s.ok())
                  return s;
                if (absl::Status s = txn.SetPartitionShared("p", true); !s.ok()) return s;
                return txn.SetPartitionShared("p", true);  // idempotent
              }).ok());
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
  EXPECT_FALSE(shared("q"));
  EXPECT_FALSE(shared("nope"));
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.SetPartitionShared("p", false); }).ok());
  EXPECT_FALSE(shared("p"));
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.SetPartitionShared("p", false); }).ok());
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.SetPartitionShared("p", true); }).ok());
  ASSERT_TRUE(W([](WriteTxn& txn) { return txn.DeletePartition("p"); }).ok());
  EXPECT_FALSE(shared("p"));
  auto all = R<std::set<std::string>>([](ReadTxn& txn) { return txn.SharedPartitions(); });
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
  // A partition of the same id later starts unshared.
  ASSERT_TRUE(W([](WriteTxn& txn) {
                return txn.InsertPartition(MakePartition("p", "c1", "al1", {}));
              }).ok());
  EXPECT_FALSE(shared("p"));
}

TEST_P(StoreContract, FailingCallbacksLeaveNothingWhileConcurrentOnesCommit) {
  constexpr int kThreads = 50;
  const uint64_t writes_before = store_->writes();
  std::vector<absl::Status> results(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      results[i] = store_->Write([i](WriteTxn& txn) {
        // Every 5th callback writes, then fails: its row must vanish.
        absl::Status s = txn.InsertAgent(MakeAgent("w" + std::to_string(i)));
        if (!s.ok()) return s;
        if (i % 5 == 0) return absl::AbortedError("callback " + std::to_string(i) + " gives up");
        return absl::OkStatus();
      });
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> want = {"a0", "a1", "a2", "a3", "a4", "a5"};
  for (int i = 0; i < kThreads; ++i) {
    if (i % 5 == 0) {
      EXPECT_EQ(results[i].code(), absl::StatusCode::kAborted) << i << ": " << results[i];
    } else {
      EXPECT_TRUE(results[i].ok()) << i << ": " << results[i];
      want.insert("w" + std::to_string(i));
    }
  }
  EXPECT_EQ(AgentIds(*store_), want);
  EXPECT_EQ(store_->writes() - writes_before, static_cast<uint64_t>(kThreads));
  EXPECT_LE(store_->commits(), store_->writes());
}

TEST_P(StoreContract, SameIpuFromTwoConcurrentWritesGoesToOne) {
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE(round);
    const std::string left = "left" + std::to_string(round);
    const std::string right = "right" + std::to_string(round);
    const uint32_t base = static_cast<uint32_t>(round) * 2;
    absl::Status first, second;
    std::thread a([&] {
      first = W([&](WriteTxn& txn) {
        return txn.InsertPartition(
            MakePartition(left, "c2", "", {Ipu("a4", base), Ipu("a4", base + 1)}));
      });
    });
    std::thread b([&] {
      second = W([&](WriteTxn& txn) {
        return txn.InsertPartition(
            MakePartition(right, "c2", "", {Ipu("a5", base), Ipu("a4", base + 1)}));
      });
    });
    a.join();
    b.join();
    ASSERT_NE(first.ok(), second.ok()) << first << " / " << second;
    const absl::Status& loser = first.ok() ? second : first;
    EXPECT_EQ(loser.code(), absl::StatusCode::kAlreadyExists) << loser;
    EXPECT_THAT(Msg(loser), HasSubstr("a4:" + std::to_string(base + 1)));
    auto used = R<std::set<IpuRef>>([](ReadTxn& txn) { return txn.UsedIpus("c2"); });
    ASSERT_TRUE(used.ok());
    std::set<IpuRef> want_left = {{"a4", base}, {"a4", base + 1}};
    std::set<IpuRef> want_right = {{"a5", base}, {"a4", base + 1}};
    std::set<IpuRef> round_ipus;
    for (const IpuRef& ipu : *used) {
      if (ipu.ipu == base || ipu.ipu == base + 1) round_ipus.insert(ipu);
    }
    EXPECT_EQ(round_ipus, first.ok() ? want_left : want_right);
  }
}

TEST_P(StoreContract, ThrowingCallbackIsAnErrorAndLeavesNothing) {
  absl::Status s = W([](WriteTxn& txn) -> absl::Status {
    txn.InsertAgent(MakeAgent("x")).IgnoreError();
    throw std::runtime_error("boom");
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_THAT(Msg(s), HasSubstr("boom"));
  EXPECT_EQ(AgentIds(*store_).count("x"), 0u);
  // The store still writes.
  EXPECT_TRUE(W([](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("y")); }).ok());
  EXPECT_EQ(AgentIds(*store_).count("y"), 1u);
}

TEST_P(StoreContract, WriteInsideWriteIsRefused) {
  absl::Status inner;
  absl::Status outer = W([&](WriteTxn& txn) {
    inner = store_->Write([](WriteTxn& t) { return t.InsertAgent(MakeAgent("inner")); });
    return txn.InsertAgent(MakeAgent("outer"));
  });
  EXPECT_TRUE(outer.ok()) << outer;
  EXPECT_EQ(inner.code(), absl::StatusCode::kFailedPrecondition) << inner;
  std::set<std::string> ids = AgentIds(*store_);
  EXPECT_EQ(ids.count("outer"), 1u);
  EXPECT_EQ(ids.count("inner"), 0u);
}

TEST_P(StoreContract, WriteAsyncCallsDoneOnceAfterTheCommit) {
  AsyncResults results;
  std::atomic<int> first_calls{0};
  std::atomic<int> chained_calls{0};
  std::set<std::string> seen_in_done;
  store_->WriteAsync([](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("first")); },
                     [&, done = results.Callback()](absl::Status s) {
                       ++first_calls;
                       // Committed: a Read sees it already.
                       seen_in_done = AgentIds(*store_);
                       // A chained WriteAsync from `done` is allowed.
                       store_->WriteAsync(
                           [](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("chained")); },
                           [&, done](absl::Status s) {
                             ++chained_calls;
                             done(s);
                           });
                       done(s);
                     });
  std::vector<absl::Status> got = results.Await(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got[0].ok()) << got[0];
  EXPECT_TRUE(got[1].ok()) << got[1];
  EXPECT_EQ(seen_in_done.count("first"), 1u);
  EXPECT_EQ(seen_in_done.count("chained"), 0u);
  std::set<std::string> ids = AgentIds(*store_);
  EXPECT_EQ(ids.count("first"), 1u);
  EXPECT_EQ(ids.count("chained"), 1u);
  // Exactly once, also once the store has closed.
  store_.reset();
  EXPECT_EQ(first_calls.load(), 1);
  EXPECT_EQ(chained_calls.load(), 1);
}

TEST_P(StoreContract, WriteAsyncErrorLeavesNothingAndSparesTheOthers) {
  AsyncResults failed;
  AsyncResults whole;
  store_->WriteAsync(
      [](WriteTxn& txn) -> absl::Status {
        if (absl::Status s = txn.InsertAgent(MakeAgent("half")); !s.ok()) return s;
        return absl::InvalidArgumentError("no");
      },
      failed.Callback());
  store_->WriteAsync([](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("whole")); },
                     whole.Callback());
  std::vector<absl::Status> f = failed.Await(1);
  std::vector<absl::Status> w = whole.Await(1);
  ASSERT_EQ(f.size(), 1u);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(f[0].code(), absl::StatusCode::kInvalidArgument) << f[0];
  EXPECT_TRUE(w[0].ok()) << w[0];
  std::set<std::string> ids = AgentIds(*store_);
  EXPECT_EQ(ids.count("half"), 0u);
  EXPECT_EQ(ids.count("whole"), 1u);
}

TEST_P(StoreContract, DestroyingTheStoreCompletesQueuedWrites) {
  constexpr int kWrites = 20;
  std::vector<std::atomic<int>> calls(kWrites);
  std::vector<absl::Status> results(kWrites);
  for (int i = 0; i < kWrites; ++i) {
    store_->WriteAsync(
        [i](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("q" + std::to_string(i))); },
        [&, i](absl::Status s) {
          results[i] = std::move(s);
          ++calls[i];
        });
  }
  store_.reset();
  for (int i = 0; i < kWrites; ++i) {
    EXPECT_EQ(calls[i].load(), 1) << i;
    EXPECT_TRUE(results[i].ok()) << i << ": " << results[i];
  }
  Reopen();
  std::set<std::string> ids = AgentIds(*store_);
  for (int i = 0; i < kWrites; ++i) EXPECT_EQ(ids.count("q" + std::to_string(i)), 1u) << i;
}

TEST_P(StoreContract, CommitObserverSeesEveryDurableCommit) {
  std::atomic<int> calls{0};
  std::atomic<size_t> writes{0};
  std::atomic<bool> negative{false};
  store_->SetCommitObserver([&](double seconds, size_t n) {
    ++calls;
    writes += n;
    if (seconds < 0) negative = true;
  });
  const uint64_t commits_before = store_->commits();
  const uint64_t writes_before = store_->writes();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        W([&](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("o" + std::to_string(i))); }).ok());
  }
  // A failed callback alone commits nothing and is not observed.
  EXPECT_FALSE(W([](WriteTxn&) { return absl::InvalidArgumentError("no"); }).ok());
  EXPECT_EQ(calls.load(), static_cast<int>(store_->commits() - commits_before));
  EXPECT_GE(calls.load(), 1);
  EXPECT_EQ(writes.load(), 3u);
  EXPECT_EQ(store_->writes() - writes_before, 4u);
  EXPECT_FALSE(negative.load());
  store_->SetCommitObserver(nullptr);
  ASSERT_TRUE(W([&](WriteTxn& txn) { return txn.InsertAgent(MakeAgent("unobserved")); }).ok());
  EXPECT_EQ(writes.load(), 3u);
}

}  // namespace vipu::storage
