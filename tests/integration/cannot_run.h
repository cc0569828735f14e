// A test that cannot run where it is started (not root, no namespaces, a
// tool missing) skips and says why. Where every such test must run, a skip
// would hide that nothing was checked: CI's fresh root has root, namespaces
// and every package, and sets VIPU_TESTS_MUST_RUN=1, under which the same
// test fails instead, with the same reason.
//
//   if (!have_curl) VIPU_CANNOT_RUN_HERE() << "curl is missing";
//
// Skips that no machine of ours can avoid (a kernel without netem, a check
// that root cannot make) stay GTEST_SKIP and are counted in CI's log.
#ifndef VIPU_TESTS_INTEGRATION_CANNOT_RUN_H_
#define VIPU_TESTS_INTEGRATION_CANNOT_RUN_H_

#include <cstdlib>
#include <cstring>

#include "gtest/gtest.h"

namespace vipu::testing {

// True when VIPU_TESTS_MUST_RUN is 1: a test that cannot run fails.
inline bool EveryTestMustRun() {
  const char* value = std::getenv("VIPU_TESTS_MUST_RUN");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace vipu::testing

// Returns from the test (or its SetUp) as GTEST_SKIP does; a failure when
// every test must run. A reason may be streamed after it.
#define VIPU_CANNOT_RUN_HERE()                                                       \
  return GTEST_MESSAGE_(                                                             \
      ::vipu::testing::EveryTestMustRun()                                            \
          ? "cannot run here, but VIPU_TESTS_MUST_RUN=1 says every test must run: "  \
          : "",                                                                      \
      ::vipu::testing::EveryTestMustRun() ? ::testing::TestPartResult::kFatalFailure \
                                          : ::testing::TestPartResult::kSkip)

#endif  // VIPU_TESTS_INTEGRATION_CANNOT_RUN_H_
