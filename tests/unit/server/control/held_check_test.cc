// HeldCheck: which machines' reports lack a partition the state places on them.
#include "server/control/held_check.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::server {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// p1 at generation 3 on m0 (IPUs 0, 1) and m1 (IPUs 0, 1), PS_ACTIVE.
fabric::Partition Active() {
  fabric::Partition p;
  p.id = "p1";
  p.generation = 3;
  p.ready_state = fabric::ReadyState::kActive;
  p.operation_state = fabric::OperationState::kIdle;
  for (const char* agent : {"m0", "m1"}) {
    for (uint32_t ipu : {0u, 1u}) {
      fabric::PartitionIpu i;
      i.ipu.agent_id = agent;
      i.ipu.ipu = ipu;
      p.ipus.push_back(i);
    }
  }
  return p;
}

class HeldCheckTest : public ::testing::Test {
 protected:
  HeldCheckTest() : registry_(absl::Seconds(1)) {
    for (const char* id : {"m0", "m1"}) Register(id);
  }

  // Registers `id` (again): its reports are numbered from 1 afresh.
  void Register(const std::string& id) {
    LiveAgent a;
    a.id = id;
    a.host = "127.0.0.1";
    a.port = 1;
    registry_.Register(a, absl::Now());
  }

  // `agent`'s heartbeat number `sequence`, holding `held`.
  void Report(const std::string& agent, uint64_t sequence, std::map<std::string, uint64_t> held) {
    AgentHealth health;
    health.sequence = sequence;
    health.held = std::make_shared<const std::map<std::string, uint64_t>>(std::move(held));
    ASSERT_TRUE(registry_.Heartbeat(agent, absl::Now(), health));
  }

  std::vector<std::string> Check(const std::vector<fabric::Partition>& partitions) {
    std::vector<std::string> out;
    for (const HeldCheck::Missing& m : check_.Check(partitions, registry_, absl::Now())) {
      EXPECT_EQ(m.partition_id, "p1");
      EXPECT_EQ(m.generation, 3u);
      out.push_back(m.agent_id);
    }
    return out;
  }

  AgentRegistry registry_;
  HeldCheck check_;
};

TEST_F(HeldCheckTest, AMachineIsNamedOnceTwoOfItsReportsLackThePartition) {
  const std::vector<fabric::Partition> state = {Active()};
  Report("m0", 1, {{"p1", 3}});
  Report("m1", 1, {});
  EXPECT_THAT(Check(state), IsEmpty());  // one report may predate the configure
  EXPECT_THAT(Check(state), IsEmpty());  // the same report again
  Report("m1", 2, {});
  EXPECT_THAT(Check(state), ElementsAre("m1"));
  // The report after the push may still predate it: two more are needed.
  Report("m1", 3, {});
  EXPECT_THAT(Check(state), IsEmpty());
  Report("m1", 4, {});
  EXPECT_THAT(Check(state), ElementsAre("m1"));
}

TEST_F(HeldCheckTest, AnOlderGenerationCountsAsLackingItAndANewerOneDoesNot) {
  const std::vector<fabric::Partition> state = {Active()};
  Report("m0", 1, {{"p1", 2}});
  Report("m1", 1, {{"p1", 4}});
  Check(state);
  Report("m0", 2, {{"p1", 2}});
  Report("m1", 2, {{"p1", 4}});
  EXPECT_THAT(Check(state), ElementsAre("m0"));
}

TEST_F(HeldCheckTest, AMachineThatHoldsItAgainIsForgotten) {
  const std::vector<fabric::Partition> state = {Active()};
  Report("m1", 1, {});
  Check(state);
  Report("m1", 2, {{"p1", 3}});
  EXPECT_THAT(Check(state), IsEmpty());
  Report("m1", 3, {});  // lost again: a first sighting
  EXPECT_THAT(Check(state), IsEmpty());
}

TEST_F(HeldCheckTest, OnlySettledActivePartitionsAreCompared) {
  for (auto change :
       {+[](fabric::Partition& p) { p.ready_state = fabric::ReadyState::kPending; },
        +[](fabric::Partition& p) { p.ready_state = fabric::ReadyState::kError; },
        +[](fabric::Partition& p) { p.operation_state = fabric::OperationState::kRemoving; }}) {
    HeldCheck check;
    fabric::Partition p = Active();
    change(p);
    Report("m1", 1, {});
    check.Check({p}, registry_, absl::Now());
    Report("m1", 2, {});
    EXPECT_THAT(check.Check({p}, registry_, absl::Now()), IsEmpty());
    Register("m1");
  }
}

TEST_F(HeldCheckTest, UnnumberedReportsOrReportsWithoutAListAreNotCompared) {
  const std::vector<fabric::Partition> state = {Active()};
  Report("m1", 0, {});
  Check(state);
  Report("m1", 0, {});
  EXPECT_THAT(Check(state), IsEmpty());
  AgentHealth silent;
  silent.sequence = 5;
  ASSERT_TRUE(registry_.Heartbeat("m1", absl::Now(), silent));
  Check(state);
  silent.sequence = 6;
  ASSERT_TRUE(registry_.Heartbeat("m1", absl::Now(), silent));
  EXPECT_THAT(Check(state), IsEmpty());
}

TEST_F(HeldCheckTest, AMachineNotUpOrNotRegisteredIsNotCompared) {
  const std::vector<fabric::Partition> state = {Active()};
  Report("m1", 1, {});
  Check(state);
  Report("m1", 2, {});
  // Long after its last report: Down, which the health pass handles.
  EXPECT_THAT(check_.Check(state, registry_, absl::Now() + absl::Minutes(1)), IsEmpty());
  registry_.ForgetForTesting("m1");
  EXPECT_THAT(Check(state), IsEmpty());
}

TEST_F(HeldCheckTest, ANewRegistrationStartsAfresh) {
  const std::vector<fabric::Partition> state = {Active()};
  Report("m1", 5, {});
  Check(state);
  Register("m1");  // its registration reconciles it
  Report("m1", 6, {});
  EXPECT_THAT(Check(state), IsEmpty());
  Report("m1", 7, {});
  EXPECT_THAT(Check(state), ElementsAre("m1"));
}

}  // namespace
}  // namespace vipu::server
