// PlanProduct: a product pass split over the tiles, timed in AMP, exchange and reduction cycles.
#include "model/amp_plan.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <vector>

#include "base/mutex.h"

namespace vipu::model {
namespace {

// Fixed cycles of one AMP work item on a tile (one input-channel group,
// one output-channel group, one kernel position), from poplibs' cycle
// estimates of its convolution vertices: the supervisor's loop and the
// load of the AMP's weights (32 cycles for 16 x 16 FP16 weights at 16 bytes
// a cycle), and each of the six workers' set-up, in issue slots of six tile
// cycles. A 1x1 item (ConvPartial1x1Out): 56 + 6 x 31. An item of a larger
// kernel (ConvPartialnx1), per kernel position: 67 + 6 x 42.
constexpr double kItemCycles1x1 = 56 + 6 * 31;
constexpr double kItemCyclesNx1 = 67 + 6 * 42;

double Ceil(double v) { return std::ceil(v - 1e-9); }

// Split counts worth trying along a dimension of `n`: 1, 2, 3, 4, 6, 8,
// 12, ... (powers of two and three times them), and n itself.
std::vector<double> Splits(double n, double limit) {
  std::vector<double> out;
  const double top = std::min(n, limit);
  for (double v = 1; v <= top; v *= 2) {
    out.push_back(v);
    if (3 * v / 2 <= top && v >= 2) out.push_back(3 * v / 2);
  }
  if (top == n) out.push_back(n);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct Shape {
  double positions, in_groups, out_groups, kernel, groups, stride;
  double in_channels;  // before rounding up to the AMP group
  bool weights_per_kernel_position;
};

ProductPlan PlanShape(const Shape& s, const SystemSpec& sys, double elementwise_efficiency) {
  const double tiles = sys.tiles_per_ipu;
  const double workers = sys.worker_threads;
  const double gin = sys.amp_input_channels;
  const double gout = sys.amp_output_channels;
  const double item = s.kernel > 1 ? kItemCyclesNx1 : kItemCycles1x1;
  const double sram_bytes_per_cycle = sys.sram_bandwidth_bps / (tiles * sys.clock_hz);
  ProductPlan best;
  best.cycles = -1;
  for (double tg : Splits(s.groups, tiles)) {
    for (double tp : Splits(s.positions, tiles / tg)) {
      for (double to : Splits(s.out_groups, tiles / (tg * tp))) {
        // Whatever tiles are left go to the reduction, or none of them.
        const double room = std::floor(tiles / (tg * tp * to));
        for (double ti : {1.0, std::min(room, s.in_groups)}) {
          if (ti < 1) continue;
          const double g = Ceil(s.groups / tg);
          const double p = Ceil(s.positions / tp);
          const double gi = Ceil(s.in_groups / ti);
          const double go = Ceil(s.out_groups / to);
          ProductPlan plan;
          plan.split_groups = tg;
          plan.split_positions = tp;
          plan.split_in = ti;
          plan.split_out = to;
          // Each worker takes a sixth of the positions; the AMP finishes
          // one position of a 16 x 16 item every amp_cycles_per_position.
          plan.compute_cycles = g * gi * go * s.kernel *
                                (item + sys.amp_cycles_per_position * workers * Ceil(p / workers));
          // The tile receives its input positions (stride^2 per output) for
          // its input-channel groups, and its block of the second operand.
          const double input_bytes = p * s.stride * s.stride * gi * gin * kBytesPerValue;
          const double weight_bytes = gi * go * gin * gout * kBytesPerValue *
                                      (s.weights_per_kernel_position ? s.kernel : 1);
          plan.exchange_cycles =
              g * (input_bytes + weight_bytes) / sys.exchange_bytes_per_tile_cycle;
          plan.supersteps = 1;
          if (ti > 1) {
            // Each tile ends up owning 1/ti of its block's outputs: it
            // receives the other ti - 1 partials of those and adds them up.
            const double outputs = g * p * go * gout / ti;
            plan.reduction_cycles =
                outputs * (ti - 1) * kBytesPerValue / sys.exchange_bytes_per_tile_cycle +
                outputs * ti * kBytesPerValue / (sram_bytes_per_cycle * elementwise_efficiency);
            plan.supersteps += 1;
          }
          plan.cycles = plan.compute_cycles + plan.exchange_cycles + plan.reduction_cycles;
          if (best.cycles < 0 || plan.cycles < best.cycles) best = plan;
        }
      }
    }
  }
  return best;
}

}  // namespace

double ProductFlops(const Product& p) {
  return 2 * p.positions * p.in_channels * p.out_channels * p.kernel_positions * p.groups;
}

namespace {

ProductPlan SearchPlan(const Product& product, const SystemSpec& sys,
                       double elementwise_efficiency);

// Plans already searched, for every caller in the process: the agents time
// the same few workloads again and again, and a transformer's layers or a
// ResNet's blocks repeat their shapes. Bounded; cleared when full.
class PlanMemo {
 public:
  ProductPlan Get(const Product& p, const SystemSpec& sys, double elementwise_efficiency) {
    const Key key = {p.positions,
                     p.in_channels,
                     p.out_channels,
                     p.kernel_positions,
                     p.groups,
                     p.input_stride,
                     p.weights_per_kernel_position ? 1.0 : 0.0,
                     static_cast<double>(sys.tiles_per_ipu),
                     static_cast<double>(sys.worker_threads),
                     sys.amp_input_channels,
                     sys.amp_output_channels,
                     sys.amp_cycles_per_position,
                     sys.exchange_bytes_per_tile_cycle,
                     sys.sram_bandwidth_bps / sys.clock_hz,
                     elementwise_efficiency};
    {
      MutexLock lock(&mu_);
      auto it = plans_.find(key);
      if (it != plans_.end()) return it->second;
    }
    const ProductPlan plan = SearchPlan(p, sys, elementwise_efficiency);
    MutexLock lock(&mu_);
    if (plans_.size() >= kMaxPlans) plans_.clear();
    plans_.emplace(key, plan);
    return plan;
  }

 private:
  using Key = std::array<double, 15>;
  static constexpr size_t kMaxPlans = 4096;
  Mutex mu_;
  std::map<Key, ProductPlan> plans_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

ProductPlan PlanProduct(const Product& product, const SystemSpec& sys,
                        double elementwise_efficiency) {
  static PlanMemo* memo = new PlanMemo();
  return memo->Get(product, sys, elementwise_efficiency);
}

namespace {

ProductPlan SearchPlan(const Product& product, const SystemSpec& sys,
                       double elementwise_efficiency) {
  ProductPlan none;
  if (product.positions <= 0 || product.in_channels <= 0 || product.out_channels <= 0 ||
      product.kernel_positions <= 0 || product.groups <= 0) {
    return none;
  }
  const double gin = sys.amp_input_channels;
  const double gout = sys.amp_output_channels;
  Shape shape{product.positions,
              Ceil(product.in_channels / gin),
              Ceil(product.out_channels / gout),
              product.kernel_positions,
              product.groups,
              product.input_stride,
              product.in_channels,
              product.weights_per_kernel_position};
  ProductPlan best = PlanShape(shape, sys, elementwise_efficiency);
  // Too few input channels to fill an AMP group: fold the kernel's width,
  // or the whole kernel, into the channels. The folded input is built by
  // one more exchange, which the plan's input bytes already count; it
  // costs one more compute set.
  if (product.in_channels < gin && product.kernel_positions > 1) {
    const double width = std::round(std::sqrt(product.kernel_positions));
    for (double fold : {width, product.kernel_positions}) {
      if (fold <= 1) continue;
      Shape folded = shape;
      folded.in_channels = product.in_channels * fold;
      folded.in_groups = Ceil(folded.in_channels / gin);
      folded.kernel = product.kernel_positions / fold;
      folded.stride = 1;  // the fold has gathered the strided window
      ProductPlan plan = PlanShape(folded, sys, elementwise_efficiency);
      plan.supersteps += 1;
      plan.folded_channels = folded.in_channels;
      if (plan.cycles < best.cycles) best = plan;
    }
  }
  return best;
}

}  // namespace
}  // namespace vipu::model
