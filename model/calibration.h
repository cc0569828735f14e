// The global constants of the compute and link model. They are the same for
// every workload and system; docs/model.md explains where each comes from
// and how the two tuned ones were solved from the two measured BERT runs.
// Chip and link figures are in system_spec.cc.
#ifndef VIPU_MODEL_CALIBRATION_H_
#define VIPU_MODEL_CALIBRATION_H_

namespace vipu::model {

struct Calibration {
  // --- Compute: the two constants tuned on the two seed runs ---
  // Share of the planned cycles of a product (AMP work, the exchange that
  // feeds it, the partial-sum reduction; amp_plan.h) that the compiled
  // program achieves: bank conflicts, exchange code and layout copies the
  // plan does not count take the rest.
  double amp_efficiency = 0.81;
  // Fixed cost of one compute set: the sync that opens its exchange, the
  // exchange set-up and the launch of the vertices.
  double superstep_s = 0.40e-6;

  // --- Compute: from a published figure ---
  // Share of a tile's SRAM bandwidth that element-wise vertices (norms,
  // activations, dropout, residual adds, partial sums, optimizer maths)
  // reach: about a quarter for compiled vertex code (Jia et al.,
  // "Dissecting the Graphcore IPU Architecture via Microbenchmarking",
  // 2019).
  double elementwise_efficiency = 0.25;

  // --- Links ---
  // Usable fraction of an IPU-Link's raw rate (poplibs' IPU model, 0.85).
  double link_efficiency = 0.85;
  // IPU-Links a pipeline hop or a ring step can use in one direction: the
  // two rail links between neighbouring rungs of the ladder.
  double links_per_hop = 2;

  // --- Across ILDs: the one constant calibrated on a multi-ILD run ---
  // Throughput a machine's gateway reaches, bytes/s per direction, for the
  // GW-Link phase of a collective that spans ILDs: the shards of the four
  // IPUs of the machine leave over PCIe to the gateway and cross its two
  // 100 GbE GW-Links. No published figure gives it; it is solved from one
  // published run across four ILDs (CrossIldCalibrationRun in
  // validation.h: ResNet-50 on a Bow Pod256, 425,514 images/s) with every
  // other constant fixed, and rounded. It is far below the GW-Links'
  // payload rate (24.5 GB/s a machine), so what limits it is the gateway's
  // forwarding, not the links; `ipu-model validate` prints both.
  double gw_effective_bps_per_machine = 0.90e9;
};

// The constants used everywhere unless a caller supplies its own.
inline const Calibration& DefaultCalibration() {
  static const Calibration kDefault;
  return kDefault;
}

}  // namespace vipu::model

#endif  // VIPU_MODEL_CALIBRATION_H_
