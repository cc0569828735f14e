// The published training throughputs the model can be checked against,
// each with its source and the configuration it replays, and the model's
// prediction of each. Two of them are the runs the tuned constants were
// solved from (calibration); every other is validation, never used to set
// a constant.
#ifndef VIPU_MODEL_VALIDATION_H_
#define VIPU_MODEL_VALIDATION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/calibration.h"
#include "model/workload.h"

namespace vipu::fabric::model {

struct PublishedResult {
  std::string name;           // what ran
  std::string system;         // the pod preset it is replayed on
  std::string source;         // where the figure is published
  std::string configuration;  // the layout replayed, and what is assumed
  double published = 0;       // samples (sequences, images) per second
  bool calibration = false;   // one of the two runs the tuned constants were solved from
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
};

absl::StatusOr<std::vector<ValidationRow>> RunValidation(
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

}  // namespace vipu::fabric::model

#endif  // VIPU_MODEL_VALIDATION_H_
