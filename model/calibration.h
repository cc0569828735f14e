// The global constants of the compute and link model. They are the same for
// every workload and system; docs/model.md explains where each comes from
// and which two were tuned against two measured BERT runs.
#ifndef VIPU_MODEL_CALIBRATION_H_
#define VIPU_MODEL_CALIBRATION_H_

namespace vipu::fabric::model {

struct Calibration {
  // --- Compute (tuned: matmul_efficiency and op_overhead_s) ---
  // Sustained fraction of FP16 AMP peak on a large matmul, exchange phases
  // included.
  double matmul_efficiency = 0.54;
  // A GEMM whose smallest dimension is `matmul_half_dim` runs at half of
  // matmul_efficiency: narrow operands leave AMP lanes and tiles idle.
  double matmul_half_dim = 64;
  // Batched per-head attention products (QK^T, AV): small, many, fused with
  // masking; fraction of peak.
  double attention_efficiency = 0.15;
  // Fraction of the on-chip SRAM bandwidth that element-wise vertices
  // (norms, activations, dropout, residuals, optimizer maths) sustain.
  double elementwise_efficiency = 0.25;
  // Fixed cost of one operation (compute set): BSP sync, exchange set-up and
  // vertex launch, paid once per op per micro-batch.
  double op_overhead_s = 5.2e-6;

  // --- Links ---
  // Usable fraction of a link's raw rate (poplibs' IPU model uses 0.85).
  double link_efficiency = 0.85;
  // IPU-Links a pipeline hop or a ring step can use in one direction (the
  // two rail links between neighbouring rungs of the ladder).
  double links_per_hop = 2;
  // Fixed cost of one ring step of a collective inside an ILD.
  double ring_step_latency_s = 3e-6;
  // Fixed cost of one ring step across GW-Links (RoCE round trip).
  double gw_step_latency_s = 15e-6;
  // Usable fraction of 100 GbE (GW-Links, host links).
  double ethernet_efficiency = 0.8;
  // Usable fraction of the IPU <-> Streaming Memory PCIe path.
  double streaming_efficiency = 0.8;

  // --- Host ---
  // Fixed cost of each micro-batch beyond compute: the input stream read and
  // the pipeline's inter-IPU copy sync.
  double micro_batch_overhead_s = 20e-6;
  // Fixed cost of one host call (framework loop, engine run, host sync,
  // anchor read-back), once per step.
  double host_step_overhead_s = 8e-3;
};

// The constants used everywhere unless a caller supplies its own.
inline const Calibration& DefaultCalibration() {
  static const Calibration kDefault;
  return kDefault;
}

}  // namespace vipu::fabric::model

#endif  // VIPU_MODEL_CALIBRATION_H_
