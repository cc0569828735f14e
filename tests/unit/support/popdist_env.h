// A test of the popdist library's view of its environment: every variable
// that poprun sets and popdist reads is unset before and after each test, so
// that a test sees only what it sets.
#ifndef VIPU_TESTS_UNIT_SUPPORT_POPDIST_ENV_H_
#define VIPU_TESTS_UNIT_SUPPORT_POPDIST_ENV_H_

#include <cstdlib>
#include <map>
#include <string>

#include "gtest/gtest.h"

namespace vipu::test {

class PopdistEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { UnsetAll(); }
  void TearDown() override { UnsetAll(); }

  // Sets each variable of `vars` for the rest of the test.
  void Set(const std::map<std::string, std::string>& vars) {
    for (const auto& [k, v] : vars) setenv(k.c_str(), v.c_str(), 1);
  }

 private:
  static void UnsetAll() {
    for (const char* v :
         {"POPDIST_NUM_TOTAL_REPLICAS", "POPDIST_NUM_LOCAL_REPLICAS",
          "POPDIST_NUM_IPUS_PER_REPLICA", "POPDIST_REPLICA_INDEX_OFFSET",
          "POPDIST_LOCAL_INSTANCE_INDEX", "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE",
          "POPDIST_AUTOREPORT_DIRECTORY", "POPLAR_TARGET_OPTIONS", "POPLAR_ENGINE_OPTIONS"}) {
      unsetenv(v);
    }
  }
};

}  // namespace vipu::test

#endif  // VIPU_TESTS_UNIT_SUPPORT_POPDIST_ENV_H_
