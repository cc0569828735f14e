// `ipu-model predict`: flags to a workload and a system, the prediction as text or JSON.
#include "model/ipu-model/predict_command.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "fabric/enum_names.h"
#include "model/collectives.h"
#include "model/ipu_memory.h"
#include "model/prediction_format.h"
#include "model/published_config.h"
#include "model/step_predictor.h"
#include "model/validation.h"

namespace vipu::model {
namespace {

// Raw flag values; integers are wide so negatives reach our own checks.
struct PredictFlags {
  std::string model;
  std::string system;
  // Unset: the default of a partition created with these IPUs.
  std::optional<std::string> routing;
  std::optional<int64_t> hidden, layers, heads, ffn, vocab, masked_tokens, image_size, classes;
  bool decoder = false;
  int64_t seq_len = 128;
  std::optional<int64_t> micro_batch;
  int64_t grad_accum = 1;
  int64_t device_iterations = 1;
  int64_t replicas = 1;
  std::optional<int64_t> ipus_per_replica;
  std::string layers_per_ipu;
  double packing = 1.0;
  std::optional<std::string> optimizer;
  bool offchip = false;
  bool onchip = false;
  std::optional<std::string> state_precision;
  bool rts = false;
  bool no_rts = false;
  bool recompute = false;
  bool no_recompute = false;
  bool stage_inputs_only = false;
  double host_loader_rate = 0;
  std::optional<std::string> framework;
  double host_call_ms = 0;
  bool broadcast_inputs = false;
  bool json = false;
  int64_t repeat = 0;
};

absl::Status Invalid(std::string m) { return absl::InvalidArgumentError(std::move(m)); }

absl::StatusOr<uint32_t> ToU32(const std::string& field, int64_t v) {
  if (v < 0 || v > std::numeric_limits<uint32_t>::max()) {
    return Invalid(absl::StrCat(field, ": must be between 0 and 4294967295, got ", v));
  }
  return static_cast<uint32_t>(v);
}

// A split as given to --layers-per-ipu: whole layers, or, when any entry
// ends in ".5", half layers (attention and FFN placed apart), counted in
// halves.
struct LayerList {
  std::vector<uint32_t> units;
  bool halves = false;
};

absl::StatusOr<LayerList> ParseLayerList(const std::string& text) {
  const std::string bad = absl::StrCat(
      "layers_per_ipu: must be a comma list of non-negative integers or halves (3.5), got \"", text,
      "\"");
  LayerList out;
  std::vector<uint32_t> doubled;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    bool half = false;
    if (absl::ConsumeSuffix(&part, ".5")) {
      half = true;
    } else {
      absl::ConsumeSuffix(&part, ".0");
    }
    uint32_t v = 0;
    if (part.empty() || !absl::SimpleAtoi(part, &v) || v > (1u << 30)) return Invalid(bad);
    out.halves = out.halves || half;
    out.units.push_back(v);
    doubled.push_back(2 * v + (half ? 1 : 0));
  }
  if (out.halves) out.units = doubled;
  return out;
}

#define ASSIGN_U32(dst, field, value)           \
  do {                                          \
    ASSIGN_OR_RETURN(dst, ToU32(field, value)); \
  } while (0)

// The shape flags of `f` on `w`: a transformer's dimensions, or a
// convolutional network's image size and classes; a flag of the other kind
// is refused naming it.
absl::Status ApplyShapeFlags(const PredictFlags& f, Workload* workload) {
  Workload& w = *workload;
  const bool tf = w.family == ModelFamily::kTransformer;
  if (tf) {
    if (f.image_size) return Invalid("image_size: applies to convolutional models only");
    if (f.classes) return Invalid("classes: applies to convolutional models only");
    if (f.decoder && !w.transformer.decoder) {
      return Invalid("decoder: applies to --model transformer only");
    }
    TransformerShape& t = w.transformer;
    if (f.hidden) ASSIGN_U32(t.hidden, "hidden", *f.hidden);
    if (f.layers) ASSIGN_U32(t.layers, "layers", *f.layers);
    if (f.heads) ASSIGN_U32(t.heads, "heads", *f.heads);
    if (f.ffn) ASSIGN_U32(t.ffn, "ffn", *f.ffn);
    if (f.vocab) ASSIGN_U32(t.vocab, "vocab", *f.vocab);
    if (f.masked_tokens) ASSIGN_U32(t.masked_tokens, "masked_tokens", *f.masked_tokens);
    if (f.ffn && *f.ffn == 0) return Invalid("ffn: must be at least 1, got 0");
    ASSIGN_U32(w.seq_len, "seq_len", f.seq_len);
  } else {
    for (const auto& [name, value] : {std::pair{"hidden", f.hidden},
                                      {"layers", f.layers},
                                      {"heads", f.heads},
                                      {"ffn", f.ffn},
                                      {"vocab", f.vocab},
                                      {"masked_tokens", f.masked_tokens}}) {
      if (value) return Invalid(absl::StrCat(name, ": applies to transformer models only"));
    }
    if (f.decoder) return Invalid("decoder: applies to --model transformer only");
    if (f.image_size) ASSIGN_U32(w.convnet.image_size, "image_size", *f.image_size);
    if (f.classes) ASSIGN_U32(w.convnet.classes, "classes", *f.classes);
  }
  return absl::OkStatus();
}

// The workload `f` starts from: the named preset, or for `--model
// transformer` (`custom`) one of the shape the flags give.
absl::StatusOr<Workload> BaseWorkload(const PredictFlags& f, const std::string& key, bool custom) {
  Workload w;
  if (custom) {
    w.name = "transformer";
    w.family = ModelFamily::kTransformer;
    if (!f.hidden) return Invalid("hidden: required with --model transformer");
    if (!f.layers) return Invalid("layers: required with --model transformer");
    if (!f.heads) return Invalid("heads: required with --model transformer");
    w.transformer.decoder = f.decoder;
    if (f.decoder) {
      w.transformer.max_positions = 1024;
      w.optimizer = Optimizer::kAdam;
    }
  } else {
    ASSIGN_OR_RETURN(Workload preset, WorkloadPreset(key));
    w = preset;
  }
  return w;
}

// The layout flags of `f` on `w`: the batch, the replicas and the pipeline.
// What the run does not give comes from `published`, where there is one, and
// is added to `taken`.
absl::Status ApplyLayoutFlags(const PredictFlags& f,
                              const std::optional<PublishedConfig>& published, Workload* workload,
                              std::vector<std::string>* taken) {
  Workload& w = *workload;
  if (f.micro_batch) {
    ASSIGN_U32(w.micro_batch, "micro_batch", *f.micro_batch);
  } else if (published) {
    w.micro_batch = published->micro_batch;
    taken->push_back(absl::StrCat("micro-batch ", w.micro_batch));
  }
  ASSIGN_U32(w.grad_accum, "grad_accum", f.grad_accum);
  ASSIGN_U32(w.device_iterations, "device_iterations", f.device_iterations);
  ASSIGN_U32(w.replicas, "replicas", f.replicas);
  if (f.ipus_per_replica) {
    ASSIGN_U32(w.ipus_per_replica, "ipus_per_replica", *f.ipus_per_replica);
  } else if (published) {
    w.ipus_per_replica = published->ipus_per_replica;
    taken->push_back(
        absl::StrCat(w.ipus_per_replica, " IPU", w.ipus_per_replica == 1 ? "" : "s", " a replica"));
  }
  if (!f.layers_per_ipu.empty()) {
    ASSIGN_OR_RETURN(LayerList list, ParseLayerList(f.layers_per_ipu));
    w.layers_per_ipu = list.units;
    w.half_layer_units = list.halves;
    if (list.halves && w.family != ModelFamily::kTransformer) {
      return Invalid("layers_per_ipu: half layers apply to transformer models only");
    }
  } else if (published && !f.ipus_per_replica && !published->layers_per_ipu.empty()) {
    w.layers_per_ipu = published->layers_per_ipu;
    taken->push_back(absl::StrCat("layers per IPU ", absl::StrJoin(w.layers_per_ipu, ",")));
  }
  w.packing = f.packing;
  return absl::OkStatus();
}

// The training option flags of `f` on `w`: the optimizer, its state, RTS and
// recomputation. What the run does not give comes from `published`, where
// there is one, and is added to `taken`.
absl::Status ApplyTrainingFlags(const PredictFlags& f,
                                const std::optional<PublishedConfig>& published, Workload* workload,
                                std::vector<std::string>* taken) {
  Workload& w = *workload;
  if (f.optimizer) {
    ASSIGN_OR_RETURN(Optimizer opt, ParseOptimizer(*f.optimizer));
    w.optimizer = opt;
  } else if (published) {
    w.optimizer = published->optimizer;
    taken->push_back(std::string(OptimizerName(w.optimizer)));
  }
  if (f.offchip && f.onchip) {
    return Invalid(
        "optimizer_state: --offchip-optimizer-state and --onchip-optimizer-state are exclusive");
  }
  if (f.offchip || f.onchip) {
    w.optimizer_state_offchip = f.offchip;
  } else if (published) {
    w.optimizer_state_offchip = published->optimizer_state_offchip;
    taken->push_back(w.optimizer_state_offchip ? "state off chip" : "state on chip");
  }
  if (f.state_precision) {
    ASSIGN_OR_RETURN(StatePrecision precision, ParseStatePrecision(*f.state_precision));
    w.optimizer_state_precision = precision;
  } else if (published) {
    w.optimizer_state_precision = published->optimizer_state_precision;
    taken->push_back(
        absl::StrCat("state in ", std::string(StatePrecisionName(w.optimizer_state_precision))));
  }
  if (f.rts && f.no_rts) return Invalid("rts: --rts and --no-rts are exclusive");
  if (f.rts || f.no_rts) {
    w.replicated_tensor_sharding = f.rts;
  } else if (published) {
    w.replicated_tensor_sharding = published->replicated_tensor_sharding;
    taken->push_back(w.replicated_tensor_sharding ? "RTS" : "no RTS");
  }
  if (f.recompute && f.no_recompute) {
    return Invalid("recompute: --recompute and --no-recompute are exclusive");
  }
  if (f.recompute || f.no_recompute) {
    w.recompute = f.recompute;
  } else if (published) {
    w.recompute = published->recompute;
    taken->push_back(w.recompute ? "recompute" : "no recompute");
  }
  if (f.stage_inputs_only) {
    if (!w.recompute) {
      return Invalid("checkpoint_stage_inputs_only: applies with recomputation only");
    }
    w.checkpoint_every_layer = false;
  }
  return absl::OkStatus();
}

// What the prediction assumed for `w`: the published configuration's
// settings in `taken`, or the model's own defaults when it has none; empty
// when the run gave everything.
std::string AssumedText(const Workload& w, const std::optional<PublishedConfig>& published,
                        const std::vector<std::string>& taken) {
  if (!published) {
    return absl::StrCat("no published configuration for ", w.name, ": the model's own defaults (",
                        TrainingOptionsText(w), ")");
  }
  if (taken.empty()) return "";
  return absl::StrCat("Graphcore's `", published->name, "` (", published->source,
                      ") for what the run did not give: ", absl::StrJoin(taken, ", "));
}

// The host flags of `f` on `w`: the loader's rate, the framework, the time
// of a host call and the input streams.
absl::Status ApplyHostFlags(const PredictFlags& f, Workload* workload) {
  Workload& w = *workload;
  w.host_loader_samples_per_s = f.host_loader_rate;
  if (f.framework) {
    ASSIGN_OR_RETURN(Framework framework, ParseFramework(*f.framework));
    w.framework = framework;
  }
  if (!(f.host_call_ms >= 0) || !std::isfinite(f.host_call_ms)) {
    return Invalid(
        absl::StrCat("host_call_ms: must be a finite number >= 0, got ", f.host_call_ms));
  }
  w.host_call_s = f.host_call_ms * 1e-3;
  w.replicated_input_streams = !f.broadcast_inputs;
  return absl::OkStatus();
}

// The workload `f` describes. `assumed`, when not null, receives what was
// taken from the model's published configuration because the run did not
// give it, or says that the model has none.
absl::StatusOr<Workload> BuildWorkload(const PredictFlags& f, std::string* assumed) {
  const std::string key = absl::AsciiStrToLower(f.model);
  const bool custom = key == "transformer";
  ASSIGN_OR_RETURN(Workload w, BaseWorkload(f, key, custom));
  RETURN_IF_ERROR(ApplyShapeFlags(f, &w));
  // What the run does not give comes from the model's published
  // configuration, where there is one; `assumed` lists it.
  const std::optional<PublishedConfig> published = custom ? std::nullopt : PublishedConfigFor(key);
  std::vector<std::string> taken;
  RETURN_IF_ERROR(ApplyLayoutFlags(f, published, &w, &taken));
  RETURN_IF_ERROR(ApplyTrainingFlags(f, published, &w, &taken));
  if (assumed != nullptr) *assumed = AssumedText(w, published, taken);
  RETURN_IF_ERROR(ApplyHostFlags(f, &w));
  return w;
}

int Fail(std::ostream& err, const absl::Status& status) {
  err << "ipu-model: " << status.message() << "\n";
  return kExitUsage;
}

// The wrap links of a torus ILD close the collective rings only with
// RINGSWNC, which needs whole torus ILDs (fabric::PartitionLinks gives a
// partition its wrap links on the same rule). Another routing named here
// therefore times the ILDs as a mesh. Returns the routing's table name, or
// "default" when none was named.
absl::StatusOr<std::string> ApplyRouting(const std::optional<std::string>& name,
                                         SystemSpec* system) {
  if (!name) return std::string("default");
  absl::StatusOr<fabric::RoutingType> routing = fabric::ParseRoutingType(*name);
  if (!routing.ok()) return Invalid(absl::StrCat("routing: ", routing.status().message()));
  if (*routing == fabric::RoutingType::kRingSwnc) {
    if (system->topology != fabric::IldTopology::kTorus) {
      return Invalid(absl::StrCat("routing: RINGSWNC uses the wrap links of a torus ILD; ",
                                  system->name, " has mesh ILDs"));
    }
  } else {
    system->topology = fabric::IldTopology::kMesh;
  }
  return TableName(*routing);
}

bool WrapLinksUsed(const SystemSpec& system, const StepPrediction& p) {
  return system.topology == fabric::IldTopology::kTorus && p.ipus_used >= system.ipus_per_ild;
}

// The GW-Links between the ILDs a partition spans come with the pod's
// cabling: a ring of racks (looped) or switches (switched). Their sync
// reach is what differs.
std::string GwLinksText(const SystemSpec& system, const StepPrediction& p) {
  const bool switched = system.cluster_topology == fabric::ClusterTopology::kSwitched;
  return absl::StrFormat(
      "gw links       %s: a sync of the %u ILDs takes %.1f us %s, and every step of the "
      "cross-ILD ring waits for one\n",
      switched ? "switched" : "looped", p.ilds_spanned,
      1e6 * CrossIldSyncSeconds(p.ilds_spanned, system),
      switched ? "through the switch" : "around the ring of racks");
}

std::string RoutingText(const std::string& routing, const SystemSpec& system,
                        const StepPrediction& p) {
  std::string name = routing;
  if (routing == "default") {
    name = WrapLinksUsed(system, p) ? "RINGSWNC (the default on whole torus ILDs)"
                                    : "default (no wrap links below a whole torus ILD)";
  }
  return absl::StrCat(
      "\nrouting        ", name, ": wrap links ", WrapLinksUsed(system, p) ? "used" : "not used",
      "; DNC, SWNC and BTNC differ only in that (through-routing and the barley twist are not "
      "modelled)\n",
      p.ilds_spanned > 1 ? GwLinksText(system, p) : "",
      "sync type      not modelled: every sync type gives the same step time\n");
}

int RunPredict(const PredictFlags& f, std::ostream& out, std::ostream& err) {
  absl::StatusOr<SystemSpec> system = SystemSpecForPreset(f.system);
  if (!system.ok()) {
    return Fail(err, Invalid(absl::StrCat("system: unknown system \"", f.system, "\"; known: ",
                                          absl::StrJoin(fabric::PodPresetNames(), ", "))));
  }
  std::string assumed;
  absl::StatusOr<Workload> workload = BuildWorkload(f, &assumed);
  if (!workload.ok()) return Fail(err, workload.status());
  absl::StatusOr<std::string> routing = ApplyRouting(f.routing, &*system);
  if (!routing.ok()) return Fail(err, routing.status());
  if (f.repeat < 0) return Fail(err, Invalid(absl::StrCat("repeat: must be >= 0, got ", f.repeat)));
  absl::StatusOr<StepPrediction> prediction = PredictStep(*workload, *system);
  if (!prediction.ok()) return Fail(err, prediction.status());
  // A step time for a layout that cannot be loaded would be no answer.
  const MemoryEstimate memory = EstimateMemory(*workload, *system, *prediction);
  if (absl::Status fits = CheckMemoryFits(memory); !fits.ok()) return Fail(err, fits);

  double mean_us = 0;
  if (f.repeat > 0) {
    const auto start = std::chrono::steady_clock::now();
    double sink = 0;
    for (int64_t i = 0; i < f.repeat; ++i) {
      absl::StatusOr<StepPrediction> again = PredictStep(*workload, *system);
      if (again.ok()) sink += again->step_time_s;
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    mean_us = elapsed.count() / f.repeat * 1e6;
    if (sink < 0) return kExitFailure;  // keeps the loop from being optimised away
  }
  if (f.json) {
    std::string json = PredictionJson(*workload, *system, *prediction);
    if (f.repeat > 0) {
      json.pop_back();
      absl::StrAppend(&json, ",\"repeat\":", f.repeat, ",\"mean_prediction_time_us\":", mean_us,
                      "}");
    }
    json.pop_back();
    absl::StrAppend(&json, ",\"routing\":\"", *routing,
                    "\",\"wrap_links\":", WrapLinksUsed(*system, *prediction) ? "true" : "false",
                    ",\"sync_type\":\"not modelled\",\"assumed\":\"", assumed,
                    "\",\"memory\":", MemoryJson(memory), "}");
    out << json << "\n";
  } else {
    out << PredictionText(*workload, *system, *prediction);
    if (!assumed.empty()) out << "assumed        " << assumed << "\n";
    out << RoutingText(*routing, *system, *prediction);
    out << "\n" << MemoryText(memory);
    if (f.repeat > 0) {
      out << "\nprediction time: " << mean_us << " us mean over " << f.repeat << " runs\n";
    }
  }
  return kExitOk;
}

std::string Percent(double v) { return absl::StrFormat("%+.1f%%", 100 * v); }

// `ipu-model validate --json`: the rows, the cross-ILD calibration and the
// two summaries as one JSON object.
std::string ValidationJson(const std::vector<ValidationRow>& rows, const CrossIldFit& fit,
                           const ValidationSummary& all, const ValidationSummary& paced) {
  std::string j = "{\"rows\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const ValidationRow& r = rows[i];
    absl::StrAppendFormat(
        &j,
        "%s{\"role\":\"%s\",\"name\":\"%s\",\"system\":\"%s\",\"source\":\"%s\","
        "\"configuration\":\"%s\",\"options\":\"%s\",\"calibrates\":\"%s\","
        "\"published\":%.9g,\"predicted\":%.9g,\"error\":%.9g,"
        "\"host_input_unpublished\":%s,\"memory\":{\"fits\":%s,\"fullest_ipu\":%u,"
        "\"needed_bytes\":%.9g,\"capacity_bytes\":%.9g}}",
        i ? "," : "", r.result.calibration ? "calibration" : "validation", r.result.name,
        r.result.system, r.result.source, r.result.configuration,
        TrainingOptionsText(r.result.workload), r.result.calibrates, r.result.published,
        r.predicted, r.error, r.result.host_input_unpublished ? "true" : "false",
        r.fits ? "true" : "false", r.fullest_ipu, r.fullest_bytes, r.capacity_bytes);
  }
  absl::StrAppendFormat(&j,
                        "],\"cross_ild_calibration\":{\"run\":\"%s\",\"solved_bps\":%.9g,"
                        "\"used_bps\":%.9g,\"line_payload_bps\":%.9g,\"share_of_line\":%.9g,"
                        "\"plausible\":%s",
                        fit.run, fit.solved_bps, fit.used_bps, fit.line_payload_bps,
                        fit.share_of_line, fit.plausible ? "true" : "false");
  absl::StrAppendFormat(&j,
                        "},\"validation\":{\"rows\":%u,\"median_abs_error\":%.9g,"
                        "\"worst_abs_error\":%.9g},\"validation_host_input_known\":{"
                        "\"rows\":%u,\"median_abs_error\":%.9g,\"worst_abs_error\":%.9g}}",
                        static_cast<unsigned>(all.rows), all.median_abs_error, all.worst_abs_error,
                        static_cast<unsigned>(paced.rows), paced.median_abs_error,
                        paced.worst_abs_error);
  return j;
}

// `ipu-model validate`'s table: each row with its source, options and memory,
// then the cross-ILD calibration and the two summaries.
void PrintValidationText(const std::vector<ValidationRow>& rows, const CrossIldFit& fit,
                         const ValidationSummary& all, const ValidationSummary& paced,
                         std::ostream& out) {
  out << absl::StrFormat("%-11s %-72s %-10s %11s %11s %8s\n", "role", "run", "system", "published",
                         "predicted", "error");
  for (const ValidationRow& r : rows) {
    out << absl::StrFormat("%-11s %-72s %-10s %11.1f %11.1f %8s%s\n",
                           r.result.calibration ? "calibration" : "validation", r.result.name,
                           r.result.system, r.result.published, r.predicted, Percent(r.error),
                           r.result.host_input_unpublished ? " *" : "");
    out << absl::StrFormat("%-11s   %s; source: %s\n", "", r.result.configuration, r.result.source);
    out << absl::StrFormat("%-11s   options: %s%s\n", "", TrainingOptionsText(r.result.workload),
                           r.result.calibration ? "; calibrates " + r.result.calibrates : "");
    out << absl::StrFormat(
        "%-11s   memory: IPU %u, the fullest, needs at least %.1f of %.1f MB%s\n", "",
        r.fullest_ipu, r.fullest_bytes / 1e6, r.capacity_bytes / 1e6,
        r.fits ? "" : ": DOES NOT FIT");
  }
  out << absl::StrFormat(
      "\ncalibration across ILDs: %s\n"
      "  calibrates     the gateway's effective GW-Link throughput a machine, for the GW-Link "
      "phase of a three-phase collective; not the host calls or the cross-ILD syncs, which keep "
      "the NCCL network step\n"
      "  solved         %.3f GB/s a machine per direction; used %.2f GB/s\n"
      "  GW-Link line   2 x 100 GbE a machine, %.2f GB/s of RoCEv2 payload per direction\n"
      "  check          used is %.1f%% of the line payload rate: %s\n",
      fit.run, fit.solved_bps / 1e9, fit.used_bps / 1e9, fit.line_payload_bps / 1e9,
      100 * fit.share_of_line,
      fit.plausible ? "physically possible (below the line rate); the gateway's forwarding, "
                      "not the links, sets the pace"
                    : "NOT physically possible (above the line rate)");
  out << "\n* paced by the host's real-data loader, whose rate the source does not give: the "
         "prediction is the chip-bound rate\n";
  out << absl::StrFormat("validation rows: %u, median |error| %.1f%%, worst %.1f%% (%s)\n",
                         all.rows, 100 * all.median_abs_error, 100 * all.worst_abs_error,
                         all.worst);
  out << absl::StrFormat("without the * rows: %u, median |error| %.1f%%, worst %.1f%% (%s)\n",
                         paced.rows, 100 * paced.median_abs_error, 100 * paced.worst_abs_error,
                         paced.worst);
}

// `ipu-model validate`: every published result, its source, the model's
// prediction and the error; the calibration rows first and marked.
int RunValidate(bool json, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::vector<ValidationRow>> rows = RunValidation();
  if (!rows.ok()) {
    err << "ipu-model: " << rows.status().message() << "\n";
    return kExitFailure;
  }
  const ValidationSummary all = SummariseValidation(*rows, true);
  const ValidationSummary paced = SummariseValidation(*rows, false);
  absl::StatusOr<CrossIldFit> fit = SolveCrossIldThroughput();
  if (!fit.ok()) {
    err << "ipu-model: " << fit.status().message() << "\n";
    return kExitFailure;
  }
  if (json) {
    out << ValidationJson(*rows, *fit, all, paced) << "\n";
    return kExitOk;
  }
  PrintValidationText(*rows, *fit, all, paced, out);
  return kExitOk;
}

// `predict`'s options of the model, its shape and the system it runs on.
void AddModelOptions(CLI::App* app, PredictFlags* f) {
  app->add_option("--model", f->model,
                  "bert-base, bert-large, gpt2-small, gpt2-medium, resnet50, resnet101, "
                  "resnet152, or transformer (with --hidden --layers --heads)")
      ->required();
  app->add_option("--system", f->system,
                  "pod4, pod16, pod64, pod128, pod256 or their bow- variants")
      ->required();
  app->add_option(
      "--routing", f->routing,
      "dnc, swnc, btnc or ringswnc (default: what the server gives a partition: RINGSWNC on "
      "whole torus ILDs)");
  app->add_option("--hidden", f->hidden, "transformer hidden size");
  app->add_option("--layers", f->layers, "transformer layers");
  app->add_option("--heads", f->heads, "attention heads");
  app->add_option("--ffn", f->ffn,
                  "feed-forward width (default 4 x hidden, as BERT and GPT-2 have)");
  app->add_option("--vocab", f->vocab,
                  "vocabulary size (default the preset's: 30522, BERT's WordPiece vocabulary)");
  app->add_option("--masked-tokens", f->masked_tokens,
                  "MLM predictions per sequence (default 20, the published BERT "
                  "configurations' mask_tokens at sequence length 128)");
  app->add_flag("--decoder", f->decoder, "causal decoder (GPT-style LM head)");
  app->add_option("--image-size", f->image_size, "convnet input size (default 224, ImageNet's)");
  app->add_option("--classes", f->classes, "convnet classes (default 1000, ImageNet's)");
  app->add_option("--seq-len", f->seq_len,
                  "sequence length (default 128, the published BERT configurations' phase 1)");
}

// `predict`'s options of the training run: batch, replicas, pipeline,
// optimizer and recomputation.
void AddTrainingOptions(CLI::App* app, PredictFlags* f) {
  app->add_option("--micro-batch", f->micro_batch,
                  "samples per micro-batch (default: the model's published configuration, "
                  "else 1)");
  app->add_option("--grad-accum", f->grad_accum,
                  "gradient accumulation (default 1: a scale choice, not a model property)");
  app->add_option("--device-iterations", f->device_iterations,
                  "iterations per host call (default 1, the published BERT configurations')");
  app->add_option("--replicas", f->replicas,
                  "data-parallel replicas (default 1: a scale choice, not a model property)");
  app->add_option("--ipus-per-replica", f->ipus_per_replica,
                  "pipeline stages (default: the published configuration's, 4 for BERT and 1 "
                  "for ResNet-50, else 1)");
  app->add_option("--layers-per-ipu", f->layers_per_ipu,
                  "comma list of layers (blocks) per IPU; halves (3.5) place attention and FFN "
                  "apart (default: the published split when --ipus-per-replica is not given, "
                  "else balanced by time)");
  app->add_option("--packing", f->packing,
                  "average sequences per sample (default 1: unpacked data)");
  app->add_option("--optimizer", f->optimizer,
                  "sgd, sgd-momentum, adam or lamb (default: the published configuration's, "
                  "LAMB for BERT and momentum for ResNet-50; else lamb, adam for decoders, "
                  "momentum for convnets)");
  app->add_flag("--offchip-optimizer-state", f->offchip,
                "keep optimizer state in Streaming Memory (the default where the published "
                "configuration does, BERT's)");
  app->add_flag("--onchip-optimizer-state", f->onchip,
                "keep optimizer state in In-Processor Memory (the default for ResNet-50 and "
                "models with no published configuration)");
  app->add_option("--optimizer-state-precision", f->state_precision,
                  "fp32, fp16-first-moment or fp16 (default fp32, as every published "
                  "configuration here keeps it; MLPerf BERT used fp16)");
  app->add_flag("--rts", f->rts,
                "replicated tensor sharding of optimizer state (the default where the "
                "published configuration does, BERT's)");
  app->add_flag("--no-rts", f->no_rts,
                "no replicated tensor sharding (the default for ResNet-50 and models with no "
                "published configuration)");
  app->add_flag("--recompute", f->recompute,
                "recompute activations per layer (default for transformers and for the "
                "published ResNet-50 configuration, which recomputes from checkpoints)");
  app->add_flag("--checkpoint-stage-inputs-only", f->stage_inputs_only,
                "with recomputation, stash only each pipeline stage's input (PopART's "
                "pipeline recomputation, the MLPerf BERT runs'); default off: every layer's "
                "input, as the published PyTorch configurations checkpoint every layer");
  app->add_flag("--no-recompute", f->no_recompute,
                "keep all activations (default for convnets with no published configuration)");
}

// `predict`'s options of the host's share of a step, and of the output.
void AddHostOptions(CLI::App* app, PredictFlags* f) {
  app->add_option(
      "--host-loader-rate", f->host_loader_rate,
      "samples/s the host data pipeline delivers (default 0, not limiting: generated or "
      "cached data; no source gives a loader's rate)");
  app->add_option(
      "--framework", f->framework,
      "tf1, tf2, poptorch or popart: what the host does per call (default poptorch, the "
      "framework of the published BERT and ResNet-50 configurations)");
  app->add_option(
      "--host-call-ms", f->host_call_ms,
      "framework time per host call besides its round trips, ms (default 0: no published "
      "figure gives it)");
  app->add_flag("--broadcast-inputs", f->broadcast_inputs,
                "one input stream per machine, broadcast to its replicas (default off: Poplar's "
                "replicated streams, one per replica)");
  app->add_flag("--json", f->json, "print JSON");
  app->add_option("--repeat", f->repeat, "time N predictions and print the mean");
}

}  // namespace

int RunIpuModel(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"ipu-model: offline step-time predictor for IPU pods", "ipu-model"};
  app.require_subcommand(1);
  PredictFlags f;
  CLI::App* predict = app.add_subcommand("predict", "Predict the time of one training step");
  AddModelOptions(predict, &f);
  AddTrainingOptions(predict, &f);
  AddHostOptions(predict, &f);
  bool validate_json = false;
  CLI::App* validate =
      app.add_subcommand("validate", "Predict every published result and print the error of each");
  validate->add_flag("--json", validate_json, "print JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << (app.got_subcommand(predict)    ? predict->help()
            : app.got_subcommand(validate) ? validate->help()
                                           : app.help());
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    for (char& c : message) {
      if (c == '\n') c = ' ';
    }
    err << "ipu-model: " << message << "\n";
    return kExitUsage;
  }
  if (app.got_subcommand(validate)) return RunValidate(validate_json, out, err);
  return RunPredict(f, out, err);
}

}  // namespace vipu::model
