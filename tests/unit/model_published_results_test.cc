// The published results `ipu-model validate` replays: sources, roles, and
// the calibration rows the tuned constants were solved from.
#include <cmath>
#include <string>

#include "gtest/gtest.h"
#include "model/validation.h"

namespace vipu::fabric::model {
namespace {

TEST(ModelPublishedResultsTest, CalibrationRowsComeFirstAndAreTheTwoSeeds) {
  const std::vector<PublishedResult> rows = PublishedResults();
  ASSERT_GE(rows.size(), 4u);
  EXPECT_TRUE(rows[0].calibration);
  EXPECT_TRUE(rows[1].calibration);
  size_t calibration = 0;
  for (const PublishedResult& r : rows) {
    calibration += r.calibration ? 1 : 0;
    EXPECT_FALSE(r.source.empty()) << r.name;
    EXPECT_FALSE(r.configuration.empty()) << r.name;
    EXPECT_GT(r.published, 0) << r.name;
  }
  EXPECT_EQ(calibration, 2u);
}

TEST(ModelPublishedResultsTest, SeedsStayWithinOnePercent) {
  absl::StatusOr<std::vector<ValidationRow>> rows = RunValidation();
  ASSERT_TRUE(rows.ok()) << rows.status();
  for (const ValidationRow& r : *rows) {
    EXPECT_NEAR(r.error, r.predicted / r.result.published - 1, 1e-12);
    if (r.result.calibration) {
      EXPECT_LT(std::abs(r.error), 0.01) << r.result.name;
    }
  }
}

// A guard against regressions, not a target: the chip-paced validation
// rows stay within 10% at the median and within 30% each (the farthest,
// ResNet-50 on four ILDs, is 27% off; docs/model.md says why it is left so).
TEST(ModelPublishedResultsTest, ChipPacedValidationRowsStayClose) {
  absl::StatusOr<std::vector<ValidationRow>> rows = RunValidation();
  ASSERT_TRUE(rows.ok()) << rows.status();
  for (const ValidationRow& r : *rows) {
    if (r.result.calibration || r.result.host_input_unpublished) continue;
    EXPECT_LT(std::abs(r.error), 0.30) << r.result.name << ": " << r.predicted;
  }
  EXPECT_LT(SummariseValidation(*rows, false).median_abs_error, 0.10);
}

TEST(ModelPublishedResultsTest, SummaryLeavesOutCalibrationAndCanLeaveOutHostPacedRows) {
  absl::StatusOr<std::vector<ValidationRow>> rows = RunValidation();
  ASSERT_TRUE(rows.ok()) << rows.status();
  size_t validation = 0, paced = 0;
  for (const ValidationRow& r : *rows) {
    if (r.result.calibration) continue;
    ++validation;
    if (!r.result.host_input_unpublished) ++paced;
  }
  const ValidationSummary all = SummariseValidation(*rows, true);
  const ValidationSummary chip = SummariseValidation(*rows, false);
  EXPECT_EQ(all.rows, validation);
  EXPECT_EQ(chip.rows, paced);
  EXPECT_LE(all.median_abs_error, all.worst_abs_error);
  EXPECT_LE(chip.worst_abs_error, all.worst_abs_error);
  EXPECT_FALSE(all.worst.empty());
}

}  // namespace
}  // namespace vipu::fabric::model
