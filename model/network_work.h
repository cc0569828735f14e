// The work one micro-batch puts on the chip, unit by unit: forward GEMMs,
// attention products, element-wise traffic, op count, parameters and the
// activations handed to the next pipeline stage. Pure arithmetic on shapes.
#ifndef VIPU_MODEL_NETWORK_WORK_H_
#define VIPU_MODEL_NETWORK_WORK_H_

#include <string>
#include <vector>

#include "model/amp_plan.h"
#include "model/workload.h"

namespace vipu::model {

struct UnitWork {
  std::string name;
  std::vector<Gemm> gemms;     // forward pass
  double attention_flops = 0;  // forward QK^T and AV
  // The same products pass by pass, as the planner maps them to the tiles:
  // the forward pass, and the backward pass's input- and weight-gradient
  // products.
  std::vector<Product> forward;
  std::vector<Product> backward;
  double elementwise_bytes = 0;  // forward SRAM traffic of element-wise ops
  // Forward compute sets of the ops that are not products: one for an
  // element-wise op; three for a normalisation (a partial reduction on each
  // tile, the combination across tiles, the apply); five for a softmax (two
  // reductions and the apply). The products count their own.
  double ops = 0;
  double params = 0;
  double param_tensors = 0;
  double output_bytes = 0;  // activations sent to the next unit
  // Activations of one micro-batch the backward pass reads when the unit is
  // not recomputed: the operands of its matrix and attention products that
  // their gradients need. Element-wise ops (norms, GELU, dropout, ReLU) are
  // taken as fused with or recomputed from these, so nothing more counts.
  double saved_bytes = 0;
  bool recomputed = false;    // recomputed in the backward pass
  bool forward_only = false;  // inference: no backward pass
};

struct NetworkWork {
  std::vector<UnitWork> units;        // the layers / blocks a pipeline splits
  UnitWork first;                     // embedding or stem, always on IPU 0
  UnitWork head;                      // task head
  bool head_on_first_ipu = true;      // tied embedding (BERT, GPT) vs last IPU
  double input_bytes_per_sample = 0;  // streamed from the host
  double forward_flops_per_sample = 0;
};

// Work per micro-batch of `workload.micro_batch` samples.
NetworkWork BuildNetworkWork(const Workload& workload);

// 2 m k n count, summed.
double GemmFlops(const std::vector<Gemm>& gemms);

}  // namespace vipu::model

#endif  // VIPU_MODEL_NETWORK_WORK_H_
