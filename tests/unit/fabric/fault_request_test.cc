// Fault kinds' names and short forms, and the validation of each kind's fields.
#include "fabric/fault_request.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::fabric {
namespace {

using ::testing::HasSubstr;

TEST(FaultKindTest, ParsesCliNamesAndShortForms) {
  for (const std::string& name : FaultKindNames()) {
    auto k = ParseFaultKind(name);
    ASSERT_TRUE(k.ok()) << name;
    EXPECT_EQ(FaultKindName(*k), name);
  }
  EXPECT_EQ(*ParseFaultKind("HANG"), FaultKind::kAgentHang);
  EXPECT_EQ(*ParseFaultKind("crash"), FaultKind::kAgentCrash);
  for (const char* bad : {"", "ipu", "link_down", "reboot"}) {
    auto k = ParseFaultKind(bad);
    ASSERT_FALSE(k.ok()) << bad;
    EXPECT_THAT(std::string(k.status().message()), HasSubstr("kind: unknown value"));
  }
}

FaultRequest ValidFaultRequest(FaultKind kind) {
  FaultRequest r;
  r.agent_id = "ag1";
  r.kind = kind;
  if (kind == FaultKind::kIpuError) r.ipu = 3;
  if (kind == FaultKind::kLinkDown) r.link = 13;
  if (kind == FaultKind::kAgentHang) r.duration_ms = kMaxHangMs;
  return r;
}

TEST(ValidateFaultRequestTest, AcceptsEachKindWithItsField) {
  for (FaultKind k : {FaultKind::kIpuError, FaultKind::kLinkDown, FaultKind::kAgentCrash,
                      FaultKind::kAgentHang, FaultKind::kClear}) {
    EXPECT_TRUE(ValidateFaultRequest(ValidFaultRequest(k)).ok()) << FaultKindName(k);
  }
}

struct BadCase {
  FaultKind kind;
  std::function<void(FaultRequest*)> mutate;
  std::string message;
};

TEST(ValidateFaultRequestTest, RefusesEveryInvalidField) {
  const std::vector<BadCase> cases = {
      {FaultKind::kClear, [](auto* r) { r->agent_id = ""; }, "agent_id:"},
      {FaultKind::kClear, [](auto* r) { r->agent_id = "a b"; }, "agent_id:"},
      {FaultKind::kClear, [](auto* r) { r->kind = FaultKind::kUndefined; }, "kind: must be one of"},
      {FaultKind::kClear, [](auto* r) { r->kind = static_cast<FaultKind>(42); }, "got 42"},
      {FaultKind::kIpuError, [](auto* r) { r->ipu.reset(); }, "ipu: is required"},
      {FaultKind::kIpuError, [](auto* r) { r->ipu = 4; }, "ipu: must be 0..3, got 4"},
      {FaultKind::kLinkDown, [](auto* r) { r->link.reset(); }, "link: is required"},
      {FaultKind::kLinkDown, [](auto* r) { r->link = 14; }, "link: must be a port 0..13, got 14"},
      {FaultKind::kLinkDown, [](auto* r) { r->ipu = 0; }, "ipu: only meaningful"},
      {FaultKind::kIpuError, [](auto* r) { r->link = 0; }, "link: only meaningful"},
      {FaultKind::kClear, [](auto* r) { r->duration_ms = 1; }, "duration_ms: only meaningful"},
      {FaultKind::kAgentCrash, [](auto* r) { r->ipu = 1; }, "ipu: only meaningful"},
      {FaultKind::kAgentHang, [](auto* r) { r->duration_ms = kMaxHangMs + 1; },
       "duration_ms: must be 0..3600000"},
  };
  for (const BadCase& c : cases) {
    FaultRequest r = ValidFaultRequest(c.kind);
    c.mutate(&r);
    absl::Status s = ValidateFaultRequest(r);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace vipu::fabric
