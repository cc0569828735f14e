// popdist getters from POPDIST_* (defaults, values, malformed) and single-instance collectives.
#include "popdist/context.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "popdist/backend.h"
#include "popdist/collectives.h"
#include "tests/unit/support/popdist_env.h"

namespace {

using PopdistContext = vipu::test::PopdistEnvTest;

TEST_F(PopdistContext, DefaultsOutsidePoprun) {
  EXPECT_FALSE(popdist::isPopdistEnvSet());
  EXPECT_EQ(popdist::getNumTotalReplicas(), 1u);
  EXPECT_EQ(popdist::getNumLocalReplicas(), 1u);
  EXPECT_EQ(popdist::getNumIpusPerReplica(), 1u);
  EXPECT_EQ(popdist::getReplicaIndexOffset(), 0u);
  EXPECT_EQ(popdist::getLocalInstanceIndex(), 0u);
  EXPECT_EQ(popdist::getNumInstances(), 1u);
  EXPECT_EQ(popdist::getInstanceIndex(), 0u);
  EXPECT_TRUE(popdist::isUniformReplicasPerInstance());
  EXPECT_EQ(popdist::getDeviceId(), 0u);
  EXPECT_EQ(popdist::getDeviceId(2), 2u);  // the first pair of a 2-IPU domain
  EXPECT_TRUE(popdist::checkNumIpusPerReplica(1));
  EXPECT_FALSE(popdist::checkNumIpusPerReplica(4));
  EXPECT_EQ(popdist::getAutoReportDirectory(), "");
}

// poprun's --autoreport-dir: one subdirectory per instance.
TEST_F(PopdistContext, AutoReportDirectoryPerInstance) {
  Set({{"POPDIST_AUTOREPORT_DIRECTORY", "/tmp/profile"}});
  EXPECT_EQ(popdist::getAutoReportDirectory(), "/tmp/profile/0");
  Set({{"POPDIST_NUM_TOTAL_REPLICAS", "4"},
       {"POPDIST_NUM_LOCAL_REPLICAS", "1"},
       {"POPDIST_REPLICA_INDEX_OFFSET", "3"},
       {"POPDIST_AUTOREPORT_DIRECTORY", "/tmp/profile/"}});
  EXPECT_EQ(popdist::getAutoReportDirectory(), "/tmp/profile/3");
  Set({{"POPDIST_AUTOREPORT_DIRECTORY", ""}});
  EXPECT_EQ(popdist::getAutoReportDirectory(), "");
}

// TUT-KR: --num-replicas 8 --num-instances 4 --ipus-per-replica 2 on a
// 16-IPU partition: offsets 0/2/4/6 and devices 24..27.
TEST_F(PopdistContext, FourInstancesOfTwoReplicas) {
  for (unsigned i = 0; i < 4; ++i) {
    Set({{"POPDIST_NUM_TOTAL_REPLICAS", "8"},
         {"POPDIST_NUM_LOCAL_REPLICAS", "2"},
         {"POPDIST_NUM_IPUS_PER_REPLICA", "2"},
         {"POPDIST_REPLICA_INDEX_OFFSET", std::to_string(2 * i)},
         {"POPDIST_LOCAL_INSTANCE_INDEX", std::to_string(i)},
         {"POPDIST_UNIFORM_REPLICAS_PER_INSTANCE", "1"}});
    EXPECT_TRUE(popdist::isPopdistEnvSet());
    EXPECT_EQ(popdist::getNumInstances(), 4u);
    EXPECT_EQ(popdist::getInstanceIndex(), i);
    EXPECT_EQ(popdist::getLocalInstanceIndex(), i);
    EXPECT_EQ(popdist::getDeviceId(), 24 + i);
    EXPECT_TRUE(popdist::checkNumIpusPerReplica(2));
    EXPECT_FALSE(popdist::checkNumIpusPerReplica(1));
  }
}

// ALCF: a 4-IPU domain, one instance of 4 single-IPU replicas: device 6.
TEST_F(PopdistContext, DeviceIdUsesInstanceSize) {
  Set({{"POPDIST_NUM_TOTAL_REPLICAS", "4"},
       {"POPDIST_NUM_LOCAL_REPLICAS", "4"},
       {"POPLAR_TARGET_OPTIONS", "{\"ipuLinkDomainSize\":\"64\",\"instanceSize\":\"4\"}"}});
  EXPECT_EQ(popdist::getDeviceId(), 6u);
  // Two GCDs of 8: the second instance numbers its devices inside its own GCD.
  Set({{"POPDIST_NUM_TOTAL_REPLICAS", "16"},
       {"POPDIST_NUM_LOCAL_REPLICAS", "8"},
       {"POPDIST_REPLICA_INDEX_OFFSET", "8"},
       {"POPLAR_TARGET_OPTIONS", "{\"instanceSize\":\"8\"}"}});
  EXPECT_EQ(popdist::getDeviceId(), 8u + 4u + 2u);
}

TEST_F(PopdistContext, NonUniformAndMalformedValuesThrow) {
  Set({{"POPDIST_UNIFORM_REPLICAS_PER_INSTANCE", "0"}});
  EXPECT_FALSE(popdist::isUniformReplicasPerInstance());
  EXPECT_THROW(popdist::getNumInstances(), popdist::popdist_error);
  EXPECT_THROW(popdist::getInstanceIndex(), popdist::popdist_error);
  SetUp();
  for (const char* bad : {"x", "-1", "1.5", "+3", "99999999999"}) {
    Set({{"POPDIST_NUM_TOTAL_REPLICAS", bad}});
    EXPECT_THROW(popdist::getNumTotalReplicas(), popdist::popdist_error) << bad;
  }
  Set({{"POPDIST_NUM_TOTAL_REPLICAS", "0"}});
  try {
    popdist::getNumTotalReplicas();
    FAIL();
  } catch (const popdist::popdist_error& e) {
    EXPECT_STREQ(e.what(), "POPDIST_NUM_TOTAL_REPLICAS: must be a positive integer, got 0");
  }
  SetUp();
  Set({{"POPDIST_NUM_LOCAL_REPLICAS", "4"},
       {"POPDIST_NUM_TOTAL_REPLICAS", "4"},
       {"POPDIST_NUM_IPUS_PER_REPLICA", "2"},
       {"POPLAR_TARGET_OPTIONS", "{\"instanceSize\":\"4\"}"}});
  EXPECT_THROW(popdist::getDeviceId(), popdist::popdist_error);  // needs 8 IPUs of 4
}

TEST_F(PopdistContext, CollectivesNeedTheBackend) {
  int64_t v = 3;
  try {
    popdist::collectives::allReduceSum(&v, 1);
    FAIL();
  } catch (const popdist::popdist_error& e) {
    EXPECT_STREQ(e.what(),
                 "allReduceSum: the PopDist backend is not initialised; call popdist::init() "
                 "first");
  }
  EXPECT_THROW(popdist::collectives::broadcast(&v, 1, popdist::Type::kInt64),
               popdist::popdist_error);
  EXPECT_THROW(popdist::collectives::allGather(&v, &v, 1, popdist::Type::kInt64),
               popdist::popdist_error);
  EXPECT_FALSE(popdist::isBackendInitialized());
  // Without the backend, executeOnInstances just filters.
  EXPECT_EQ(popdist::executeOnInstances({0}, [] { return 7; }), std::optional<int>(7));
  EXPECT_EQ(popdist::executeOnInstances({1}, [] { return 7; }), std::nullopt);
}

// One process: MPI's singleton mode, where every collective is an identity.
TEST_F(PopdistContext, SingleInstanceCollectives) {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  popdist::init();
  ASSERT_TRUE(popdist::isBackendInitialized());
  double d[2] = {1.5, 2.5};
  popdist::collectives::allReduceSum(d, 2);
  EXPECT_EQ(d[0], 1.5);
  EXPECT_EQ(d[1], 2.5);
  int64_t in = 9, out = 0;
  popdist::collectives::allGather(&in, &out, 1, popdist::Type::kInt64);
  EXPECT_EQ(out, 9);
  popdist::collectives::broadcast(d, 2, popdist::Type::kDouble, 0);
  EXPECT_EQ(d[0], 1.5);
  EXPECT_EQ(popdist::executeOnInstances({0},
                                        [&] {
                                          int64_t s = 4;
                                          popdist::collectives::allReduceSum(&s, 1);
                                          return s;
                                        }),
            std::optional<int64_t>(4));
  popdist::finalizeBackend();
  EXPECT_FALSE(popdist::isBackendInitialized());
}

}  // namespace
