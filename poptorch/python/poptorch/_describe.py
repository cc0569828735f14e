"""The description of a wrapped model that the pod models each step from.

Computed once, from the forward pass the wrapper traces when it compiles
(forward hooks on the leaf modules), and sent unchanged with every run:

    name                  the model's class name
    params                trainable parameters (requires_grad)
    gemms                 [[m, k, n, count], ...] per micro-batch: every
                          nn.Linear (m = rows, k = in, n = out features) and
                          convolution, lowered to a GEMM (m = batch × output
                          positions, k = in_channels/groups × kernel size,
                          n = out_channels; transposed: m = batch × input
                          positions, k = in_channels, n = out_channels/groups
                          × kernel size); count = calls with that shape
    elementwise_bytes     4 × the elements output by the other leaf modules,
                          per micro-batch (activations, roughly)
    ops                   calls of those other leaf modules
    input_bytes_per_sample bytes of one sample of every input, as sent
    micro_batch, grad_accum, device_iterations, replicas (this process's),
    total_replicas        replicas of every process (poprun instance)
                          together, whose gradients are reduced each step,
    ipus_per_replica      from the blocks/stages (or popdist's
                          ipus_per_replica), at least 1
    optimizer             "sgd" | "sgd-momentum" | "adam" | "lamb" (RMSprop
                          keeps one state like momentum: "sgd-momentum";
                          inference sends "sgd", with training false)
    training              bool
and, which the pod may ignore:
    optimizer_state_offchip, replicated_tensor_sharding   from
                          TensorLocations.setOptimizerLocation
    optimizer_state_precision "fp32" | "fp16-first-moment" | "fp16"
    recompute             _Popart autoRecomputation set
    framework             "poptorch"

Operations called as functions (torch.matmul, F.linear on a parameter) are
not seen; the description is a rough shape of the work, not a profile.
"""
import math

import torch

__all__ = ["Probe", "describe"]

_CONV = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)
_CONV_T = (torch.nn.ConvTranspose1d, torch.nn.ConvTranspose2d, torch.nn.ConvTranspose3d)


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


class Probe:
    """Forward hooks on the leaf modules during the traced forward pass."""

    def __init__(self, model):
        self.gemms = {}
        self.elementwise_elements = 0
        self.ops = 0
        self._handles = [m.register_forward_hook(self._hook) for m in model.modules()
                         if not any(True for _ in m.children())]

    def _gemm(self, shape):
        self.gemms[shape] = self.gemms.get(shape, 0) + 1

    def _hook(self, module, inputs, output):
        if isinstance(module, torch.nn.Linear) and isinstance(output, torch.Tensor):
            self._gemm((output.numel() // max(module.out_features, 1), module.in_features, module.out_features))
        elif isinstance(module, _CONV) and isinstance(output, torch.Tensor) and output.dim() >= 3:
            positions = output.numel() // (output.shape[0] * output.shape[1]) if output.shape[1] else 0
            kernel = math.prod(module.kernel_size)
            self._gemm((output.shape[0] * positions, module.in_channels // module.groups * kernel,
                        module.out_channels))
        elif isinstance(module, _CONV_T) and inputs and isinstance(inputs[0], torch.Tensor) and inputs[0].dim() >= 3:
            x = inputs[0]
            positions = x.numel() // (x.shape[0] * x.shape[1]) if x.shape[1] else 0
            kernel = math.prod(module.kernel_size)
            self._gemm((x.shape[0] * positions, module.in_channels, module.out_channels // module.groups * kernel))
        else:
            self.ops += 1
            self.elementwise_elements += sum(t.numel() for t in _tensors(output))

    def remove(self):
        for handle in self._handles:
            handle.remove()
        self._handles = []


def _optimizer_name(optimizer, training):
    from . import optim  # noqa: WPS433 (optim imports torch only; avoids a cycle at import)
    if not training or optimizer is None:
        return "sgd"
    if isinstance(optimizer, optim.LAMB):
        return "lamb"
    if isinstance(optimizer, (torch.optim.Adam, torch.optim.AdamW)):
        return "adam"
    if isinstance(optimizer, torch.optim.RMSprop):
        return "sgd-momentum"
    if any(group.get("momentum", 0) for group in optimizer.param_groups):
        return "sgd-momentum"
    return "sgd"


def _state_precision(optimizer):
    first = getattr(optimizer, "first_order_momentum_accum_type", None) or \
        getattr(optimizer, "velocity_accum_type", None)
    second = getattr(optimizer, "second_order_momentum_accum_type", None)
    if first == torch.float16 and second in (torch.float16, None):
        return "fp16"
    if first == torch.float16:
        return "fp16-first-moment"
    return "fp32"


def describe(model, probe, *, options, optimizer, training, micro_batch, input_bytes_per_sample,
             ipus_per_replica):
    """The workload dict (see the module comment)."""
    location = options.TensorLocations.toDict().get("location_optimizer", {})
    return {
        "name": type(model).__name__,
        "params": int(sum(p.numel() for p in model.parameters() if p.requires_grad)),
        "gemms": [[m, k, n, count] for (m, k, n), count in sorted(probe.gemms.items())],
        "elementwise_bytes": float(4 * probe.elementwise_elements),
        "ops": int(probe.ops),
        "input_bytes_per_sample": float(input_bytes_per_sample),
        "micro_batch": int(micro_batch),
        "grad_accum": int(options.Training.gradient_accumulation),
        "device_iterations": int(options.device_iterations),
        "replicas": int(options.replication_factor),
        "total_replicas": int(options.replication_factor * options.Distributed.numProcesses),
        "ipus_per_replica": int(ipus_per_replica),
        "optimizer": _optimizer_name(optimizer, training),
        "training": bool(training),
        "optimizer_state_offchip": location.get("onChip", 1) == 0,
        "replicated_tensor_sharding": location.get("useReplicatedTensorSharding", 0) == 1,
        "optimizer_state_precision": _state_precision(optimizer) if training else "fp32",
        "recompute": bool(options._Popart.options.get("autoRecomputation", 0)),
        "framework": "poptorch",
    }
