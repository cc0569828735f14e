// EstimateMemory: weights, gradients, optimizer state and kept activations per IPU of a replica.
#include "model/ipu_memory.h"

#include <algorithm>

#include "model/collectives.h"
#include "model/network_work.h"

namespace vipu::model {
namespace {

constexpr double kBytesPerWeight = 2;    // FP16
constexpr double kBytesPerGradient = 2;  // FP16, as the weight update reads them

}  // namespace

MemoryEstimate EstimateMemory(const Workload& w, const SystemSpec& sys, const StepPrediction& p) {
  const NetworkWork net = BuildNetworkWork(w);
  const uint32_t n_ipus = w.ipus_per_replica;
  // Each replica of an ILD keeps its shard of the state, as the update is timed.
  const ReplicaLayout layout = LayoutFor(w.replicas, n_ipus, sys);
  const double shard =
      w.replicated_tensor_sharding ? std::max<uint32_t>(1, w.replicas / layout.ilds) : 1;
  const double state_bytes =
      w.optimizer_state_offchip ? 0 : OptimizerStateBytes(w.optimizer, w.optimizer_state_precision);
  // The step time runs one forward and one backward per stage per beat, so
  // a micro-batch forwarded by stage k is back for its backward 2(S-1-k)
  // beats later: that many more are in flight there, and never more than
  // the micro-batches of one iteration.
  const uint32_t stages = std::max<uint32_t>(1, p.pipeline_stages);
  auto in_flight = [&](uint32_t stage) {
    return std::min<double>(w.grad_accum, 2.0 * (stages - 1 - stage) + 1);
  };
  const uint32_t head_ipu = net.head_on_first_ipu ? 0 : n_ipus - 1;

  MemoryEstimate m;
  m.capacity_bytes = sys.sram_bytes;
  size_t next_unit = 0;
  double unit_input = net.first.output_bytes;
  for (uint32_t i = 0; i < n_ipus && i < p.layers_per_ipu.size(); ++i) {
    double params = 0;
    double stash = 0;
    double recomputing = 0;  // the largest unit rebuilt during the backward pass
    // Stashing only the stage's input: its recomputed units' inputs for the
    // one micro-batch being rebuilt, and the first of them once per
    // micro-batch in flight.
    double rebuilt_inputs = 0;
    double stage_input = -1;
    auto hold = [&](const UnitWork& u, double depth, double input_bytes) {
      params += u.params;
      if (!u.recomputed) {
        stash += depth * u.saved_bytes;
        return;
      }
      recomputing = std::max(recomputing, u.saved_bytes);
      if (w.checkpoint_every_layer) {
        stash += depth * input_bytes;
        return;
      }
      if (stage_input < 0) {
        stage_input = input_bytes;
        stash += depth * input_bytes;
      }
      rebuilt_inputs += input_bytes;
    };
    if (i == 0) hold(net.first, in_flight(0), 0);
    for (uint32_t k = 0; k < p.layers_per_ipu[i] && next_unit < net.units.size();
         ++k, ++next_unit) {
      hold(net.units[next_unit], in_flight(i), unit_input);
      unit_input = net.units[next_unit].output_bytes;
    }
    // The heads are the last stage: their backward follows their forward.
    if (i == head_ipu) hold(net.head, in_flight(stages - 1), 0);

    IpuMemory ipu;
    ipu.ipu = i;
    ipu.weights_bytes = params * kBytesPerWeight;
    ipu.gradients_bytes = params * kBytesPerGradient;
    ipu.optimizer_bytes = params / shard * state_bytes;
    ipu.activations_bytes = stash + rebuilt_inputs + recomputing;
    if (m.ipus.empty() || ipu.TotalBytes() > m.ipus[m.fullest].TotalBytes()) {
      m.fullest = static_cast<uint32_t>(m.ipus.size());
    }
    m.ipus.push_back(ipu);
  }
  m.fits = m.ipus.empty() || m.ipus[m.fullest].TotalBytes() <= m.capacity_bytes;
  return m;
}

}  // namespace vipu::model
