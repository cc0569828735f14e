// A test fixture around ControllerHarness: a controller over a fresh store
// and a FakeAgentClient, on a cluster of two ILDs of four machines, and the
// steps most controller tests start from.
#ifndef VIPU_TESTS_UNIT_SUPPORT_CONTROLLER_TEST_H_
#define VIPU_TESTS_UNIT_SUPPORT_CONTROLLER_TEST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "fabric/types.h"
#include "gtest/gtest.h"
#include "server/fleet/agent_registry.h"
#include "tests/unit/support/controller_harness.h"
#include "tests/unit/support/fake_agent_client.h"

namespace vipu::test {

// Not thread-safe: the test's thread uses it; the harness's parts are as
// their headers say.
class ControllerTest : public ::testing::Test {
 protected:
  // `prefix` names the temporary directory; `workers` is the controller's
  // worker count (one lets a test hold the queue behind a job it keeps
  // waiting).
  ControllerTest(std::string prefix, int workers) : prefix_(std::move(prefix)), workers_(workers) {}

  void SetUp() override {
    auto harness = ControllerHarness::Open(prefix_, &agents_, workers_);
    ASSERT_TRUE(harness.ok()) << harness.status();
    h_ = *std::move(harness);
    // Two ILDs of four machines: a size-8 partition spans two machines.
    ASSERT_TRUE(h_->AddCluster(8, 2).ok());
  }

  void TearDown() override {
    // Nothing may stay held while the controller's workers stop.
    using Op = server::FakeAgentClient::Op;
    for (Op op : {Op::kConfigure, Op::kReset, Op::kRelease}) agents_.Succeed("", op);
    agents_.CompleteAllHeld();
    h_.reset();
  }

  // A partition created and settled PS_ACTIVE.
  fabric::Partition Active(const std::string& id, uint32_t size, bool relocatable = false) {
    auto created = h_->Create(id, size, relocatable);
    EXPECT_TRUE(created.ok()) << created.status();
    auto p = h_->Settled(id);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) return {};
    EXPECT_EQ(p->ready_state, fabric::ReadyState::kActive);
    return *p;
  }

  // The partition as the controller reads it now, settled or not.
  fabric::Partition Get(const std::string& id) {
    auto p = h_->controller->Get(id);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : fabric::Partition{};
  }

  // The partition once it is no longer pending.
  fabric::Partition Settled(const std::string& id) {
    auto p = h_->Settled(id);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : fabric::Partition{};
  }

  // Makes `agent` report IPU `ipu` in error, as its heartbeat would;
  // returns the partition error that names it.
  std::string FailIpu(const std::string& agent, uint32_t ipu) {
    server::AgentHealth health;
    health.ipu_errors[ipu] = "injected fault";
    EXPECT_TRUE(h_->registry.Heartbeat(agent, absl::Now(), health));
    return absl::StrCat("agent ", agent, ": IPU ", ipu, " error (injected fault)");
  }

  static std::vector<std::string> MachinesOf(const fabric::Partition& p) {
    return ControllerHarness::MachinesOf(p);
  }

  server::FakeAgentClient agents_;  // outlives the harness, whose driver calls it
  std::unique_ptr<ControllerHarness> h_;

 private:
  const std::string prefix_;
  const int workers_;
};

}  // namespace vipu::test

#endif  // VIPU_TESTS_UNIT_SUPPORT_CONTROLLER_TEST_H_
