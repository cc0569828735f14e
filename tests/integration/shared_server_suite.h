// A test suite whose tests share one `vipu-server --simulate pod16`.
#ifndef VIPU_TESTS_INTEGRATION_SHARED_SERVER_SUITE_H_
#define VIPU_TESTS_INTEGRATION_SHARED_SERVER_SUITE_H_

#include "gtest/gtest.h"
#include "tests/integration/harness.h"

namespace vipu::testing {

// The server starts before the suite's first test and stops after its last,
// so the suite pays one start-up. Every suite derived from this class gets a
// server of its own: gtest calls SetUpTestSuite and TearDownTestSuite once per
// derived suite and runs the suites of a binary one after another. Tests that
// change the pod leave it as they found it (see each suite's TearDown).
class SharedServerSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = ServerProcess::Start("pod16").release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  static inline ServerProcess* server_ = nullptr;
};

}  // namespace vipu::testing

#endif  // VIPU_TESTS_INTEGRATION_SHARED_SERVER_SUITE_H_
