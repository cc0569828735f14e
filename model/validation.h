// The published training throughputs the model can be checked against,
// each with its source and the configuration it replays, and the model's
// prediction of each. Three of them are the runs constants were solved
// from (calibration): the two seeds for the compute constants, and one run
// across four ILDs for the gateway's effective GW-Link throughput. Every
// other is validation, never used to set a constant.
#ifndef VIPU_MODEL_VALIDATION_H_
#define VIPU_MODEL_VALIDATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/calibration.h"
#include "model/workload.h"

namespace vipu::model {

struct PublishedResult {
  std::string name;           // what ran
  std::string system;         // the pod preset it is replayed on
  std::string source;         // where the figure is published
  std::string configuration;  // the layout replayed, and what is assumed
  double published = 0;       // samples (sequences, images) per second
  bool calibration = false;   // one of the runs a constant was solved from
  std::string calibrates;     // for a calibration row: what it was solved for
  // Its pace was set by a host input the source does not publish (a real-
  // data loader's rate), so the model's figure is the chip-bound rate.
  bool host_input_unpublished = false;
  Workload workload;
};

// Every published result the reference material gives, calibration first.
std::vector<PublishedResult> PublishedResults();

struct ValidationRow {
  PublishedResult result;
  double predicted = 0;  // the model's samples per second
  double error = 0;      // predicted / published - 1
  // The memory check of the run's layout: a published run that ran must
  // fit. The fullest IPU of a replica and the floor it needs.
  bool fits = true;
  uint32_t fullest_ipu = 0;
  double fullest_bytes = 0;
  double capacity_bytes = 0;
};

absl::StatusOr<std::vector<ValidationRow>> RunValidation(
    const Calibration& calibration = DefaultCalibration());

// The one published multi-ILD run the gateway's effective GW-Link
// throughput is solved from: ResNet-50 on a Bow Pod256 (four ILDs, four
// hosts). It is also in PublishedResults(), as a calibration row.
PublishedResult CrossIldCalibrationRun();

// The gateway's effective throughput solved from CrossIldCalibrationRun()
// with every other constant of `calibration` fixed, and what it is
// checked against.
struct CrossIldFit {
  std::string run;              // the calibration run's name
  double solved_bps = 0;        // per machine, per direction
  double used_bps = 0;          // the rounded constant the model uses
  double line_payload_bps = 0;  // what the machine's two GW-Links carry
  double share_of_line = 0;     // used / line payload
  // Below the line rate: the calibrated figure can be a real throughput.
  bool plausible = false;
};

// Bisects the throughput until the calibration run's prediction meets its
// published figure. INTERNAL if no throughput between 1 MB/s and the line
// payload rate meets it (the run would then not be paced by the GW-Links).
absl::StatusOr<CrossIldFit> SolveCrossIldThroughput(
    const Calibration& calibration = DefaultCalibration());

struct ValidationSummary {
  size_t rows = 0;
  double median_abs_error = 0;
  double worst_abs_error = 0;
  std::string worst;  // the row with the worst error
};

// Over the validation rows (not the calibration ones); with
// `with_unpublished_host_input` false, leaving out the rows paced by a host
// input the source does not give.
ValidationSummary SummariseValidation(const std::vector<ValidationRow>& rows,
                                      bool with_unpublished_host_input);

}  // namespace vipu::model

#endif  // VIPU_MODEL_VALIDATION_H_
