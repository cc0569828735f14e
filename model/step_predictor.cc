// PredictStep: validates a workload against a system and times one training step.
#include "model/step_predictor.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/amp_plan.h"
#include "model/collectives.h"
#include "model/layer_balance.h"
#include "model/network_work.h"

namespace vipu::model {
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

// The plans of the products a prediction times, kept so that a shape met
// again (every layer of a transformer, the repeated blocks of a ResNet) is
// planned once.
class PlanCache {
 public:
  PlanCache(const SystemSpec& sys, const Calibration& cal) : sys_(sys), cal_(cal) {}

  const ProductPlan& Plan(const Product& p) {
    for (const auto& [key, plan] : entries_) {
      if (Same(key, p)) return plan;
    }
    entries_.emplace_back(p, PlanProduct(p, sys_, cal_.elementwise_efficiency));
    return entries_.back().second;
  }

 private:
  static bool Same(const Product& a, const Product& b) {
    return a.positions == b.positions && a.in_channels == b.in_channels &&
           a.out_channels == b.out_channels && a.kernel_positions == b.kernel_positions &&
           a.groups == b.groups && a.input_stride == b.input_stride &&
           a.weights_per_kernel_position == b.weights_per_kernel_position;
  }

  const SystemSpec& sys_;
  const Calibration& cal_;
  std::vector<std::pair<Product, ProductPlan>> entries_;
};

// One micro-batch of a unit: its forward products once (twice when the
// unit is recomputed) and its backward products; its element-wise traffic
// and other ops once per forward pass and twice for the backward pass,
// whose gradients touch about twice the values; every compute set pays its
// fixed cost.
UnitSeconds TrainingSeconds(const UnitWork& u, const SystemSpec& sys, const Calibration& cal,
                            PlanCache& plans) {
  UnitSeconds t;
  const double forward_passes = u.recomputed ? 2.0 : 1.0;
  double supersteps = 0;
  auto add = [&](const std::vector<Product>& products, double times) {
    for (const Product& p : products) {
      const ProductPlan& plan = plans.Plan(p);
      const double seconds = times * plan.cycles / (sys.clock_hz * cal.amp_efficiency);
      (p.attention ? t.attention : t.matmul) += seconds;
      supersteps += times * plan.supersteps;
    }
  };
  add(u.forward, forward_passes);
  add(u.backward, 1);
  const double elementwise_passes = forward_passes + (u.forward_only ? 0 : 2);
  t.elementwise = elementwise_passes * u.elementwise_bytes /
                  (sys.sram_bandwidth_bps * cal.elementwise_efficiency);
  supersteps += elementwise_passes * u.ops;
  t.overhead = supersteps * cal.superstep_s;
  return t;
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

absl::Status ValidateLayers(const Workload& w) {
  if (w.layers.empty()) return Invalid("layers: a network given layer by layer needs a layer");
  auto finite = [](double v) { return std::isfinite(v) && v >= 0; };
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const TracedLayer& l = w.layers[i];
    bool ok = finite(l.elementwise_bytes) && finite(l.ops) && finite(l.params) &&
              finite(l.param_tensors) && finite(l.output_bytes);
    for (const Gemm& p : l.products) {
      ok = ok && finite(p.m) && finite(p.k) && finite(p.n) && finite(p.count);
    }
    if (!ok) {
      return Invalid(
          absl::StrCat("layers[", i, "] (", l.name, "): sizes must be finite and not negative"));
    }
  }
  if (!std::isfinite(w.layers_input_bytes_per_sample) || w.layers_input_bytes_per_sample < 0) {
    return Invalid("input bytes per sample: must be finite and not negative");
  }
  return absl::OkStatus();
}

absl::Status ValidateShape(const Workload& w) {
  if (w.family == ModelFamily::kLayers) return ValidateLayers(w);
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

// Per-micro-batch training seconds of the pipeline units and of the parts
// placed around them (the first unit, e.g. the embedding, and the heads).
struct UnitTimes {
  std::vector<UnitSeconds> units;
  UnitSeconds first;
  UnitSeconds head;
  uint32_t head_ipu = 0;
};

UnitTimes TimeUnits(const NetworkWork& net, uint32_t n_ipus, const SystemSpec& sys,
                    const Calibration& cal) {
  UnitTimes t;
  PlanCache plans(sys, cal);
  t.units.reserve(net.units.size());
  for (const UnitWork& u : net.units) t.units.push_back(TrainingSeconds(u, sys, cal, plans));
  t.first = TrainingSeconds(net.first, sys, cal, plans);
  t.head = TrainingSeconds(net.head, sys, cal, plans);
  t.head_ipu = net.head_on_first_ipu ? 0 : n_ipus - 1;
  return t;
}

// Layers per IPU balancing the training times, the first unit and the heads
// weighing on the IPUs that hold them.
std::vector<uint32_t> BalancedSplit(const UnitTimes& t, uint32_t n_ipus) {
  std::vector<double> unit_total;
  for (const UnitSeconds& u : t.units) unit_total.push_back(u.Total());
  double first_extra = t.first.Total();
  double last_extra = 0;
  (t.head_ipu == 0 ? first_extra : last_extra) += t.head.Total();
  return BalanceLayers(unit_total, first_extra, last_extra, n_ipus);
}

// What the timing of every stage shares.
struct StageContext {
  const Workload& w;
  const SystemSpec& sys;
  const Calibration& cal;
  const NetworkWork& net;
  const UnitTimes& times;
  ReplicaLayout layout;
  double hop_bps = 0;        // one pipeline hop, activations or gradients
  double shard = 1;          // replicas sharing each optimizer state
  double state_bytes = 0;    // optimizer state per parameter
  double update_passes = 1;  // passes over the weights per update
};

StageContext ContextFor(const Workload& w, const SystemSpec& sys, const Calibration& cal,
                        const NetworkWork& net, const UnitTimes& times) {
  StageContext c{w, sys, cal, net, times, LayoutFor(w.replicas, w.ipus_per_replica, sys)};
  c.hop_bps = cal.links_per_hop * sys.ipu_link_bps * cal.link_efficiency;
  c.shard = w.replicated_tensor_sharding ? std::max<uint32_t>(1, w.replicas / c.layout.ilds) : 1;
  c.state_bytes = OptimizerStateBytes(w.optimizer, w.optimizer_state_precision);
  c.update_passes = w.optimizer == Optimizer::kLamb ? 2 : 1;
  return c;
}

// What one IPU holds: the summed seconds, parameters and tensors of its
// units, and the size of the activations it passes on.
struct StageLoad {
  UnitSeconds seconds;
  double params = 0;
  double tensors = 0;
  double out_bytes = 0;
};

// Sums stage `st`'s units, from `next_unit` on, which it advances past them.
StageLoad LoadStage(const StageContext& c, StageTime& st, size_t& next_unit) {
  const NetworkWork& net = c.net;
  StageLoad load;
  load.out_bytes = net.first.output_bytes;
  if (st.ipu == 0) {
    load.seconds += c.times.first;
    load.params += net.first.params;
    load.tensors += net.first.param_tensors;
    st.extras.push_back(net.first.name);
  }
  for (uint32_t k = 0; k < st.layers; ++k, ++next_unit) {
    load.seconds += c.times.units[next_unit];
    load.params += net.units[next_unit].params;
    load.tensors += net.units[next_unit].param_tensors;
    load.out_bytes = net.units[next_unit].output_bytes;
  }
  if (st.ipu == c.times.head_ipu) {
    load.seconds += c.times.head;
    load.params += net.head.params;
    load.tensors += net.head.param_tensors;
    st.extras.push_back(net.head.name);
  }
  return load;
}

// Fills stage `st`'s per-micro-batch times and its per-iteration gradient
// reduction and weight update; returns the reduction's split by link kind.
CollectiveTime TimeStage(const StageContext& c, const StageLoad& load, StageTime& st) {
  const Workload& w = c.w;
  const SystemSpec& sys = c.sys;
  const Calibration& cal = c.cal;
  const uint32_t n_ipus = w.ipus_per_replica;
  st.params = load.params;
  st.matmul_s = load.seconds.matmul;
  st.attention_s = load.seconds.attention;
  st.elementwise_s = load.seconds.elementwise;
  st.op_overhead_s = load.seconds.overhead;
  st.micro_batch_compute_s = load.seconds.Total();
  // Each IPU passes its activations on and the gradients back at once,
  // one direction each; a transformer's last IPU returns to the heads.
  const bool transformer = w.family == ModelFamily::kTransformer;
  const bool sends = n_ipus > 1 && (st.ipu + 1 < n_ipus || transformer);
  if (sends) st.micro_batch_exchange_s = load.out_bytes / c.hop_bps + sys.ipu_link_latency_s;

  // Inference reduces no gradients and updates no weights.
  const CollectiveTime ct =
      w.training ? GradientReductionTime(2 * load.params, c.layout, sys, cal) : CollectiveTime{};
  st.collectives_s = ct.total_s;
  const double local = load.params / c.shard;
  const double onchip = local * c.update_passes * (6 + 2 * c.state_bytes) /
                        (sys.sram_bandwidth_bps * cal.elementwise_efficiency);
  const double offchip = w.optimizer_state_offchip
                             ? 2 * local * c.state_bytes /
                                   (sys.streaming_memory_bps_per_ipu * sys.pcie_payload_efficiency)
                             : 0;
  st.weight_update_s =
      w.training ? onchip + offchip + load.tensors * OpsPerTensor(w.optimizer) * cal.superstep_s
                 : 0;
  return ct;
}

// The slowest stage's figures, which set the step's.
struct Slowest {
  double beat_work = 0;  // compute and exchange of one micro-batch
  double collectives = 0;
  double ipu_link = 0;  // of the slowest reduction
  double gw = 0;        // of the slowest reduction
  double update = 0;
};

Slowest TimeStages(const StageContext& c, StepPrediction& p) {
  const uint32_t n_ipus = c.w.ipus_per_replica;
  p.stages.resize(n_ipus);
  size_t next_unit = 0;
  Slowest slowest;
  for (uint32_t i = 0; i < n_ipus; ++i) {
    StageTime& st = p.stages[i];
    st.ipu = i;
    st.layers = p.layers_per_ipu[i];
    const StageLoad load = LoadStage(c, st, next_unit);
    const CollectiveTime ct = TimeStage(c, load, st);
    slowest.beat_work =
        std::max(slowest.beat_work, st.micro_batch_compute_s + st.micro_batch_exchange_s);
    if (ct.total_s > slowest.collectives) {
      slowest.collectives = ct.total_s;
      slowest.ipu_link = ct.ipu_link_s;
      slowest.gw = ct.gw_link_s;
    }
    slowest.update = std::max(slowest.update, st.weight_update_s);
  }
  return slowest;
}

// The pipeline, reduction and update totals of a step; returns their sum,
// the time on the IPUs.
double SetDeviceTimes(const Workload& w, const Slowest& slowest, const Calibration& cal,
                      StepPrediction& p) {
  const uint32_t n_ipus = w.ipus_per_replica;
  const bool transformer = w.family == ModelFamily::kTransformer;
  p.pipeline_stages = n_ipus + ((transformer && n_ipus > 1) ? 1 : 0);
  p.beats_per_iteration = w.grad_accum + 2 * (p.pipeline_stages - 1);
  // Each beat also reads the micro-batch's input stream and syncs the
  // pipeline's copy between IPUs: two compute sets' fixed costs.
  p.beat_s = slowest.beat_work + 2 * cal.superstep_s;
  p.pipeline_s = w.device_iterations * p.beats_per_iteration * p.beat_s;
  p.collectives_s = w.device_iterations * slowest.collectives;
  p.ipu_link_collectives_s = w.device_iterations * slowest.ipu_link;
  p.gw_link_collectives_s = w.device_iterations * slowest.gw;
  p.weight_update_s = w.device_iterations * slowest.update;
  return p.pipeline_s + p.collectives_s + p.weight_update_s;
}

// The host side and the step time; returns the hosts' time that the
// IPUs' work does not hide (input streams or the data loader).
double SetHostTimes(const Workload& w, const SystemSpec& sys, const NetworkWork& net,
                    const ReplicaLayout& layout, double device_s, StepPrediction& p) {
  p.ipus_used = w.replicas * w.ipus_per_replica;
  p.samples_per_step =
      static_cast<uint64_t>(w.replicas) * w.grad_accum * w.micro_batch * w.device_iterations;
  const double samples = static_cast<double>(p.samples_per_step);
  const double machines = std::ceil(p.ipus_used / static_cast<double>(fabric::kIpusPerMachine));
  // A broadcast stream sends each micro-batch once to a machine for all
  // its replicas.
  const double replicas_per_machine =
      std::max(1.0, std::min<double>(w.replicas, fabric::kIpusPerMachine / w.ipus_per_replica));
  const double streamed = w.replicated_input_streams ? samples : samples / replicas_per_machine;
  // Input streams are prefetched while the IPUs compute, so they only cost
  // time when they are the slower side.
  p.host_io_s = streamed * net.input_bytes_per_sample /
                (machines * sys.host_link_bps_per_machine * sys.ethernet_payload_efficiency);
  const double loader_s =
      w.host_loader_samples_per_s > 0 ? samples / w.host_loader_samples_per_s : 0;
  const FrameworkHost host = HostMechanisms(w.framework);
  // Each round trip of a host call is a network step to the gateways; the
  // run's start and end also sync every IPU, across GW-Links when the
  // partition spans ILDs.
  p.host_round_trips_s =
      host.round_trips * sys.gw_link_latency_s + 2 * CrossIldSyncSeconds(layout.ilds, sys);
  p.host_overhead_s = p.host_round_trips_s + w.host_call_s;
  double hidden_by_device = p.host_io_s;
  double serial = 0;
  if (host.loads_between_calls) {
    serial = loader_s;
  } else {
    hidden_by_device = std::max(hidden_by_device, loader_s);
  }
  p.host_bound = hidden_by_device > device_s || serial > device_s;
  p.step_time_s = std::max(device_s, hidden_by_device) + serial + p.host_overhead_s;
  return std::max(0.0, hidden_by_device - device_s) + serial;
}

void SetThroughput(const Workload& w, const SystemSpec& sys, const NetworkWork& net,
                   StepPrediction& p) {
  const bool transformer = w.family == ModelFamily::kTransformer;
  const double samples = static_cast<double>(p.samples_per_step);
  p.samples_per_sec = samples / p.step_time_s;
  p.sequences_per_sec = p.samples_per_sec * (transformer ? w.packing : 1.0);
  p.tokens_per_sec = transformer ? p.samples_per_sec * w.seq_len : 0;
  p.model_flops_per_sample = 3 * net.forward_flops_per_sample;
  p.model_tflops_per_ipu = p.samples_per_sec * p.model_flops_per_sample / p.ipus_used / 1e12;
  p.model_flops_utilization = p.model_tflops_per_ipu * 1e12 / sys.peak_fp16_flops;
}

// Each stage's share of the whole step: its per-micro-batch and
// per-iteration times multiplied out, the rest idle.
void SpreadOverStep(const Workload& w, double host_limit, StepPrediction& p) {
  const double iterations = w.device_iterations;
  const double micro_batches = iterations * w.grad_accum;
  double max_exchange = 0;
  for (StageTime& st : p.stages) {
    st.compute_s = micro_batches * st.micro_batch_compute_s;
    st.exchange_s = micro_batches * st.micro_batch_exchange_s;
    st.collectives_s *= iterations;
    st.weight_update_s *= iterations;
    st.host_s = p.host_overhead_s + host_limit;
    st.idle_s = std::max(0.0, p.step_time_s - st.compute_s - st.exchange_s - st.collectives_s -
                                  st.weight_update_s - st.host_s);
    max_exchange = std::max(max_exchange, st.exchange_s);
  }
  p.communication_fraction = (max_exchange + p.collectives_s) / p.step_time_s;
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
  // Per-unit training times drive both the split and the stage totals.
  const UnitTimes times = TimeUnits(net, w.ipus_per_replica, sys, cal);
  StepPrediction p;
  p.layers_auto_balanced = w.layers_per_ipu.empty();
  p.layers_per_ipu =
      p.layers_auto_balanced ? BalancedSplit(times, w.ipus_per_replica) : w.layers_per_ipu;
  const StageContext context = ContextFor(w, sys, cal, net, times);
  p.ilds_spanned = context.layout.ilds;
  const Slowest slowest = TimeStages(context, p);
  const double device_s = SetDeviceTimes(w, slowest, cal, p);
  const double host_limit = SetHostTimes(w, sys, net, context.layout, device_s, p);
  SetThroughput(w, sys, net, p);
  SpreadOverStep(w, host_limit, p);
  return p;
}

}  // namespace vipu::model
