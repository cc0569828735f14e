// SimulatedMachine: generation rules of configure, reset and release; reported attributes.
#include <set>
#include <string>

#include "agents/simulated_machine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::agents {
namespace {

using fabric::HeldPartition;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

PartitionConfig Config(std::string id, uint64_t generation, std::vector<uint32_t> ipus) {
  PartitionConfig config;
  config.partition_id = std::move(id);
  config.generation = generation;
  config.ipus = std::move(ipus);
  config.routing = fabric::RoutingType::kDnc;
  config.sync_type = fabric::SyncType::kPodNativeDefault;
  config.partition_size = static_cast<uint32_t>(config.ipus.size());
  return config;
}

std::string AttributeValue(const IpuInfo& ipu, const std::string& name) {
  for (const Attribute& a : ipu.attributes) {
    if (a.name == name) return a.value;
  }
  return "<missing " + name + ">";
}

std::string DetailValue(const SimulatedMachine& machine, const std::string& name) {
  for (const Attribute& a : machine.details()) {
    if (a.name == name) return a.value;
  }
  return "<missing " + name + ">";
}

class SimulatedMachineTest : public ::testing::Test {
 protected:
  SimulatedMachine machine_{"ag1", fabric::MachineType::kM2000};
};

// --- Configure ---------------------------------------------------------------

TEST_F(SimulatedMachineTest, ConfigureHoldsPartition) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 1, {3, 2})).ok());
  EXPECT_THAT(machine_.Held(), ElementsAre(HeldPartition{"p1", 1, {2, 3}}));
  absl::StatusOr<PartitionConfig> config = machine_.Config("p1");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->routing, fabric::RoutingType::kDnc);
  EXPECT_EQ(config->sync_type, fabric::SyncType::kPodNativeDefault);
}

TEST_F(SimulatedMachineTest, ConfigureSameGenerationIsIdempotent) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 4, {0, 1})).ok());
  ASSERT_TRUE(machine_.Reset("p1", 4).ok());
  // IPU order does not matter: the same set is the same configuration.
  EXPECT_TRUE(machine_.Configure(Config("p1", 4, {1, 0})).ok());
  EXPECT_THAT(machine_.Held(), ElementsAre(HeldPartition{"p1", 4, {0, 1}}));
  // A no-op: the reset count of the held configuration is kept.
  EXPECT_EQ(machine_.ResetCountForTesting("p1"), 1u);
}

TEST_F(SimulatedMachineTest, ConfigureSameGenerationDifferentConfigIsRefused) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 4, {0, 1})).ok());
  absl::Status status = machine_.Configure(Config("p1", 4, {0, 1, 2, 3}));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("generation 4"));
  PartitionConfig other_routing = Config("p1", 4, {0, 1});
  other_routing.routing = fabric::RoutingType::kSwnc;
  EXPECT_EQ(machine_.Configure(other_routing).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(machine_.Held(), ElementsAre(HeldPartition{"p1", 4, {0, 1}}));
}

TEST_F(SimulatedMachineTest, ConfigureOlderGenerationIsRefused) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 5, {0, 1})).ok());
  absl::Status status = machine_.Configure(Config("p1", 4, {0, 1}));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("stale generation 4 < 5"));
  EXPECT_THAT(machine_.Held(), ElementsAre(HeldPartition{"p1", 5, {0, 1}}));
}

TEST_F(SimulatedMachineTest, ConfigureNewerGenerationReplacesAndMayMoveIpus) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 1, {0, 1})).ok());
  ASSERT_TRUE(machine_.Reset("p1", 1).ok());
  ASSERT_TRUE(machine_.Configure(Config("p1", 2, {2, 3})).ok());
  EXPECT_THAT(machine_.Held(), ElementsAre(HeldPartition{"p1", 2, {2, 3}}));
  EXPECT_EQ(machine_.ResetCountForTesting("p1"), 0u);
  // IPUs 0 and 1 are free again.
  EXPECT_TRUE(machine_.Configure(Config("p2", 1, {0, 1})).ok());
}

TEST_F(SimulatedMachineTest, ConfigureIpuHeldByAnotherPartitionIsRefused) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 1, {0, 1})).ok());
  absl::Status status = machine_.Configure(Config("p2", 9, {1, 2}));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("IPU 1"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("partition p1"));
  EXPECT_THAT(machine_.Held(), ElementsAre(HeldPartition{"p1", 1, {0, 1}}));
}

TEST_F(SimulatedMachineTest, ConfigureNewerGenerationOntoAnotherPartitionsIpuIsRefused) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 1, {0, 1})).ok());
  ASSERT_TRUE(machine_.Configure(Config("p2", 1, {2, 3})).ok());
  absl::Status status = machine_.Configure(Config("p1", 2, {1, 2}));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("partition p2"));
  EXPECT_THAT(machine_.Held(),
              ElementsAre(HeldPartition{"p1", 1, {0, 1}}, HeldPartition{"p2", 1, {2, 3}}));
}

TEST_F(SimulatedMachineTest, ConfigureBadIpuIndexIsInvalid) {
  absl::Status status = machine_.Configure(Config("p1", 1, {0, 4}));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("ipus: IPU index must be 0..3, got 4"));
  EXPECT_EQ(machine_.Configure(Config("p1", 1, {4294967295u})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(machine_.Held().empty());
}

TEST_F(SimulatedMachineTest, ConfigureRepeatedIpuIsInvalid) {
  absl::Status status = machine_.Configure(Config("p1", 1, {2, 2}));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("IPU 2 is listed twice"));
}

TEST_F(SimulatedMachineTest, ConfigureNoIpusIsInvalid) {
  EXPECT_EQ(machine_.Configure(Config("p1", 1, {})).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SimulatedMachineTest, ConfigureEmptyPartitionIdIsInvalid) {
  absl::Status status = machine_.Configure(Config("", 1, {0}));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("partition id"));
}

TEST_F(SimulatedMachineTest, ConfigurePartitionSizeSmallerThanIpusIsInvalid) {
  PartitionConfig config = Config("p1", 1, {0, 1});
  config.partition_size = 1;
  absl::Status status = machine_.Configure(config);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("partition size"));
  // Larger (the rest is on other machines) and 0 (unknown) are fine.
  config.partition_size = 64;
  EXPECT_TRUE(machine_.Configure(config).ok());
  PartitionConfig unknown = Config("p2", 1, {2});
  unknown.partition_size = 0;
  EXPECT_TRUE(machine_.Configure(unknown).ok());
}

// --- Reset -------------------------------------------------------------------

TEST_F(SimulatedMachineTest, ResetSameGeneration) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 3, {0})).ok());
  EXPECT_TRUE(machine_.Reset("p1", 3).ok());
  EXPECT_TRUE(machine_.Reset("p1", 3).ok());
  EXPECT_EQ(machine_.ResetCountForTesting("p1"), 2u);
  EXPECT_THAT(machine_.Held(), ElementsAre(HeldPartition{"p1", 3, {0}}));
}

TEST_F(SimulatedMachineTest, ResetOlderGenerationIsRefused) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 3, {0})).ok());
  absl::Status status = machine_.Reset("p1", 2);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("stale generation 2 < 3"));
  EXPECT_EQ(machine_.ResetCountForTesting("p1"), 0u);
}

TEST_F(SimulatedMachineTest, ResetNewerGenerationIsAdopted) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 3, {0})).ok());
  ASSERT_TRUE(machine_.Reset("p1", 7).ok());
  EXPECT_THAT(machine_.Held(), ElementsAre(HeldPartition{"p1", 7, {0}}));
  // The adopted generation now fences the old one.
  EXPECT_EQ(machine_.Reset("p1", 3).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(machine_.Configure(Config("p1", 3, {0})).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SimulatedMachineTest, ResetNotHeldIsNotFound) {
  absl::Status status = machine_.Reset("p1", 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr("partition p1 is not held by agent ag1"));
}

TEST_F(SimulatedMachineTest, ResetEmptyPartitionIdIsInvalid) {
  EXPECT_EQ(machine_.Reset("", 1).code(), absl::StatusCode::kInvalidArgument);
}

// --- Release -----------------------------------------------------------------

TEST_F(SimulatedMachineTest, ReleaseNotHeldIsOk) {
  EXPECT_TRUE(machine_.Release("p1", 1).ok());
  EXPECT_TRUE(machine_.Release("p1", 0).ok());
}

TEST_F(SimulatedMachineTest, ReleaseSameGenerationDropsAndFreesIpus) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 2, {0, 1, 2, 3})).ok());
  ASSERT_TRUE(machine_.Release("p1", 2).ok());
  EXPECT_TRUE(machine_.Held().empty());
  EXPECT_EQ(machine_.Config("p1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(machine_.Release("p1", 2).ok());  // again: idempotent
  EXPECT_TRUE(machine_.Configure(Config("p2", 1, {0, 1, 2, 3})).ok());
}

TEST_F(SimulatedMachineTest, ReleaseNewerGenerationDrops) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 2, {0})).ok());
  EXPECT_TRUE(machine_.Release("p1", 3).ok());
  EXPECT_TRUE(machine_.Held().empty());
}

TEST_F(SimulatedMachineTest, ReleaseOlderGenerationIsRefused) {
  ASSERT_TRUE(machine_.Configure(Config("p1", 2, {0})).ok());
  absl::Status status = machine_.Release("p1", 1);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), HasSubstr("stale generation 1 < 2"));
  EXPECT_THAT(machine_.Held(), ElementsAre(HeldPartition{"p1", 2, {0}}));
}

TEST_F(SimulatedMachineTest, ReleaseEmptyPartitionIdIsInvalid) {
  EXPECT_EQ(machine_.Release("", 1).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SimulatedMachineTest, HeldIsSortedByPartitionId) {
  ASSERT_TRUE(machine_.Configure(Config("pb", 1, {3})).ok());
  ASSERT_TRUE(machine_.Configure(Config("pa", 1, {0})).ok());
  EXPECT_THAT(machine_.Held(),
              ElementsAre(HeldPartition{"pa", 1, {0}}, HeldPartition{"pb", 1, {3}}));
}

// --- Identity and attributes -------------------------------------------------

TEST(SimulatedMachineAttributesTest, M2000HasFourIpusWithOrderedAttributes) {
  SimulatedMachine machine("ag1", fabric::MachineType::kM2000);
  ASSERT_EQ(machine.ipus().size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    const IpuInfo& ipu = machine.ipus()[i];
    EXPECT_EQ(ipu.index, i);
    EXPECT_EQ(AttributeValue(ipu, "board type"), "M2000");
    EXPECT_EQ(AttributeValue(ipu, "board variant"), "M2000");
    EXPECT_EQ(AttributeValue(ipu, "clock"), "1330MHz");
    EXPECT_EQ(AttributeValue(ipu, "ipu architecture"), "ipu2");
    EXPECT_EQ(AttributeValue(ipu, "ipu error state"), "no errors");
    EXPECT_EQ(AttributeValue(ipu, "target"), "Fabric");
    EXPECT_EQ(AttributeValue(ipu, "id"), std::to_string(i));
    EXPECT_EQ(AttributeValue(ipu, "firmware version"), "2.4.4");
    // The order of a listing: sorted by name, no key twice.
    std::vector<std::string> names;
    for (const Attribute& a : ipu.attributes) names.push_back(a.name);
    EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
    EXPECT_EQ(names.front(), "board ipu index");
  }
}

TEST(SimulatedMachineAttributesTest, BowReportsBowBoardAndClock) {
  SimulatedMachine machine("ag1", fabric::MachineType::kBow);
  EXPECT_EQ(machine.machine_type(), fabric::MachineType::kBow);
  for (const IpuInfo& ipu : machine.ipus()) {
    EXPECT_EQ(AttributeValue(ipu, "board type"), "Bow-2000");
    EXPECT_EQ(AttributeValue(ipu, "clock"), "1850MHz");
  }
  EXPECT_EQ(DetailValue(machine, "Platform"), "bow-p2");
}

TEST(SimulatedMachineAttributesTest, DetailsInGetAgentOrder) {
  SimulatedMachine machine("ag10", fabric::MachineType::kM2000);
  std::vector<std::string> names;
  for (const Attribute& a : machine.details()) names.push_back(a.name);
  EXPECT_THAT(names,
              ElementsAre("Platform", "Manufacturer", "Discovery Mode", "Virm version",
                          "Runtime version", "Board serial number", "Part number", "GWSW Version",
                          "IPUoF server version", "HDF Version", "HDF Hash", "Num of IPUs"));
  EXPECT_EQ(DetailValue(machine, "Platform"), "ipum-p2");
  EXPECT_EQ(DetailValue(machine, "Manufacturer"), "Graphcore");
  EXPECT_EQ(DetailValue(machine, "IPUoF server version"), "v1.3.3");
  EXPECT_EQ(DetailValue(machine, "Num of IPUs"), "4");
  EXPECT_EQ(DetailValue(machine, "Board serial number"), machine.BoardSerialNumberForTesting());
}

TEST(SimulatedMachineAttributesTest, SerialsAreStableAndDifferPerAgent) {
  SimulatedMachine a("ag1", fabric::MachineType::kM2000);
  SimulatedMachine again("ag1", fabric::MachineType::kBow);
  SimulatedMachine b("ag2", fabric::MachineType::kM2000);
  EXPECT_EQ(a.BoardSerialNumberForTesting(), again.BoardSerialNumberForTesting());
  EXPECT_NE(a.BoardSerialNumberForTesting(), b.BoardSerialNumberForTesting());
  EXPECT_THAT(a.BoardSerialNumberForTesting(), ::testing::MatchesRegex("82[0-9]{5}-[0-9]{4}"));
  const std::string ipu_serial = AttributeValue(a.ipus()[0], "board serial number");
  EXPECT_THAT(ipu_serial, ::testing::MatchesRegex("[0-9]{4}\\.[0-9]{4}\\.82[0-9]{5}"));
  EXPECT_EQ(ipu_serial, AttributeValue(again.ipus()[0], "board serial number"));
  EXPECT_NE(ipu_serial, AttributeValue(b.ipus()[0], "board serial number"));
  // Pinned: a serial must not change between builds (FNV-1a, not std::hash).
  EXPECT_EQ(StableHash("ag1"), StableHash(std::string("ag") + "1"));
  EXPECT_EQ(StableHash(""), 14695981039346656037ull);
  EXPECT_EQ(StableHash("a"), 0xaf63dc4c8601ec8cull);
}

TEST(SimulatedMachineAttributesTest, IpuofPortIsSettable) {
  SimulatedMachine machine("ag1", fabric::MachineType::kM2000);
  EXPECT_EQ(machine.ipuof_port(), 0u);
  machine.set_ipuof_port(50052);
  EXPECT_EQ(machine.ipuof_port(), 50052u);
}

}  // namespace
}  // namespace vipu::agents
