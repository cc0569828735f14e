// The published configurations of BERT-Base, BERT-Large and ResNet-50 that predict defaults to.
#include "model/published_config.h"

#include "absl/strings/ascii.h"

namespace vipu::model {

std::optional<PublishedConfig> PublishedConfigFor(std::string_view preset) {
  const std::string key = absl::AsciiStrToLower(std::string(preset));
  // graphcore/examples nlp/bert/pytorch/configs_pretraining.yml: the
  // defaults block keeps the optimizer state off chip in FP32
  // (enable_half_first_order_momentum False) and recomputes every layer;
  // the pretraining configurations add RTS, 4 IPUs a replica and LAMB.
  const char* kBertSource = "graphcore/examples nlp/bert/pytorch/configs_pretraining.yml";
  if (key == "bert-base") {
    PublishedConfig c;
    c.name = "pretrain_base_128";
    c.source = kBertSource;
    c.micro_batch = 32;
    c.ipus_per_replica = 4;
    c.layers_per_ipu = {0, 4, 4, 4};
    c.optimizer = Optimizer::kLamb;
    c.optimizer_state_offchip = true;
    c.replicated_tensor_sharding = true;
    c.recompute = true;
    return c;
  }
  if (key == "bert-large") {
    PublishedConfig c;
    c.name = "pretrain_large_128";
    c.source = kBertSource;
    c.micro_batch = 8;
    c.ipus_per_replica = 4;
    c.layers_per_ipu = {3, 7, 7, 7};
    c.optimizer = Optimizer::kLamb;
    c.optimizer_state_offchip = true;
    c.replicated_tensor_sharding = true;
    c.recompute = true;
    return c;
  }
  if (key == "resnet50") {
    // graphcore/examples vision/cnns/pytorch/train/configs.yml, `resnet50`:
    // one IPU a replica, SGD with momentum kept on chip, recomputation from
    // checkpoints.
    PublishedConfig c;
    c.name = "resnet50";
    c.source = "graphcore/examples vision/cnns/pytorch/train/configs.yml";
    c.micro_batch = 18;
    c.ipus_per_replica = 1;
    c.optimizer = Optimizer::kSgdMomentum;
    c.optimizer_state_offchip = false;
    c.replicated_tensor_sharding = false;
    c.recompute = true;
    return c;
  }
  return std::nullopt;
}

}  // namespace vipu::model
