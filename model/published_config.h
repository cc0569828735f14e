// Graphcore's published training configuration of a preset model: the
// layout, micro-batch and memory and optimizer options its own
// configuration file gives. `ipu-model predict` takes from it every such
// option a run does not give, and says so. Plain data; thread-safe.
#ifndef VIPU_MODEL_PUBLISHED_CONFIG_H_
#define VIPU_MODEL_PUBLISHED_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/workload.h"

namespace vipu::model {

struct PublishedConfig {
  std::string name;    // the configuration's own name, e.g. "pretrain_large_128"
  std::string source;  // the file it is published in
  uint32_t micro_batch = 1;
  uint32_t ipus_per_replica = 1;
  std::vector<uint32_t> layers_per_ipu;  // empty: none published
  Optimizer optimizer = Optimizer::kLamb;
  bool optimizer_state_offchip = false;
  StatePrecision optimizer_state_precision = StatePrecision::kFp32;
  bool replicated_tensor_sharding = false;
  bool recompute = true;
};

// The configuration published for `preset` (a WorkloadPreset name), or
// nullopt when Graphcore published none for it here (gpt2-*, resnet101,
// resnet152, a custom transformer).
std::optional<PublishedConfig> PublishedConfigFor(std::string_view preset);

}  // namespace vipu::model

#endif  // VIPU_MODEL_PUBLISHED_CONFIG_H_
