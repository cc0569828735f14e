// Workload presets (BERT, GPT-2, ResNet), pipeline units and optimizer names.
#include "model/workload.h"

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace vipu::model {
namespace {

struct TransformerPreset {
  const char* name;
  uint32_t hidden, layers, heads, vocab, max_positions;
  bool decoder;
};

constexpr TransformerPreset kTransformers[] = {
    {"bert-base", 768, 12, 12, 30522, 512, false},
    {"bert-large", 1024, 24, 16, 30522, 512, false},
    {"gpt2-small", 768, 12, 12, 50257, 1024, true},
    {"gpt2-medium", 1024, 24, 16, 50257, 1024, true},
};

struct ConvPreset {
  const char* name;
  uint32_t depth;
};

constexpr ConvPreset kConvNets[] = {{"resnet50", 50}, {"resnet101", 101}, {"resnet152", 152}};

constexpr const char* kOptimizerNames[] = {"sgd", "sgd-momentum", "adam", "lamb"};
constexpr const char* kFrameworkNames[] = {"tf1", "tf2", "poptorch", "popart"};
constexpr const char* kPrecisionNames[] = {"fp32", "fp16-first-moment", "fp16"};

}  // namespace

std::vector<std::string> WorkloadPresetNames() {
  std::vector<std::string> names;
  for (const auto& p : kTransformers) names.push_back(p.name);
  for (const auto& p : kConvNets) names.push_back(p.name);
  return names;
}

absl::StatusOr<Workload> WorkloadPreset(std::string_view name) {
  const std::string key = absl::AsciiStrToLower(std::string(name));
  for (const auto& p : kTransformers) {
    if (key != p.name) continue;
    Workload w;
    w.name = p.name;
    w.family = ModelFamily::kTransformer;
    w.transformer.hidden = p.hidden;
    w.transformer.layers = p.layers;
    w.transformer.heads = p.heads;
    w.transformer.vocab = p.vocab;
    w.transformer.max_positions = p.max_positions;
    w.transformer.decoder = p.decoder;
    if (p.decoder) w.optimizer = Optimizer::kAdam;
    return w;
  }
  for (const auto& p : kConvNets) {
    if (key != p.name) continue;
    Workload w;
    w.name = p.name;
    w.family = ModelFamily::kConvNet;
    w.convnet.depth = p.depth;
    w.optimizer = Optimizer::kSgdMomentum;
    w.recompute = false;
    return w;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("model: unknown model \"", std::string(name),
                   "\"; known: ", absl::StrJoin(WorkloadPresetNames(), ", "), ", transformer"));
}

uint32_t PipelineUnits(const Workload& workload) {
  if (workload.family == ModelFamily::kLayers) {
    return static_cast<uint32_t>(workload.layers.size());
  }
  if (workload.family == ModelFamily::kTransformer) {
    return workload.transformer.layers * (workload.half_layer_units ? 2 : 1);
  }
  switch (workload.convnet.depth) {
    case 50:
      return 3 + 4 + 6 + 3;
    case 101:
      return 3 + 4 + 23 + 3;
    case 152:
      return 3 + 8 + 36 + 3;
    default:
      return 0;
  }
}

absl::StatusOr<Optimizer> ParseOptimizer(std::string_view name) {
  const std::string key = absl::AsciiStrToLower(std::string(name));
  for (int i = 0; i < 4; ++i) {
    if (key == kOptimizerNames[i]) return static_cast<Optimizer>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("optimizer: must be one of ",
                                                 absl::StrJoin(kOptimizerNames, ", "), ", got \"",
                                                 std::string(name), "\""));
}

std::string_view OptimizerName(Optimizer optimizer) {
  return kOptimizerNames[static_cast<int>(optimizer)];
}

absl::StatusOr<Framework> ParseFramework(std::string_view name) {
  const std::string key = absl::AsciiStrToLower(std::string(name));
  for (int i = 0; i < 4; ++i) {
    if (key == kFrameworkNames[i]) return static_cast<Framework>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("framework: must be one of ",
                                                 absl::StrJoin(kFrameworkNames, ", "), ", got \"",
                                                 std::string(name), "\""));
}

std::string_view FrameworkName(Framework framework) {
  return kFrameworkNames[static_cast<int>(framework)];
}

FrameworkHost HostMechanisms(Framework framework) {
  FrameworkHost h;
  switch (framework) {
    case Framework::kTf1:
    case Framework::kTf2:
      // Infeed and outfeed queues: tf.data prefetches on host threads and
      // the outfeed is dequeued by another thread, so a call is the run's
      // start and end.
      h.round_trips = 2;
      h.loads_between_calls = false;
      break;
    case Framework::kPopTorch:
      // poptorch.DataLoader's default mode (DataLoaderMode.Sync) builds the
      // next batch between calls; each call also reads back its outputs
      // (outputMode Final) and writes the optimizer's parameters.
      h.round_trips = 4;
      h.loads_between_calls = true;
      break;
    case Framework::kPopArt:
      // Session.run: the step's data is pulled through prefetching stream
      // callbacks; the anchors are read back in the call.
      h.round_trips = 3;
      h.loads_between_calls = false;
      break;
  }
  return h;
}

double OptimizerStateBytes(Optimizer optimizer, StatePrecision precision) {
  const double first = precision == StatePrecision::kFp32 ? 4 : 2;
  const double second = precision == StatePrecision::kFp16 ? 2 : 4;
  switch (optimizer) {
    case Optimizer::kSgd:
      return 0;
    case Optimizer::kSgdMomentum:
      return first;
    case Optimizer::kAdam:
    case Optimizer::kLamb:
      return first + second;
  }
  return 0;
}

absl::StatusOr<StatePrecision> ParseStatePrecision(std::string_view name) {
  const std::string key = absl::AsciiStrToLower(std::string(name));
  for (int i = 0; i < 3; ++i) {
    if (key == kPrecisionNames[i]) return static_cast<StatePrecision>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("optimizer_state_precision: must be one of ",
                                                 absl::StrJoin(kPrecisionNames, ", "), ", got \"",
                                                 std::string(name), "\""));
}

std::string_view StatePrecisionName(StatePrecision precision) {
  return kPrecisionNames[static_cast<int>(precision)];
}

std::string TrainingOptionsText(const Workload& w) {
  std::string text(OptimizerName(w.optimizer));
  if (OptimizerStateBytes(w.optimizer) > 0) {
    const absl::string_view where = w.optimizer_state_offchip ? "off chip" : "on chip";
    absl::StrAppend(&text, ", state ", where, " in ",
                    std::string(StatePrecisionName(w.optimizer_state_precision)));
  }
  if (w.replicated_tensor_sharding) absl::StrAppend(&text, ", sharded (RTS)");
  absl::StrAppend(&text, "; ",
                  !w.recompute               ? "no recompute"
                  : w.checkpoint_every_layer ? "recompute from every layer's input"
                                             : "recompute from the stage's input");
  if (w.half_layer_units) absl::StrAppend(&text, "; attention and FFN placed apart");
  return text;
}

}  // namespace vipu::model
