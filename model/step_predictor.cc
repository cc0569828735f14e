// PredictStep: validates a workload against a system and times one training step.
#include "model/step_predictor.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/collectives.h"
#include "model/layer_balance.h"
#include "model/network_work.h"

namespace vipu::fabric::model {
namespace {

absl::Status Invalid(std::string message) { return absl::InvalidArgumentError(std::move(message)); }

bool IsPowerOfTwo(uint32_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Seconds of one unit, split by kind, for one micro-batch.
struct UnitSeconds {
  double matmul = 0;
  double attention = 0;
  double elementwise = 0;
  double overhead = 0;
  double Total() const { return matmul + attention + elementwise + overhead; }
  UnitSeconds& operator+=(const UnitSeconds& o) {
    matmul += o.matmul;
    attention += o.attention;
    elementwise += o.elementwise;
    overhead += o.overhead;
    return *this;
  }
};

// Forward once, backward as two products per forward product (input and
// weight gradients) and twice the element-wise traffic, plus one more
// forward when the unit is recomputed.
UnitSeconds TrainingSeconds(const UnitWork& u, const SystemSpec& sys, const Calibration& cal) {
  UnitSeconds fwd;
  for (const Gemm& g : u.gemms) {
    const double narrow = std::min({g.m, g.k, g.n});
    const double eff = cal.matmul_efficiency * narrow / (narrow + cal.matmul_half_dim);
    fwd.matmul += 2 * g.m * g.k * g.n * g.count / (sys.peak_fp16_flops * eff);
  }
  fwd.attention = u.attention_flops / (sys.peak_fp16_flops * cal.attention_efficiency);
  fwd.elementwise = u.elementwise_bytes / (sys.sram_bandwidth_bps * cal.elementwise_efficiency);
  fwd.overhead = u.ops * cal.op_overhead_s;
  const double passes = 3.0 + (u.recomputed ? 1.0 : 0.0);
  fwd.matmul *= passes;
  fwd.attention *= passes;
  fwd.elementwise *= passes;
  fwd.overhead *= passes;
  return fwd;
}

double StateBytesPerParam(Optimizer opt) {
  switch (opt) {
    case Optimizer::kSgd:
      return 0;
    case Optimizer::kSgdMomentum:
      return 4;  // FP32 momentum
    case Optimizer::kAdam:
    case Optimizer::kLamb:
      return 8;  // FP32 first and second moments
  }
  return 0;
}

double OpsPerTensor(Optimizer opt) {
  switch (opt) {
    case Optimizer::kSgd:
      return 2;
    case Optimizer::kSgdMomentum:
      return 3;
    case Optimizer::kAdam:
      return 6;
    case Optimizer::kLamb:
      return 9;  // plus weight and update norms per tensor
  }
  return 0;
}

absl::Status ValidateShape(const Workload& w) {
  if (w.family == ModelFamily::kTransformer) {
    const TransformerShape& t = w.transformer;
    if (t.hidden == 0) return Invalid("hidden: must be at least 1, got 0");
    if (t.layers == 0) return Invalid("layers: must be at least 1, got 0");
    if (t.heads == 0) return Invalid("heads: must be at least 1, got 0");
    if (t.hidden % t.heads != 0) {
      return Invalid(absl::StrCat("heads: must divide hidden (", t.hidden, "), got ", t.heads));
    }
    if (t.vocab == 0) return Invalid("vocab: must be at least 1, got 0");
    if (w.seq_len == 0) return Invalid("seq_len: must be at least 1, got 0");
    if (w.seq_len > t.max_positions) {
      return Invalid(absl::StrCat("seq_len: must not exceed the model's ", t.max_positions,
                                  " positions, got ", w.seq_len));
    }
    if (!t.decoder && t.masked_tokens > w.seq_len) {
      return Invalid(absl::StrCat("masked_tokens: must not exceed seq_len (", w.seq_len, "), got ",
                                  t.masked_tokens));
    }
    return absl::OkStatus();
  }
  const ConvNetShape& c = w.convnet;
  if (c.depth != 50 && c.depth != 101 && c.depth != 152) {
    return Invalid(absl::StrCat("depth: must be 50, 101 or 152, got ", c.depth));
  }
  if (c.image_size < 32) {
    return Invalid(absl::StrCat("image_size: must be at least 32, got ", c.image_size));
  }
  if (c.classes == 0) return Invalid("classes: must be at least 1, got 0");
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateWorkload(const Workload& w, const SystemSpec& sys) {
  if (absl::Status s = ValidateShape(w); !s.ok()) return s;
  if (w.micro_batch == 0) return Invalid("micro_batch: must be at least 1, got 0");
  if (w.grad_accum == 0) return Invalid("grad_accum: must be at least 1, got 0");
  if (w.device_iterations == 0) return Invalid("device_iterations: must be at least 1, got 0");
  if (w.replicas == 0) return Invalid("replicas: must be at least 1, got 0");
  if (!IsPowerOfTwo(w.ipus_per_replica)) {
    return Invalid(
        absl::StrCat("ipus_per_replica: must be a power of two, got ", w.ipus_per_replica));
  }
  if (!(w.packing >= 1.0) || !std::isfinite(w.packing)) {
    return Invalid(absl::StrCat("packing: must be a finite number >= 1, got ", w.packing));
  }
  if (!(w.host_loader_samples_per_s >= 0) || !std::isfinite(w.host_loader_samples_per_s)) {
    return Invalid(absl::StrCat("host_loader_rate: must be a finite number >= 0, got ",
                                w.host_loader_samples_per_s));
  }
  if (sys.num_ipus == 0) return Invalid(absl::StrCat("system: ", sys.name, " has no IPUs"));
  const uint64_t ipus = static_cast<uint64_t>(w.replicas) * w.ipus_per_replica;
  if (ipus > sys.num_ipus) {
    return Invalid(absl::StrCat("replicas: ", w.replicas, " replicas x ", w.ipus_per_replica,
                                " IPUs = ", ipus, " IPUs exceed the ", sys.num_ipus, " of ",
                                sys.name));
  }
  const uint32_t units = PipelineUnits(w);
  if (!w.layers_per_ipu.empty()) {
    if (w.layers_per_ipu.size() != w.ipus_per_replica) {
      return Invalid(absl::StrCat("layers_per_ipu: needs one entry per IPU of a replica (",
                                  w.ipus_per_replica, "), got ", w.layers_per_ipu.size()));
    }
    const uint64_t sum =
        std::accumulate(w.layers_per_ipu.begin(), w.layers_per_ipu.end(), uint64_t{0});
    if (sum != units) {
      return Invalid(absl::StrCat("layers_per_ipu: must add up to the model's ", units,
                                  " layers, got ", sum, " (", absl::StrJoin(w.layers_per_ipu, ","),
                                  ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<StepPrediction> PredictStep(const Workload& w, const SystemSpec& sys,
                                           const Calibration& cal) {
  if (absl::Status s = ValidateWorkload(w, sys); !s.ok()) return s;
  const NetworkWork net = BuildNetworkWork(w);
  const uint32_t n_ipus = w.ipus_per_replica;
  const bool transformer = w.family == ModelFamily::kTransformer;

  // Per-unit training times drive both the split and the stage totals.
  std::vector<UnitSeconds> unit_s;
  std::vector<double> unit_total;
  unit_s.reserve(net.units.size());
  for (const UnitWork& u : net.units) {
    unit_s.push_back(TrainingSeconds(u, sys, cal));
    unit_total.push_back(unit_s.back().Total());
  }
  const UnitSeconds first_s = TrainingSeconds(net.first, sys, cal);
  const UnitSeconds head_s = TrainingSeconds(net.head, sys, cal);
  const uint32_t head_ipu = net.head_on_first_ipu ? 0 : n_ipus - 1;

  StepPrediction p;
  p.layers_auto_balanced = w.layers_per_ipu.empty();
  if (p.layers_auto_balanced) {
    double first_extra = first_s.Total();
    double last_extra = 0;
    (head_ipu == 0 ? first_extra : last_extra) += head_s.Total();
    p.layers_per_ipu = BalanceLayers(unit_total, first_extra, last_extra, n_ipus);
  } else {
    p.layers_per_ipu = w.layers_per_ipu;
  }

  const ReplicaLayout layout = LayoutFor(w.replicas, n_ipus, sys);
  const double hop_bps = cal.links_per_hop * sys.ipu_link_bps * cal.link_efficiency;
  const double shard =
      w.replicated_tensor_sharding ? std::max<uint32_t>(1, w.replicas / layout.ilds) : 1;
  const double state_bytes = StateBytesPerParam(w.optimizer);
  const double update_passes = w.optimizer == Optimizer::kLamb ? 2 : 1;

  p.stages.resize(n_ipus);
  size_t next_unit = 0;
  double beat_work = 0;
  double max_collectives = 0, max_ipu_link = 0, max_gw = 0, max_update = 0;
  for (uint32_t i = 0; i < n_ipus; ++i) {
    StageTime& st = p.stages[i];
    st.ipu = i;
    st.layers = p.layers_per_ipu[i];
    UnitSeconds sum;
    double params = 0, tensors = 0;
    double out_bytes = net.first.output_bytes;
    if (i == 0) {
      sum += first_s;
      params += net.first.params;
      tensors += net.first.param_tensors;
      st.extras.push_back(net.first.name);
    }
    for (uint32_t k = 0; k < st.layers; ++k, ++next_unit) {
      sum += unit_s[next_unit];
      params += net.units[next_unit].params;
      tensors += net.units[next_unit].param_tensors;
      out_bytes = net.units[next_unit].output_bytes;
    }
    if (i == head_ipu) {
      sum += head_s;
      params += net.head.params;
      tensors += net.head.param_tensors;
      st.extras.push_back(net.head.name);
    }
    st.params = params;
    st.matmul_s = sum.matmul;
    st.attention_s = sum.attention;
    st.elementwise_s = sum.elementwise;
    st.op_overhead_s = sum.overhead;
    st.micro_batch_compute_s = sum.Total();
    // Each IPU passes its activations on and the gradients back at once,
    // one direction each; a transformer's last IPU returns to the heads.
    const bool sends = n_ipus > 1 && (i + 1 < n_ipus || transformer);
    if (sends) st.micro_batch_exchange_s = out_bytes / hop_bps + sys.ipu_link_latency_s;
    beat_work = std::max(beat_work, st.micro_batch_compute_s + st.micro_batch_exchange_s);

    const CollectiveTime ct = GradientReductionTime(2 * params, layout, sys, cal);
    st.collectives_s = ct.total_s;
    if (ct.total_s > max_collectives) {
      max_collectives = ct.total_s;
      max_ipu_link = ct.ipu_link_s;
      max_gw = ct.gw_link_s;
    }
    const double local = params / shard;
    const double onchip = local * update_passes * (6 + 2 * state_bytes) /
                          (sys.sram_bandwidth_bps * cal.elementwise_efficiency);
    const double offchip = w.optimizer_state_offchip
                               ? 2 * local * state_bytes /
                                     (sys.streaming_memory_bps_per_ipu * cal.streaming_efficiency)
                               : 0;
    st.weight_update_s = onchip + offchip + tensors * OpsPerTensor(w.optimizer) * cal.op_overhead_s;
    max_update = std::max(max_update, st.weight_update_s);
  }

  p.pipeline_stages = n_ipus + ((transformer && n_ipus > 1) ? 1 : 0);
  p.beats_per_iteration = w.grad_accum + 2 * (p.pipeline_stages - 1);
  p.beat_s = beat_work + cal.micro_batch_overhead_s;
  p.pipeline_s = w.device_iterations * p.beats_per_iteration * p.beat_s;
  p.collectives_s = w.device_iterations * max_collectives;
  p.ipu_link_collectives_s = w.device_iterations * max_ipu_link;
  p.gw_link_collectives_s = w.device_iterations * max_gw;
  p.weight_update_s = w.device_iterations * max_update;
  const double device_s = p.pipeline_s + p.collectives_s + p.weight_update_s;

  p.ipus_used = w.replicas * n_ipus;
  p.ilds_spanned = layout.ilds;
  p.samples_per_step =
      static_cast<uint64_t>(w.replicas) * w.grad_accum * w.micro_batch * w.device_iterations;
  const double samples = static_cast<double>(p.samples_per_step);
  const double machines = std::ceil(p.ipus_used / static_cast<double>(kIpusPerMachine));
  // Input streams are prefetched while the IPUs compute, so they only cost
  // time when they are the slower side.
  p.host_io_s = samples * net.input_bytes_per_sample /
                (machines * sys.host_link_bps_per_machine * cal.ethernet_efficiency);
  const double loader_s =
      w.host_loader_samples_per_s > 0 ? samples / w.host_loader_samples_per_s : 0;
  const double host_limit = std::max(p.host_io_s, loader_s);
  p.host_bound = host_limit > device_s;
  p.host_overhead_s = cal.host_step_overhead_s;
  p.step_time_s = std::max(device_s, host_limit) + p.host_overhead_s;

  p.samples_per_sec = samples / p.step_time_s;
  p.sequences_per_sec = p.samples_per_sec * (transformer ? w.packing : 1.0);
  p.tokens_per_sec = transformer ? p.samples_per_sec * w.seq_len : 0;
  p.model_flops_per_sample = 3 * net.forward_flops_per_sample;
  p.model_tflops_per_ipu = p.samples_per_sec * p.model_flops_per_sample / p.ipus_used / 1e12;
  p.model_flops_utilization = p.model_tflops_per_ipu * 1e12 / sys.peak_fp16_flops;

  const double iterations = w.device_iterations;
  const double micro_batches = iterations * w.grad_accum;
  double max_exchange = 0;
  for (StageTime& st : p.stages) {
    st.compute_s = micro_batches * st.micro_batch_compute_s;
    st.exchange_s = micro_batches * st.micro_batch_exchange_s;
    st.collectives_s *= iterations;
    st.weight_update_s *= iterations;
    st.host_s = p.host_overhead_s + std::max(0.0, host_limit - device_s);
    st.idle_s = std::max(0.0, p.step_time_s - st.compute_s - st.exchange_s - st.collectives_s -
                                  st.weight_update_s - st.host_s);
    max_exchange = std::max(max_exchange, st.exchange_s);
  }
  p.communication_fraction = (max_exchange + p.collectives_s) / p.step_time_s;
  return p;
}

}  // namespace vipu::fabric::model
