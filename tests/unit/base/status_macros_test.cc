// RETURN_IF_ERROR and ASSIGN_OR_RETURN: early return with the status unchanged, one evaluation.
#include <memory>
#include <string>

#include "base/status_macros.h"
#include "gtest/gtest.h"

namespace vipu {
namespace {

absl::Status Fails(int* calls) {
  ++*calls;
  return absl::NotFoundError("partition 'p': not found");
}
absl::Status Succeeds(int* calls) {
  ++*calls;
  return absl::OkStatus();
}
absl::StatusOr<std::unique_ptr<std::string>> Value(bool ok, int* calls) {
  ++*calls;
  if (!ok) return absl::UnavailableError("agent ag1: not connected");
  return std::make_unique<std::string>("value");
}

absl::Status TwoSteps(bool first_ok, int* calls, bool* reached_end) {
  RETURN_IF_ERROR(first_ok ? Succeeds(calls) : Fails(calls));
  RETURN_IF_ERROR(Value(true, calls));
  *reached_end = true;
  return absl::OkStatus();
}

absl::StatusOr<std::string> Unwrap(bool ok, int* calls) {
  ASSIGN_OR_RETURN(std::unique_ptr<std::string> v, Value(ok, calls));
  ASSIGN_OR_RETURN(auto again, Value(true, calls));
  return *v + "+" + *again;
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheErrorUnchangedAndStops) {
  int calls = 0;
  bool reached_end = false;
  absl::Status s = TwoSteps(false, &calls, &reached_end);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "partition 'p': not found");
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(reached_end);
}

TEST(StatusMacrosTest, ReturnIfErrorGoesOnWhenOkAndTakesAStatusOr) {
  int calls = 0;
  bool reached_end = false;
  EXPECT_TRUE(TwoSteps(true, &calls, &reached_end).ok());
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(reached_end);
}

TEST(StatusMacrosTest, AssignOrReturnMovesTheValueOrReturnsTheError) {
  int calls = 0;
  auto ok = Unwrap(true, &calls);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, "value+value");
  EXPECT_EQ(calls, 2);

  calls = 0;
  auto failed = Unwrap(false, &calls);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(failed.status().message(), "agent ag1: not connected");
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace vipu
