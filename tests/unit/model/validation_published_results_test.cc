// The published results `ipu-model validate` replays: sources, roles, and
// the calibration rows the tuned constants were solved from.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "model/ipu_memory.h"
#include "model/step_predictor.h"
#include "model/system_spec.h"
#include "model/validation.h"

namespace vipu::model {
namespace {

TEST(ModelPublishedResultsTest, CalibrationRowsComeFirstTheSeedsThenOneRunAcrossIlds) {
  const std::vector<PublishedResult> rows = PublishedResults();
  ASSERT_GE(rows.size(), 4u);
  EXPECT_TRUE(rows[0].calibration);
  EXPECT_TRUE(rows[1].calibration);
  EXPECT_TRUE(rows[2].calibration);
  EXPECT_EQ(rows[2].name, CrossIldCalibrationRun().name);
  size_t calibration = 0;
  for (const PublishedResult& r : rows) {
    calibration += r.calibration ? 1 : 0;
    EXPECT_EQ(r.calibration, !r.calibrates.empty()) << r.name;
    EXPECT_FALSE(r.source.empty()) << r.name;
    EXPECT_FALSE(r.configuration.empty()) << r.name;
    EXPECT_GT(r.published, 0) << r.name;
  }
  EXPECT_EQ(calibration, 3u);
}

// Only one run across ILDs may set a constant; every other one checks it.
TEST(ModelPublishedResultsTest, OneRunAcrossIldsCalibratesAndTheOthersValidate) {
  absl::StatusOr<std::vector<ValidationRow>> rows = RunValidation();
  ASSERT_TRUE(rows.ok()) << rows.status();
  size_t calibrating = 0, validating_128 = 0, validating_256 = 0;
  for (const ValidationRow& r : *rows) {
    const uint64_t ipus =
        static_cast<uint64_t>(r.result.workload.replicas) * r.result.workload.ipus_per_replica;
    if (ipus <= 64) continue;
    if (r.result.calibration) {
      ++calibrating;
      continue;
    }
    (ipus == 128 ? validating_128 : validating_256) += 1;
  }
  EXPECT_EQ(calibrating, 1u);
  EXPECT_GE(validating_128, 3u);
  EXPECT_GE(validating_256, 2u);
}

// The constant the model uses is the throughput the calibration run gives,
// and below what the GW-Links carry.
TEST(ModelPublishedResultsTest, GatewayThroughputIsSolvedFromTheRunAndBelowTheLineRate) {
  absl::StatusOr<CrossIldFit> fit = SolveCrossIldThroughput();
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->run, CrossIldCalibrationRun().name);
  EXPECT_NEAR(fit->used_bps / fit->solved_bps, 1.0, 0.02) << fit->solved_bps;
  EXPECT_TRUE(fit->plausible);
  EXPECT_LT(fit->used_bps, fit->line_payload_bps);
  EXPECT_NEAR(fit->share_of_line, fit->used_bps / fit->line_payload_bps, 1e-12);
}

TEST(ModelPublishedResultsTest, CalibrationRowsStayWithinTwoPercent) {
  absl::StatusOr<std::vector<ValidationRow>> rows = RunValidation();
  ASSERT_TRUE(rows.ok()) << rows.status();
  for (const ValidationRow& r : *rows) {
    EXPECT_NEAR(r.error, r.predicted / r.result.published - 1, 1e-12);
    if (r.result.calibration) {
      EXPECT_LT(std::abs(r.error), 0.02) << r.result.name;
    }
  }
}

// A guard against regressions, not a target: the chip-paced validation
// rows stay under 6% at the median, and each under 14%. Two rows inside one
// ILD, BERT-Large in PopART and TF1 before SDK 2.5 on a Bow Pod16, are 12%
// and 13% off (docs/model.md says why no constant moved for them); every
// other one is under 12%, and every row across ILDs under 10%.
TEST(ModelPublishedResultsTest, ChipPacedValidationRowsStayClose) {
  absl::StatusOr<std::vector<ValidationRow>> rows = RunValidation();
  ASSERT_TRUE(rows.ok()) << rows.status();
  size_t over_12 = 0;
  for (const ValidationRow& r : *rows) {
    if (r.result.calibration || r.result.host_input_unpublished) continue;
    EXPECT_LT(std::abs(r.error), 0.14) << r.result.name << ": " << r.predicted;
    over_12 += std::abs(r.error) >= 0.12 ? 1 : 0;
    const uint64_t ipus =
        static_cast<uint64_t>(r.result.workload.replicas) * r.result.workload.ipus_per_replica;
    if (ipus > 64) {
      EXPECT_LT(std::abs(r.error), 0.10) << r.result.name << ": " << r.predicted;
    }
  }
  EXPECT_LE(over_12, 2u);
  EXPECT_LT(SummariseValidation(*rows, false).median_abs_error, 0.06);
}

// Every published configuration ran, so the memory check must let each one
// through.
TEST(ModelPublishedResultsTest, EveryPublishedRunFitsItsIpus) {
  absl::StatusOr<std::vector<ValidationRow>> rows = RunValidation();
  ASSERT_TRUE(rows.ok()) << rows.status();
  for (const ValidationRow& r : *rows) {
    EXPECT_TRUE(r.fits) << r.result.name << ": IPU " << r.fullest_ipu << " " << r.fullest_bytes;
    EXPECT_GT(r.fullest_bytes, 0) << r.result.name;
    EXPECT_LE(r.fullest_bytes, r.capacity_bytes) << r.result.name;
  }
}

// MLPerf v2.0 BERT-Large on a Bow Pod16 (2 x 8 IPUs, micro-batch 3,
// sequence length 512, LAMB state on chip) fits with the options its
// configuration documents: FP16 state sharded over the replicas, attention
// and FFN apart, only the stage inputs stashed. Counted with FP32 state,
// unsharded, every layer's input stashed and the split balanced by time,
// the same run needs more than an IPU holds, and is refused.
TEST(ModelPublishedResultsTest, MlperfBertPod16FitsOnlyWithItsDocumentedOptions) {
  const std::vector<PublishedResult> rows = PublishedResults();
  auto it = std::find_if(rows.begin(), rows.end(), [](const PublishedResult& r) {
    return r.name == "BERT-Large SL512 packed, 16 IPUs (PaddlePaddle, MLPerf v2.0, SDK 2.5.1)";
  });
  ASSERT_NE(it, rows.end());
  const SystemSpec sys = *SystemSpecForPreset(it->system);
  const Workload& published = it->workload;
  absl::StatusOr<StepPrediction> p = PredictStep(published, sys);
  ASSERT_TRUE(p.ok()) << p.status();
  const MemoryEstimate fits = EstimateMemory(published, sys, *p);
  EXPECT_TRUE(fits.fits);
  EXPECT_LT(fits.ipus[fits.fullest].TotalBytes(), 0.5 * fits.capacity_bytes);

  Workload pessimistic = published;
  pessimistic.optimizer_state_precision = StatePrecision::kFp32;
  pessimistic.replicated_tensor_sharding = false;
  pessimistic.checkpoint_every_layer = true;
  pessimistic.half_layer_units = false;
  pessimistic.layers_per_ipu.clear();
  p = PredictStep(pessimistic, sys);
  ASSERT_TRUE(p.ok()) << p.status();
  const MemoryEstimate refused = EstimateMemory(pessimistic, sys, *p);
  EXPECT_FALSE(refused.fits);
  EXPECT_EQ(refused.fullest, 0u);
  EXPECT_GT(refused.ipus[0].TotalBytes(), refused.capacity_bytes);
  // The state is what was pessimistic: FP16 halves it, RTS halves it again.
  Workload fp16 = pessimistic;
  fp16.optimizer_state_precision = StatePrecision::kFp16;
  const MemoryEstimate halved = EstimateMemory(fp16, sys, *p);
  EXPECT_NEAR(halved.ipus[0].optimizer_bytes, refused.ipus[0].optimizer_bytes / 2, 1);
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
}  // namespace vipu::model
