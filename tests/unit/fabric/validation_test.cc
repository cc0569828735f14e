// ValidateId, partition request validation and default resolution, field by field.
#include "fabric/validation.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/unit/support/pod_layout.h"

namespace vipu::fabric {
namespace {

using test::PodLayout;
using ::testing::HasSubstr;

void ExpectInvalid(const absl::Status& status, const std::string& message) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr(message));
}

TEST(FabricValidateIdTest, AcceptsWellFormedIds) {
  for (const std::string& id :
       std::vector<std::string>{"p", "7", "p1", "my-part_1.x", "A.b-C_d", std::string(64, 'x')}) {
    EXPECT_TRUE(ValidateId("partition id", id).ok()) << id;
  }
}

TEST(FabricValidateIdTest, RejectsEachBadShape) {
  ExpectInvalid(ValidateId("partition id", ""), "partition id: must not be empty");
  ExpectInvalid(ValidateId("partition id", std::string(65, 'x')),
                "partition id: must be at most 64 characters, got 65");
  for (const char* id : {"-p", ".p", "_p"}) {
    ExpectInvalid(ValidateId("cluster id", id), "cluster id: must start with a letter or digit");
  }
  for (const char* id : {"p q", "p/1", "p@x", "p\xc3\xa9", "p:1", "p\n"}) {
    ExpectInvalid(ValidateId("agent id", id), "agent id: may contain only");
  }
}

TEST(FabricIsPowerOfTwoTest, Values) {
  EXPECT_FALSE(IsPowerOfTwo(0));
  EXPECT_TRUE(IsPowerOfTwo(1));
  EXPECT_TRUE(IsPowerOfTwo(2));
  EXPECT_FALSE(IsPowerOfTwo(3));
  EXPECT_FALSE(IsPowerOfTwo(6));
  EXPECT_TRUE(IsPowerOfTwo(65536));
  EXPECT_TRUE(IsPowerOfTwo(1u << 31));
  EXPECT_FALSE(IsPowerOfTwo(0xffffffffu));
}

PartitionRequest ValidPartitionRequest() {
  PartitionRequest r;
  r.id = "p1";
  r.size = 4;
  return r;
}

TEST(FabricValidatePartitionRequestTest, AcceptsValidRequests) {
  EXPECT_TRUE(ValidatePartitionRequest(ValidPartitionRequest()).ok());
  PartitionRequest r = ValidPartitionRequest();
  r.size = 65536;
  r.num_gcds = 2;
  r.num_replicas = 6;
  r.num_ilds = 4;
  r.sync_type = SyncType::kPodNativeReplicatedPipeline;
  r.routing = RoutingType::kBtnc;
  r.gw_routing = GwRoutingType::kSwRing;
  EXPECT_TRUE(ValidatePartitionRequest(r).ok());
  r = ValidPartitionRequest();
  r.num_replicas = 3;  // num_gcds defaults to 1
  EXPECT_TRUE(ValidatePartitionRequest(r).ok());
  r = ValidPartitionRequest();
  r.num_gcds = 4;
  EXPECT_TRUE(ValidatePartitionRequest(r).ok());
  for (SyncType s : {SyncType::kUndefined, SyncType::kGs2Default}) {
    r = ValidPartitionRequest();
    r.reconfigurable = true;
    r.sync_type = s;
    EXPECT_TRUE(ValidatePartitionRequest(r).ok());
  }
  r = ValidPartitionRequest();
  r.cluster_id = "c1";
  r.ipus.resize(4);
  EXPECT_TRUE(ValidatePartitionRequest(r).ok());
}

// A replica needs at least one IPU: num_replicas may reach the size, not pass it.
TEST(FabricValidatePartitionRequestTest, NumReplicasMayReachTheSizeNotPassIt) {
  struct Case {
    uint32_t size, num_gcds, num_replicas;
    bool ok;
  };
  for (const Case& c : std::vector<Case>{{4, 0, 0, true},
                                         {4, 0, 1, true},
                                         {4, 0, 4, true},
                                         {4, 2, 4, true},
                                         {4, 4, 4, true},
                                         {1, 0, 1, true},
                                         {1, 1, 1, true},
                                         {65536, 0, 65536, true},
                                         {65536, 65536, 65536, true},
                                         {4, 0, 5, false},
                                         {1, 0, 2, false},
                                         {1, 1, 2, false},
                                         {4, 4, 8, false},
                                         {65536, 0, 65537, false},
                                         {65536, 0, 0xFFFFFFFFu, false}}) {
    SCOPED_TRACE(::testing::Message() << c.size << "/" << c.num_gcds << "/" << c.num_replicas);
    PartitionRequest r = ValidPartitionRequest();
    r.size = c.size;
    r.num_gcds = c.num_gcds;
    r.num_replicas = c.num_replicas;
    if (c.ok) {
      EXPECT_TRUE(ValidatePartitionRequest(r).ok()) << ValidatePartitionRequest(r);
    } else {
      ExpectInvalid(ValidatePartitionRequest(r),
                    absl::StrCat("num_replicas: must be at most the size ", c.size));
    }
  }
}

TEST(FabricValidatePartitionRequestTest, RejectsEveryInvalidField) {
  struct Case {
    std::string what;
    void (*mutate)(PartitionRequest&);
    std::string message;
  };
  const std::vector<Case> cases = {
      {"empty id", [](PartitionRequest& r) { r.id = ""; }, "id: must not be empty"},
      {"bad id", [](PartitionRequest& r) { r.id = "-x"; }, "id: must start"},
      {"bad cluster id", [](PartitionRequest& r) { r.cluster_id = "a b"; }, "cluster_id:"},
      {"bad allocation id", [](PartitionRequest& r) { r.allocation_id = "_a"; }, "allocation_id:"},
      {"size 0", [](PartitionRequest& r) { r.size = 0; },
       "size: must be between 1 and 65536, got 0"},
      {"size too big", [](PartitionRequest& r) { r.size = 131072; },
       "size: must be between 1 and 65536, got 131072"},
      {"size 6", [](PartitionRequest& r) { r.size = 6; }, "size: must be a power of two, got 6"},
      {"size 3", [](PartitionRequest& r) { r.size = 3; }, "size: must be a power of two, got 3"},
      {"num_gcds 3", [](PartitionRequest& r) { r.num_gcds = 3; },
       "num_gcds: must be a power of two, got 3"},
      {"num_gcds above size", [](PartitionRequest& r) { r.num_gcds = 8; },
       "num_gcds: must divide the size 4, got 8"},
      {"num_replicas not multiple",
       [](PartitionRequest& r) {
         r.num_gcds = 2;
         r.num_replicas = 3;
       },
       "num_replicas: must be a multiple of num_gcds 2, got 3"},
      {"num_replicas above size", [](PartitionRequest& r) { r.num_replicas = 5; },
       "num_replicas: must be at most the size 4 (each replica needs at least one IPU), got 5"},
      {"num_replicas 2^32-1", [](PartitionRequest& r) { r.num_replicas = 0xFFFFFFFFu; },
       "num_replicas: must be at most the size 4"},
      {"num_replicas above size, multiple of num_gcds",
       [](PartitionRequest& r) {
         r.num_gcds = 4;
         r.num_replicas = 8;
       },
       "num_replicas: must be at most the size 4"},
      {"unknown routing", [](PartitionRequest& r) { r.routing = static_cast<RoutingType>(5); },
       "ipulink_routing_type: unknown routing type 5"},
      {"negative routing", [](PartitionRequest& r) { r.routing = static_cast<RoutingType>(-1); },
       "ipulink_routing_type: unknown"},
      {"unused gw routing 1",
       [](PartitionRequest& r) { r.gw_routing = static_cast<GwRoutingType>(1); },
       "gw_routing_type: unknown gateway routing type 1"},
      {"unknown gw routing 4",
       [](PartitionRequest& r) { r.gw_routing = static_cast<GwRoutingType>(4); },
       "gw_routing_type:"},
      {"unknown sync type", [](PartitionRequest& r) { r.sync_type = static_cast<SyncType>(5); },
       "sync_type: unknown sync type 5"},
      {"independent rails",
       [](PartitionRequest& r) { r.sync_type = SyncType::kGs2IndependentRails; }, "not supported"},
      {"reconfigurable pod-native",
       [](PartitionRequest& r) {
         r.reconfigurable = true;
         r.sync_type = SyncType::kPodNativeDefault;
       },
       "reconfigurable partitions support only the c2-compatible sync type"},
      {"reconfigurable replicated pipeline",
       [](PartitionRequest& r) {
         r.reconfigurable = true;
         r.sync_type = SyncType::kPodNativeReplicatedPipeline;
       },
       "reconfigurable:"},
      {"num_ilds 3", [](PartitionRequest& r) { r.num_ilds = 3; },
       "num_ipulink_segments: must be a power of two, got 3"},
      {"num_ilds above size", [](PartitionRequest& r) { r.num_ilds = 8; },
       "num_ipulink_segments: cannot exceed the size 4"},
      {"ipus without cluster", [](PartitionRequest& r) { r.ipus.resize(4); },
       "ipus: an explicit IPU list requires cluster_id"},
      {"ipus count",
       [](PartitionRequest& r) {
         r.cluster_id = "c";
         r.ipus.resize(2);
       },
       "ipus: 2 IPUs listed for a partition of size 4"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    PartitionRequest r = ValidPartitionRequest();
    c.mutate(r);
    ExpectInvalid(ValidatePartitionRequest(r), c.message);
  }
}

PartitionRequest Sized(uint32_t size) {
  PartitionRequest r = ValidPartitionRequest();
  r.size = size;
  return r;
}

TEST(FabricResolveDefaultsTest, EveryPodAndSize) {
  struct Case {
    std::string pod;
    uint32_t size;
    uint32_t num_ilds;
    RoutingType routing;
    GwRoutingType gw;
  };
  const std::vector<Case> cases = {
      {"pod4", 1, 1, RoutingType::kDnc, GwRoutingType::kUndefined},
      {"pod4", 4, 1, RoutingType::kDnc, GwRoutingType::kUndefined},
      {"pod16", 8, 1, RoutingType::kSwnc, GwRoutingType::kUndefined},
      {"pod16", 16, 1, RoutingType::kSwnc, GwRoutingType::kUndefined},  // mesh: no loop
      {"pod64", 2, 1, RoutingType::kDnc, GwRoutingType::kUndefined},
      {"pod64", 32, 1, RoutingType::kSwnc, GwRoutingType::kUndefined},
      {"pod64", 64, 1, RoutingType::kRingSwnc, GwRoutingType::kUndefined},
      {"bow-pod64", 64, 1, RoutingType::kRingSwnc, GwRoutingType::kUndefined},
      {"pod128", 16, 1, RoutingType::kSwnc, GwRoutingType::kUndefined},
      {"pod128", 64, 1, RoutingType::kRingSwnc, GwRoutingType::kUndefined},
      {"pod128", 128, 2, RoutingType::kRingSwnc, GwRoutingType::kRing},
      {"pod256", 128, 2, RoutingType::kRingSwnc, GwRoutingType::kRing},
      {"pod256", 256, 4, RoutingType::kRingSwnc, GwRoutingType::kRing},
      {"bow-pod256", 128, 2, RoutingType::kRingSwnc, GwRoutingType::kSwRing},
      {"bow-pod256", 256, 4, RoutingType::kRingSwnc, GwRoutingType::kSwRing},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << c.pod << " size " << c.size);
    absl::StatusOr<PartitionRequest> r = ResolveDefaults(Sized(c.size), PodLayout(c.pod));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->num_ilds, c.num_ilds);
    EXPECT_EQ(r->routing, c.routing);
    EXPECT_EQ(r->gw_routing, c.gw);
    EXPECT_EQ(r->num_gcds, 1u);
    EXPECT_EQ(r->num_replicas, 1u);
    EXPECT_EQ(r->sync_type, SyncType::kPodNativeDefault);
  }
}

TEST(FabricResolveDefaultsTest, GcdsReplicasAndSync) {
  ClusterLayout pod64 = PodLayout("pod64");
  PartitionRequest r = Sized(16);
  r.num_gcds = 4;
  auto out = ResolveDefaults(r, pod64);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->num_gcds, 4u);
  EXPECT_EQ(out->num_replicas, 4u);
  r.num_replicas = 8;
  out = ResolveDefaults(r, pod64);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->num_replicas, 8u);
  r = Sized(16);
  r.reconfigurable = true;
  out = ResolveDefaults(r, pod64);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->sync_type, SyncType::kGs2Default);
  r = Sized(16);
  r.sync_type = SyncType::kPodNativeReplicatedPipeline;
  EXPECT_EQ(ResolveDefaults(r, pod64)->sync_type, SyncType::kPodNativeReplicatedPipeline);
}

TEST(FabricResolveDefaultsTest, ExplicitChoicesThatFitAreKept) {
  ClusterLayout pod128 = PodLayout("pod128");
  PartitionRequest r = Sized(2);
  r.routing = RoutingType::kBtnc;
  EXPECT_EQ(ResolveDefaults(r, pod128)->routing, RoutingType::kBtnc);
  r = Sized(64);
  r.routing = RoutingType::kDnc;
  EXPECT_EQ(ResolveDefaults(r, pod128)->routing, RoutingType::kDnc);
  r = Sized(64);
  r.num_ilds = 2;  // two segments of 32
  auto out = ResolveDefaults(r, pod128);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->num_ilds, 2u);
  EXPECT_EQ(out->routing, RoutingType::kSwnc);
  EXPECT_EQ(out->gw_routing, GwRoutingType::kRing);
  r = Sized(128);
  r.gw_routing = GwRoutingType::kRing;
  EXPECT_TRUE(ResolveDefaults(r, pod128).ok());
}

TEST(FabricResolveDefaultsTest, NumIldsComesFromExplicitIpus) {
  ClusterLayout pod128 = PodLayout("pod128");
  PartitionRequest r = Sized(2);
  r.cluster_id = "pod128";
  r.ipus.resize(2);
  r.ipus[1].ild = 1;
  auto out = ResolveDefaults(r, pod128);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->num_ilds, 2u);
  EXPECT_EQ(out->gw_routing, GwRoutingType::kRing);
  r.num_ilds = 1;
  ExpectInvalid(ResolveDefaults(r, pod128).status(),
                "num_ipulink_segments: is 1 but the listed ipus span 2");
}

TEST(FabricResolveDefaultsTest, RejectsChoicesThatDoNotFit) {
  struct Case {
    std::string what;
    std::string pod;
    void (*mutate)(PartitionRequest&);
    std::string message;
  };
  const std::vector<Case> cases = {
      {"invalid request", "pod64", [](PartitionRequest& r) { r.size = 3; }, "size: must be"},
      {"RINGSWNC on part of an ILD", "pod64",
       [](PartitionRequest& r) {
         r.size = 32;
         r.routing = RoutingType::kRingSwnc;
       },
       "ipulink_routing_type: RINGSWNC needs every segment to be a whole torus ILD"},
      {"RINGSWNC on a mesh ILD", "pod16",
       [](PartitionRequest& r) {
         r.size = 16;
         r.routing = RoutingType::kRingSwnc;
       },
       "ipulink_routing_type: RINGSWNC"},
      {"RINGSWNC on half-ILD segments", "pod128",
       [](PartitionRequest& r) {
         r.size = 64;
         r.num_ilds = 2;
         r.routing = RoutingType::kRingSwnc;
       },
       "got segments of 32"},
      {"GW routing on one ILD", "pod128",
       [](PartitionRequest& r) {
         r.size = 64;
         r.gw_routing = GwRoutingType::kRing;
       },
       "gw_routing_type: RING applies only to partitions spanning more than one ILD"},
      {"SWRING on looped", "pod256",
       [](PartitionRequest& r) {
         r.size = 128;
         r.gw_routing = GwRoutingType::kSwRing;
       },
       "gw_routing_type: SWRING requires a switched cluster topology"},
      {"RING on switched", "bow-pod256",
       [](PartitionRequest& r) {
         r.size = 128;
         r.gw_routing = GwRoutingType::kRing;
       },
       "gw_routing_type: RING requires a looped cluster topology"},
      {"bigger than one-ILD cluster", "pod64", [](PartitionRequest& r) { r.size = 128; },
       "size: 128 IPUs are more than cluster pod64 holds (1 ILD of 64 IPUs)"},
      {"bigger than the cluster", "pod256", [](PartitionRequest& r) { r.size = 512; },
       "size: 512 IPUs are more than cluster pod256 holds (4 ILDs of 64 IPUs)"},
      // The ILD count asked for is at fault, not the size, which fits one ILD.
      {"more ILDs than the cluster", "pod64",
       [](PartitionRequest& r) {
         r.size = 4;
         r.num_ilds = 2;
       },
       "num_ipulink_segments: 2 ILDs asked for, but cluster pod64 has only 1 ILD"},
      {"a whole ILD over more ILDs than the cluster", "pod16",
       [](PartitionRequest& r) {
         r.size = 16;
         r.num_ilds = 2;
       },
       "num_ipulink_segments: 2 ILDs asked for, but cluster pod16 has only 1 ILD"},
      {"segments larger than an ILD", "pod128",
       [](PartitionRequest& r) {
         r.size = 128;
         r.num_ilds = 1;
       },
       "num_ipulink_segments: 1 ILD(s) give segments of 128 IPUs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    PartitionRequest r = ValidPartitionRequest();
    c.mutate(r);
    ExpectInvalid(ResolveDefaults(r, PodLayout(c.pod)).status(), c.message);
  }
}

TEST(FabricResolveDefaultsTest, SpanningIldsNeedsAGwTopology) {
  Cluster cluster = PodCluster(*PodPreset("pod128"), "bare");
  cluster.cluster_topology = ClusterTopology::kUndefined;
  ClusterLayout layout = *ClusterLayout::Build(cluster);
  ExpectInvalid(ResolveDefaults(Sized(128), layout).status(), "num_ipulink_segments: cluster");
  EXPECT_TRUE(ResolveDefaults(Sized(64), layout).ok());
}

}  // namespace
}  // namespace vipu::fabric
