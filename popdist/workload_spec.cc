// ToWorkloadSpec: a model workload as the vipuagent.WorkloadSpec a machine runs, every field set.
#include "popdist/workload_spec.h"

#include "absl/strings/str_cat.h"

namespace vipu::popdist::ipuof {
namespace {

bool SameShape(const model::Workload& a, const model::Workload& b) {
  if (a.family != b.family) return false;
  if (a.family == model::ModelFamily::kConvNet) {
    return a.convnet.depth == b.convnet.depth && a.convnet.image_size == b.convnet.image_size &&
           a.convnet.classes == b.convnet.classes;
  }
  const model::TransformerShape& x = a.transformer;
  const model::TransformerShape& y = b.transformer;
  return x.hidden == y.hidden && x.layers == y.layers && x.heads == y.heads && x.ffn == y.ffn &&
         x.vocab == y.vocab && x.max_positions == y.max_positions && x.decoder == y.decoder &&
         x.masked_tokens == y.masked_tokens;
}

}  // namespace

absl::StatusOr<vipuagent::WorkloadSpec> ToWorkloadSpec(const model::Workload& w) {
  absl::StatusOr<model::Workload> preset = model::WorkloadPreset(w.name);
  if (!preset.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.name: the wire names presets only; ", preset.status().message()));
  }
  if (!SameShape(w, *preset)) {
    return absl::InvalidArgumentError(
        absl::StrCat("workload.name: the network shape differs from the ", w.name,
                     " preset; the wire carries preset shapes only"));
  }
  vipuagent::WorkloadSpec spec;
  spec.set_model(preset->name);
  spec.set_micro_batch(w.micro_batch);
  spec.set_grad_accum(w.grad_accum);
  spec.set_device_iterations(w.device_iterations);
  spec.set_replicas(w.replicas);
  spec.set_ipus_per_replica(w.ipus_per_replica);
  spec.set_seq_len(w.seq_len);
  for (uint32_t l : w.layers_per_ipu) spec.add_layers_per_ipu(l);
  spec.set_optimizer(std::string(model::OptimizerName(w.optimizer)));
  spec.set_optimizer_state_offchip(w.optimizer_state_offchip);
  spec.set_replicated_tensor_sharding(w.replicated_tensor_sharding);
  spec.set_recompute(w.recompute);
  spec.set_packing(w.packing);
  spec.set_host_loader_samples_per_s(w.host_loader_samples_per_s);
  return spec;
}

}  // namespace vipu::popdist::ipuof
