// Names of the object model's enums: table and wire names, CLI spellings, refusals.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "fabric/enum_names.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::fabric {
namespace {

using ::testing::HasSubstr;

template <typename T>
void ExpectInvalid(const absl::StatusOr<T>& result, const std::string& message) {
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr(message));
}

TEST(FabricEnumNamesTest, ReadyAndOperationStates) {
  EXPECT_EQ(TableName(ReadyState::kPending), "PENDING");
  EXPECT_EQ(TableName(ReadyState::kActive), "ACTIVE");
  EXPECT_EQ(TableName(ReadyState::kRemoved), "REMOVED");
  EXPECT_EQ(TableName(ReadyState::kError), "ERROR");
  EXPECT_EQ(TableName(ReadyState::kUndefined), "UNDEFINED");
  EXPECT_EQ(WireName(ReadyState::kUndefined), "PS_UNDEFINED");
  EXPECT_EQ(WireName(ReadyState::kPending), "PS_PENDING");
  EXPECT_EQ(WireName(ReadyState::kActive), "PS_ACTIVE");
  EXPECT_EQ(WireName(ReadyState::kRemoved), "PS_REMOVED");
  EXPECT_EQ(WireName(ReadyState::kError), "PS_ERROR");
  EXPECT_EQ(WireName(OperationState::kUndefined), "POS_UNDEFINED");
  EXPECT_EQ(WireName(OperationState::kIdle), "POS_IDLE");
  EXPECT_EQ(WireName(OperationState::kCreating), "POS_CREATING");
  EXPECT_EQ(WireName(OperationState::kRemoving), "POS_REMOVING");
  EXPECT_EQ(WireName(OperationState::kResetting), "POS_RESETTING");
  EXPECT_EQ(WireName(OperationState::kFailed), "POS_FAILED");
}

TEST(FabricEnumNamesTest, OutOfRangeValuesAreVisible) {
  EXPECT_EQ(TableName(static_cast<ReadyState>(9)), "UNKNOWN(9)");
  EXPECT_EQ(WireName(static_cast<ReadyState>(9)), "UNKNOWN(9)");
  EXPECT_EQ(WireName(static_cast<OperationState>(6)), "UNKNOWN(6)");
  EXPECT_EQ(TableName(static_cast<RoutingType>(5)), "UNKNOWN(5)");
  EXPECT_EQ(TableName(static_cast<GwRoutingType>(1)), "UNKNOWN(1)");
  EXPECT_EQ(CliName(static_cast<SyncType>(7)), "UNKNOWN(7)");
  EXPECT_EQ(CliName(static_cast<MachineType>(2)), "UNKNOWN(2)");
}

TEST(FabricEnumNamesTest, RoutingRoundTripsAndSpellings) {
  EXPECT_EQ(TableName(RoutingType::kUndefined), "DEFAULT");
  for (RoutingType r :
       {RoutingType::kDnc, RoutingType::kSwnc, RoutingType::kBtnc, RoutingType::kRingSwnc}) {
    auto parsed = ParseRoutingType(TableName(r));
    ASSERT_TRUE(parsed.ok()) << TableName(r);
    EXPECT_EQ(*parsed, r);
  }
  EXPECT_EQ(TableName(RoutingType::kRingSwnc), "RINGSWNC");
  for (const char* s : {"ringswnc", "ring-swnc", "RING_SWNC", "Ring-Swnc", "IRT_RINGSWNC"}) {
    EXPECT_EQ(*ParseRoutingType(s), RoutingType::kRingSwnc) << s;
  }
  EXPECT_EQ(*ParseRoutingType("dnc"), RoutingType::kDnc);
  EXPECT_EQ(*ParseRoutingType("b-t-n-c"), RoutingType::kBtnc);
  for (const char* s : {"", "ring", "default", "dncx", "swnc "}) {
    SCOPED_TRACE(s);
    ExpectInvalid(ParseRoutingType(s), "routing: unknown value");
    ExpectInvalid(ParseRoutingType(s), "accepted: dnc, swnc, btnc, ringswnc");
  }
}

TEST(FabricEnumNamesTest, GwRoutingRoundTripsAndSpellings) {
  EXPECT_EQ(TableName(GwRoutingType::kUndefined), "DEFAULT");
  EXPECT_EQ(TableName(GwRoutingType::kRing), "RING");
  EXPECT_EQ(TableName(GwRoutingType::kSwRing), "SWRING");
  for (GwRoutingType r : {GwRoutingType::kRing, GwRoutingType::kSwRing}) {
    EXPECT_EQ(*ParseGwRoutingType(TableName(r)), r);
  }
  EXPECT_EQ(*ParseGwRoutingType("sw-ring"), GwRoutingType::kSwRing);
  EXPECT_EQ(*ParseGwRoutingType("GRT_RING"), GwRoutingType::kRing);
  for (const char* s : {"", "dnc", "rings", "default"}) {
    SCOPED_TRACE(s);
    ExpectInvalid(ParseGwRoutingType(s), "gw routing: unknown value");
  }
}

TEST(FabricEnumNamesTest, SyncTypeRoundTripsAndRefusals) {
  for (SyncType s : {SyncType::kGs2Default, SyncType::kPodNativeDefault,
                     SyncType::kPodNativeReplicatedPipeline}) {
    auto parsed = ParseSyncType(CliName(s));
    ASSERT_TRUE(parsed.ok()) << CliName(s);
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_EQ(CliName(SyncType::kGs2Default), "c2-compatible");
  EXPECT_EQ(CliName(SyncType::kPodNativeDefault), "pod-native-default");
  EXPECT_EQ(CliName(SyncType::kPodNativeReplicatedPipeline), "pod-native-replicated-pipeline");
  for (const char* s : {"c2compatible", "C2_COMPATIBLE", "ST_GS2_DEFAULT"}) {
    EXPECT_EQ(*ParseSyncType(s), SyncType::kGs2Default) << s;
  }
  for (const char* s : {"POD_NATIVE_DEFAULT", "podnativedefault", "ST_POD_NATIVE_DEFAULT"}) {
    EXPECT_EQ(*ParseSyncType(s), SyncType::kPodNativeDefault) << s;
  }
  const std::vector<std::string> refused = {"independent-rails", "INDEPENDENT_RAILS",
                                            "ST_GS2_INDEPENDENT_RAILS",
                                            CliName(SyncType::kGs2IndependentRails)};
  for (const std::string& s : refused) {
    SCOPED_TRACE(s);
    ExpectInvalid(ParseSyncType(s), "not supported");
  }
  for (const char* s : {"", "c2", "pod-native", "undefined", "default"}) {
    SCOPED_TRACE(s);
    ExpectInvalid(ParseSyncType(s), "sync type: unknown value");
  }
}

TEST(FabricEnumNamesTest, TopologiesAndMachineTypes) {
  for (IldTopology t : {IldTopology::kMesh, IldTopology::kTorus}) {
    EXPECT_EQ(*ParseIldTopology(CliName(t)), t);
  }
  EXPECT_EQ(CliName(IldTopology::kTorus), "torus");
  EXPECT_EQ(CliName(IldTopology::kMesh), "mesh");
  EXPECT_EQ(*ParseIldTopology("TORUS"), IldTopology::kTorus);
  ExpectInvalid(ParseIldTopology("ring"), "topology: unknown value");
  ExpectInvalid(ParseIldTopology(""), "accepted: torus, mesh");

  for (ClusterTopology t : {ClusterTopology::kLooped, ClusterTopology::kSwitched}) {
    EXPECT_EQ(*ParseClusterTopology(CliName(t)), t);
  }
  EXPECT_EQ(CliName(ClusterTopology::kLooped), "looped");
  EXPECT_EQ(CliName(ClusterTopology::kSwitched), "switched");
  ExpectInvalid(ParseClusterTopology("loop"), "cluster topology: unknown value");

  for (MachineType t : {MachineType::kM2000, MachineType::kBow}) {
    EXPECT_EQ(*ParseMachineType(CliName(t)), t);
  }
  EXPECT_EQ(CliName(MachineType::kM2000), "m2000");
  EXPECT_EQ(CliName(MachineType::kBow), "bow");
  EXPECT_EQ(*ParseMachineType("IPU-M2000"), MachineType::kM2000);
  EXPECT_EQ(*ParseMachineType("Bow-2000"), MachineType::kBow);
  ExpectInvalid(ParseMachineType("m1000"), "machine type: unknown value");
  for (const char* bad : {"", "c600", "bow "}) {
    ExpectInvalid(ParseMachineType(bad), "machine type: unknown value");
  }
}

}  // namespace
}  // namespace vipu::fabric
