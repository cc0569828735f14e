// How one matrix product or convolution pass maps onto the tiles of an IPU:
// the AMP units' input- and output-channel groupings, the split of the work
// over the tiles, the exchange that brings each tile its operands and the
// reduction of partial sums. Poplar runs matrix products through the same
// convolution planner, so one model serves both.
#ifndef VIPU_MODEL_AMP_PLAN_H_
#define VIPU_MODEL_AMP_PLAN_H_

#include "model/system_spec.h"

namespace vipu::model {

// Bytes of one value of the operands, activations and partial sums the model
// times: FP16.
inline constexpr double kBytesPerValue = 2;

// One pass of a product in the planner's terms. A matrix product (m, k, n)
// is positions m, in_channels k, out_channels n. A convolution's forward
// pass is positions batch x output map, in_channels its input channels,
// kernel_positions kh x kw and input_stride its stride.
struct Product {
  double positions = 0;         // output positions (rows)
  double in_channels = 0;       // reduced dimension, per kernel position
  double out_channels = 0;      // output columns
  double kernel_positions = 1;  // reduction repeated over these (kh x kw)
  double groups = 1;            // independent products of this shape (heads x batch)
  double input_stride = 1;      // input positions per output position, per axis
  // The second operand (weights) differs per kernel position, as a kernel
  // does; false when one operand is shared by every kernel position (the
  // output gradient of a weight-gradient pass).
  bool weights_per_kernel_position = true;
  bool attention = false;  // reported as attention rather than matmul
};

struct ProductPlan {
  double cycles = 0;      // tile cycles of the busiest tile, all phases
  double supersteps = 0;  // compute sets, each with its sync and exchange
  double compute_cycles = 0;
  double exchange_cycles = 0;
  double reduction_cycles = 0;
  // Tiles along each split: groups, positions, input-channel groups (a
  // split here needs a partial-sum reduction), output-channel groups.
  double split_groups = 1, split_positions = 1, split_in = 1, split_out = 1;
  double folded_channels = 0;  // input channels after folding the kernel in; 0: not folded
};

// The cheapest plan of `product` on one IPU of `system`: the split over
// the tiles that minimises the busiest tile's compute, exchange and
// reduction cycles. A product with fewer input channels than an AMP group
// may fold its kernel into the channels, as the planner's dimension
// expansion does, when that is cheaper. `elementwise_efficiency` times the
// partial-sum additions.
ProductPlan PlanProduct(const Product& product, const SystemSpec& system,
                        double elementwise_efficiency);

// 2 x positions x in x out x kernel x groups: the useful FLOPs of a pass.
double ProductFlops(const Product& product);

}  // namespace vipu::model

#endif  // VIPU_MODEL_AMP_PLAN_H_
