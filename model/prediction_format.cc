// A step prediction rendered as JSON or as a readable summary.
#include "model/prediction_format.h"

#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace vipu::model {
namespace {

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// JSON has no inf/nan; the model never produces them, but stay valid.
std::string Num(double v) {
  if (!std::isfinite(v)) return "null";
  return absl::StrFormat("%.9g", v);
}

std::string Bool(bool b) { return b ? "true" : "false"; }

std::string Seconds(double s) {
  if (s >= 1) return absl::StrFormat("%.3f s", s);
  if (s >= 1e-3) return absl::StrFormat("%.3f ms", s * 1e3);
  return absl::StrFormat("%.1f us", s * 1e6);
}

std::string Thousands(double v) {
  std::string digits = absl::StrFormat("%.0f", v);
  std::string out;
  const size_t start = (!digits.empty() && digits[0] == '-') ? 1 : 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string PredictionJson(const Workload& w, const SystemSpec& sys, const StepPrediction& p) {
  const bool tf = w.family == ModelFamily::kTransformer;
  std::string j = "{";
  absl::StrAppend(&j, "\"model\":", Quote(w.name), ",\"system\":", Quote(sys.name));
  const bool layers = w.family == ModelFamily::kLayers;
  absl::StrAppend(&j, ",\"workload\":{\"family\":",
                  Quote(tf       ? "transformer"
                        : layers ? "layers"
                                 : "convnet"));
  if (layers) {
    absl::StrAppend(&j, ",\"layers\":", w.layers.size(), ",\"training\":", Bool(w.training));
  } else if (tf) {
    const TransformerShape& t = w.transformer;
    absl::StrAppend(&j, ",\"hidden\":", t.hidden, ",\"layers\":", t.layers, ",\"heads\":", t.heads,
                    ",\"vocab\":", t.vocab, ",\"decoder\":", Bool(t.decoder),
                    ",\"seq_len\":", w.seq_len);
  } else {
    absl::StrAppend(&j, ",\"depth\":", w.convnet.depth, ",\"image_size\":", w.convnet.image_size);
  }
  absl::StrAppend(
      &j, ",\"micro_batch\":", w.micro_batch, ",\"grad_accum\":", w.grad_accum,
      ",\"device_iterations\":", w.device_iterations, ",\"replicas\":", w.replicas,
      ",\"ipus_per_replica\":", w.ipus_per_replica,
      ",\"optimizer\":", Quote(OptimizerName(w.optimizer)),
      ",\"optimizer_state_offchip\":", Bool(w.optimizer_state_offchip),
      ",\"optimizer_state_precision\":", Quote(StatePrecisionName(w.optimizer_state_precision)),
      ",\"half_layer_units\":", Bool(w.half_layer_units),
      ",\"replicated_tensor_sharding\":", Bool(w.replicated_tensor_sharding),
      ",\"recompute\":", Bool(w.recompute),
      ",\"checkpoint_every_layer\":", Bool(w.checkpoint_every_layer),
      ",\"packing\":", Num(w.packing), ",\"framework\":", Quote(FrameworkName(w.framework)),
      ",\"host_call_s\":", Num(w.host_call_s),
      ",\"replicated_input_streams\":", Bool(w.replicated_input_streams), "}");
  absl::StrAppend(
      &j, ",\"step_time_s\":", Num(p.step_time_s), ",\"samples_per_sec\":", Num(p.samples_per_sec),
      ",\"sequences_per_sec\":", Num(p.sequences_per_sec),
      ",\"tokens_per_sec\":", Num(p.tokens_per_sec), ",\"samples_per_step\":", p.samples_per_step);
  absl::StrAppend(
      &j, ",\"layers_per_ipu\":[", absl::StrJoin(p.layers_per_ipu, ","), "]",
      ",\"layers_auto_balanced\":", Bool(p.layers_auto_balanced),
      ",\"pipeline_stages\":", p.pipeline_stages,
      ",\"beats_per_iteration\":", p.beats_per_iteration, ",\"beat_s\":", Num(p.beat_s),
      ",\"pipeline_s\":", Num(p.pipeline_s), ",\"collectives_s\":", Num(p.collectives_s),
      ",\"ipu_link_collectives_s\":", Num(p.ipu_link_collectives_s),
      ",\"gw_link_collectives_s\":", Num(p.gw_link_collectives_s),
      ",\"weight_update_s\":", Num(p.weight_update_s), ",\"host_io_s\":", Num(p.host_io_s),
      ",\"host_overhead_s\":", Num(p.host_overhead_s),
      ",\"host_round_trips_s\":", Num(p.host_round_trips_s), ",\"host_bound\":", Bool(p.host_bound),
      ",\"communication_fraction\":", Num(p.communication_fraction), ",\"ipus_used\":", p.ipus_used,
      ",\"ilds_spanned\":", p.ilds_spanned,
      ",\"model_flops_per_sample\":", Num(p.model_flops_per_sample),
      ",\"model_tflops_per_ipu\":", Num(p.model_tflops_per_ipu),
      ",\"model_flops_utilization\":", Num(p.model_flops_utilization));
  j += ",\"stages\":[";
  for (size_t i = 0; i < p.stages.size(); ++i) {
    const StageTime& s = p.stages[i];
    std::vector<std::string> extras;
    for (const std::string& e : s.extras) extras.push_back(Quote(e));
    absl::StrAppend(&j, i ? "," : "", "{\"ipu\":", s.ipu, ",\"layers\":", s.layers, ",\"extras\":[",
                    absl::StrJoin(extras, ","), "]", ",\"params\":", Num(s.params),
                    ",\"micro_batch_compute_s\":", Num(s.micro_batch_compute_s),
                    ",\"matmul_s\":", Num(s.matmul_s), ",\"attention_s\":", Num(s.attention_s),
                    ",\"elementwise_s\":", Num(s.elementwise_s),
                    ",\"op_overhead_s\":", Num(s.op_overhead_s),
                    ",\"micro_batch_exchange_s\":", Num(s.micro_batch_exchange_s),
                    ",\"compute_s\":", Num(s.compute_s), ",\"exchange_s\":", Num(s.exchange_s),
                    ",\"collectives_s\":", Num(s.collectives_s),
                    ",\"weight_update_s\":", Num(s.weight_update_s), ",\"host_s\":", Num(s.host_s),
                    ",\"idle_s\":", Num(s.idle_s), "}");
  }
  j += "]}";
  return j;
}

namespace {

// Decimal megabytes, as the IPU's 900 MB is quoted.
std::string Mb(double bytes) { return absl::StrFormat("%.1f", bytes / 1e6); }

constexpr std::string_view kNotCounted = "code, vertex state, exchange buffers, op temporaries";

}  // namespace

std::string MemoryJson(const MemoryEstimate& m) {
  std::string j =
      absl::StrCat("{\"capacity_bytes\":", Num(m.capacity_bytes), ",\"fits\":", Bool(m.fits),
                   ",\"fullest_ipu\":", m.ipus.empty() ? 0 : m.ipus[m.fullest].ipu,
                   ",\"counted\":\"weights, gradients, on-chip optimizer state, "
                   "activations kept for the backward pass\"",
                   ",\"not_counted\":", Quote(kNotCounted), ",\"ipus\":[");
  for (size_t i = 0; i < m.ipus.size(); ++i) {
    const IpuMemory& u = m.ipus[i];
    absl::StrAppend(&j, i ? "," : "", "{\"ipu\":", u.ipu,
                    ",\"weights_bytes\":", Num(u.weights_bytes),
                    ",\"gradients_bytes\":", Num(u.gradients_bytes),
                    ",\"optimizer_bytes\":", Num(u.optimizer_bytes),
                    ",\"activations_bytes\":", Num(u.activations_bytes),
                    ",\"total_bytes\":", Num(u.TotalBytes()), "}");
  }
  j += "]}";
  return j;
}

std::string MemoryText(const MemoryEstimate& m) {
  if (m.ipus.empty()) return "";
  const IpuMemory& top = m.ipus[m.fullest];
  std::string t;
  absl::StrAppendFormat(&t, "memory         IPU %u, the fullest, needs at least %s of its %s MB",
                        top.ipu, Mb(top.TotalBytes()), Mb(m.capacity_bytes));
  if (m.fits) {
    absl::StrAppendFormat(&t, "; the other %s MB must hold what is not counted:\n",
                          Mb(m.capacity_bytes - top.TotalBytes()));
  } else {
    absl::StrAppend(&t, ": it does not fit, before what is not counted:\n");
  }
  absl::StrAppendFormat(&t, "               %s\n", kNotCounted);
  absl::StrAppendFormat(&t, "%-4s %10s %10s %10s %12s %10s  (MB)\n", "IPU", "weights", "gradients",
                        "optimizer", "activations", "total");
  for (const IpuMemory& u : m.ipus) {
    absl::StrAppendFormat(&t, "%-4u %10s %10s %10s %12s %10s\n", u.ipu, Mb(u.weights_bytes),
                          Mb(u.gradients_bytes), Mb(u.optimizer_bytes), Mb(u.activations_bytes),
                          Mb(u.TotalBytes()));
  }
  return t;
}

absl::Status CheckMemoryFits(const MemoryEstimate& m) {
  if (m.fits || m.ipus.empty()) return absl::OkStatus();
  const IpuMemory& top = m.ipus[m.fullest];
  return absl::InvalidArgumentError(absl::StrCat(
      "memory: IPU ", top.ipu, " needs at least ", Mb(top.TotalBytes()), " MB, more than its ",
      Mb(m.capacity_bytes), " MB (weights ", Mb(top.weights_bytes), ", gradients ",
      Mb(top.gradients_bytes), ", optimizer state ", Mb(top.optimizer_bytes), ", activations ",
      Mb(top.activations_bytes), " MB)"));
}

namespace {

// Pipeline units as layers: whole, or halves shown as "3.5".
std::string Layers(uint32_t units, bool halves) {
  if (!halves) return absl::StrCat(units);
  return absl::StrCat(units / 2, units % 2 ? ".5" : "");
}

std::string LayerList(const std::vector<uint32_t>& units, bool halves) {
  std::vector<std::string> parts;
  for (uint32_t u : units) parts.push_back(Layers(u, halves));
  return absl::StrJoin(parts, ",");
}

}  // namespace

std::string PredictionText(const Workload& w, const SystemSpec& sys, const StepPrediction& p) {
  const bool tf = w.family == ModelFamily::kTransformer;
  std::string t;
  absl::StrAppendFormat(&t, "%s on %s: %u replica%s x %u IPU%s (%u of %u IPUs, %u ILD%s)\n", w.name,
                        sys.name, w.replicas, w.replicas == 1 ? "" : "s", w.ipus_per_replica,
                        w.ipus_per_replica == 1 ? "" : "s", p.ipus_used, sys.num_ipus,
                        p.ilds_spanned, p.ilds_spanned == 1 ? "" : "s");
  absl::StrAppendFormat(&t, "  micro-batch %u, grad-accum %u, device iterations %u", w.micro_batch,
                        w.grad_accum, w.device_iterations);
  if (tf) absl::StrAppendFormat(&t, ", seq-len %u, packing %g", w.seq_len, w.packing);
  absl::StrAppendFormat(
      &t, "\n  optimizer %s%s%s, state in %s, recompute %s\n", OptimizerName(w.optimizer),
      w.optimizer_state_offchip ? " (state off-chip)" : "",
      w.replicated_tensor_sharding ? ", RTS" : "", StatePrecisionName(w.optimizer_state_precision),
      w.recompute ? "on" : "off");
  absl::StrAppendFormat(&t, "  %s per IPU: %s (%s%s)\n", tf ? "layers" : "blocks",
                        LayerList(p.layers_per_ipu, w.half_layer_units),
                        p.layers_auto_balanced ? "balanced" : "given",
                        w.half_layer_units ? ", attention and FFN apart" : "");
  absl::StrAppendFormat(&t, "step time      %s\n", Seconds(p.step_time_s));
  absl::StrAppendFormat(&t, "throughput     %s samples/s", Thousands(p.samples_per_sec));
  if (tf) {
    absl::StrAppendFormat(&t, " (%s sequences/s, %s tokens/s)", Thousands(p.sequences_per_sec),
                          Thousands(p.tokens_per_sec));
  }
  absl::StrAppendFormat(&t, "\npipeline       %u beats x %s x %u iteration%s = %s\n",
                        p.beats_per_iteration, Seconds(p.beat_s), w.device_iterations,
                        w.device_iterations == 1 ? "" : "s", Seconds(p.pipeline_s));
  absl::StrAppendFormat(&t, "collectives    %s (IPU-Links %s, GW-Links %s)\n",
                        Seconds(p.collectives_s), Seconds(p.ipu_link_collectives_s),
                        Seconds(p.gw_link_collectives_s));
  absl::StrAppendFormat(&t, "weight update  %s\n", Seconds(p.weight_update_s));
  absl::StrAppendFormat(&t,
                        "host           %s per step (%s: round trips %s, framework %s), "
                        "input I/O %s (%s)\n",
                        Seconds(p.host_overhead_s), FrameworkName(w.framework),
                        Seconds(p.host_round_trips_s), Seconds(w.host_call_s), Seconds(p.host_io_s),
                        p.host_bound ? "host-bound" : "overlapped");
  absl::StrAppendFormat(&t, "efficiency     %.1f model TFLOPS per IPU, %.1f%% of FP16 peak\n",
                        p.model_tflops_per_ipu, 100 * p.model_flops_utilization);
  absl::StrAppendFormat(&t, "communication  %.2f%% of the step\n", 100 * p.communication_fraction);
  absl::StrAppendFormat(&t, "\n%-4s %-6s %-22s %12s %12s %10s %10s %11s %10s %10s %10s\n", "IPU",
                        tf ? "layers" : "blocks", "also", "compute/mb", "exchange/mb", "compute",
                        "exchange", "collectives", "update", "host", "idle");
  for (const StageTime& s : p.stages) {
    absl::StrAppendFormat(&t, "%-4u %-6s %-22s %12s %12s %10s %10s %11s %10s %10s %10s\n", s.ipu,
                          Layers(s.layers, w.half_layer_units), absl::StrJoin(s.extras, ", "),
                          Seconds(s.micro_batch_compute_s), Seconds(s.micro_batch_exchange_s),
                          Seconds(s.compute_s), Seconds(s.exchange_s), Seconds(s.collectives_s),
                          Seconds(s.weight_update_s), Seconds(s.host_s), Seconds(s.idle_s));
  }
  return t;
}

}  // namespace vipu::model
