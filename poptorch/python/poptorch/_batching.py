"""How one call's inputs become micro-batches and how the micro-batches'
outputs become the call's outputs, as PopTorch lays them out.

Inputs. Every tensor's first dimension must divide by
    device_iterations × (local replicas ÷ input group size) × accumulation;
the quotient is the micro-batch. The tensor is read as
    [device iterations, accumulation, input groups, micro-batch, ...]
and replica r takes its group's slice (group r // size with Consecutive
grouping, r % groups with Orthogonal; one replica per group by default).
A 0-dimensional tensor is only accepted when that product is 1. Double
and bfloat16 inputs become float32, and long inputs are cut to int32's
range (the IPU has no 64-bit integers; the model still sees a long tensor,
so that PyTorch's CPU kernels accept it).

Outputs. Micro-batch s = d × accumulation + g of replica r is the
(s × replicas + r)-th one run. Each output's first dimension is multiplied by
    All: replicas × device iterations × accumulation (every micro-batch),
    EveryN(N): that ÷ N (micro-batches s with (s + 1) % N == 0),
    Final: replicas (the last micro-batch of each replica),
    Sum: replicas (each replica's sum over its micro-batches),
in that order; a scalar output becomes shape [k] only when k > 1. Long
outputs come back int32, double outputs float32. A value that is not a
tensor is returned as the last micro-batch made it.
"""
import inspect
from collections import namedtuple

import torch

from . import enums
from ._errors import Error

__all__ = ["flatten", "rebuild", "MicroBatches", "combine_outputs", "InputSignature", "output_factor"]

_Spec = namedtuple("_Spec", "kind children meta")

RECOMPILE_HINT = ("\nThis error occurred because the inputs passed at runtime don't match the inputs used to "
                  "compile the model.\nTo recompile the model for the new inputs create a new inferenceModel / "
                  "trainingModel wrapper or call destroy() on the current one and try again.")


def flatten(obj, leaves):
    """Appends obj's tensors to leaves; returns the structure to rebuild it."""
    if isinstance(obj, torch.Tensor):
        leaves.append(obj)
        return _Spec("tensor", None, None)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return _Spec("namedtuple", [flatten(x, leaves) for x in obj], type(obj))
    if isinstance(obj, (tuple, list)):
        return _Spec(type(obj).__name__ if type(obj) in (tuple, list) else "sequence",
                     [flatten(x, leaves) for x in obj], type(obj))
    if isinstance(obj, dict):
        keys = list(obj.keys())
        return _Spec("dict", [flatten(obj[k], leaves) for k in keys], (type(obj), keys))
    return _Spec("value", None, obj)


def rebuild(spec, values):
    """The structure of spec filled with the tensors of the iterator values."""
    if spec.kind == "tensor":
        return next(values)
    if spec.kind == "value":
        return spec.meta
    if spec.kind == "namedtuple":
        return spec.meta(*[rebuild(c, values) for c in spec.children])
    if spec.kind in ("tuple", "list", "sequence"):
        items = [rebuild(c, values) for c in spec.children]
        return items if spec.kind == "list" else spec.meta(items)
    cls, keys = spec.meta
    items = [(k, rebuild(c, values)) for k, c in zip(keys, spec.children)]
    try:
        return cls(items)
    except TypeError:
        return dict(items)


def host_input(tensor):
    """The tensor as the IPU receives it (see the module comment)."""
    if tensor.requires_grad:
        tensor = tensor.detach()
    if tensor.dtype in (torch.float64, torch.bfloat16):
        return tensor.float()
    if tensor.dtype == torch.int64:
        return tensor.to(torch.int32).to(torch.int64)
    return tensor


def host_output(tensor):
    tensor = tensor.detach()
    if tensor.dtype == torch.int64:
        return tensor.to(torch.int32)
    if tensor.dtype == torch.float64:
        return tensor.float()
    return tensor


class MicroBatches:
    """One call's inputs cut into micro-batches (views, no copies)."""

    def __init__(self, options, leaves):
        self.device_iterations = options.device_iterations
        self.accumulation = options.Training.gradient_accumulation
        self.replicas = options.replication_factor
        self.group_size = options.input_group_size
        self.groups = self.replicas // self.group_size
        self.orthogonal = options.input_cgt == enums.CommGroupType.Orthogonal
        extra = self.device_iterations * self.groups * self.accumulation
        self.micro_batch = None
        self._views = []
        for tensor in leaves:
            tensor = host_input(tensor)
            size = tensor.shape[0] if tensor.dim() else 1
            if size % extra != 0:
                raise Error(
                    f"Invalid batch dimension: In the input {tensor.shape}, the batch dimension ({size}) must be "
                    f"a multiple of Options.deviceIterations({self.device_iterations}) * "
                    f"(Options.replicationFactor({self.replicas}) / "
                    f"Options.inputReplicaGrouping.input_group_size({self.group_size})) * "
                    f"Options.Training.gradientAccumulation({self.accumulation}) = {extra} because it is used to "
                    "calculate the batch size which will be executed on the device in any given iteration. For a "
                    "full explanation see the batching semantics page of the documentation.")
            if tensor.dim() == 0:
                self._views.append((False, tensor))
                continue
            micro = size // extra
            if self.micro_batch is None:
                self.micro_batch = micro
            shape = (self.device_iterations, self.accumulation, self.groups, micro) + tuple(tensor.shape[1:])
            self._views.append((True, tensor.reshape(shape)))
        if self.micro_batch is None:
            self.micro_batch = 1

    def group_of(self, replica):
        if self.orthogonal:
            return replica % self.groups
        return replica // self.group_size

    def get(self, iteration, step, replica):
        """The leaves of one micro-batch."""
        group = self.group_of(replica)
        return [view[iteration, step, group] if batched else view for batched, view in self._views]

    def micro_leaves(self):
        return [view[0, 0, 0] if batched else view for batched, view in self._views]


def output_factor(mode, period, replicas, steps):
    """How many times an output's first dimension is multiplied (steps:
    device iterations × accumulation)."""
    if mode == enums.OutputMode.All:
        return replicas * steps
    if mode == enums.OutputMode.EveryN:
        return replicas * steps // period
    return replicas


def combine_outputs(per_micro, spec, mode, period, replicas, steps):
    """The call's outputs from the micro-batches' (each a list of leaves,
    in run order)."""
    if spec is None:
        return None
    factor = output_factor(mode, period, replicas, steps)
    if mode == enums.OutputMode.All:
        chosen = [list(range(s * replicas, (s + 1) * replicas)) for s in range(steps)]
    elif mode == enums.OutputMode.EveryN:
        chosen = [list(range(s * replicas, (s + 1) * replicas)) for s in range(steps) if (s + 1) % period == 0]
    else:
        chosen = [list(range((steps - 1) * replicas, steps * replicas))]
    combined = []
    for leaf in range(len(per_micro[-1])):
        if mode == enums.OutputMode.Sum:
            parts = []
            for r in range(replicas):
                total = per_micro[r][leaf]
                for s in range(1, steps):
                    total = total + per_micro[s * replicas + r][leaf]
                parts.append(total)
        else:
            parts = [per_micro[i][leaf] for group in chosen for i in group]
        if factor > 1:
            value = torch.cat([p.reshape(1) if p.dim() == 0 else p for p in parts])
        else:
            value = parts[0]
        combined.append(host_output(value))
    return rebuild(spec, iter(combined))


def _argument_names(model):
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


class InputSignature:
    """The inputs a model was compiled with; later calls must match them
    (PopTorch compiles for fixed shapes and types)."""

    def __init__(self, model, args, kwargs):
        self._names = _argument_names(model)
        self._args = [_meta(a) for a in args]
        self._kwargs = {k: _meta(v) for k, v in kwargs.items()}

    def _name(self, index):
        return self._names[index] if index < len(self._names) else f"input {index}"

    def check(self, args, kwargs):
        if len(args) != len(self._args):
            raise Error(f"Number of positional arguments mismatch: expected {len(self._args)} arguments "
                        f"but got {len(args)}.{RECOMPILE_HINT}")
        for index, (compiled, given) in enumerate(zip(self._args, args)):
            _compare(self._name(index), compiled, given)
        expected, provided = set(self._kwargs), set(kwargs)
        if expected != provided:
            details = []
            if provided - expected:
                details.append("Unexpected arguments: " + ", ".join(sorted(provided - expected)))
            if expected - provided:
                details.append("Missing arguments: " + ", ".join(sorted(expected - provided)))
            raise Error(f"Keys mismatch for named arguments: {'. '.join(details)}.{RECOMPILE_HINT}")
        for key in self._kwargs:
            _compare(key, self._kwargs[key], kwargs[key])


class _TensorMeta:
    """What a compiled input tensor fixed: its shape and type."""

    def __init__(self, tensor):
        self.shape = tensor.shape
        self.dtype = tensor.dtype


def _meta(value):
    """value with its tensors replaced by their _TensorMeta (so that the
    signature does not keep the first batch alive)."""
    if isinstance(value, torch.Tensor):
        return _TensorMeta(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*[_meta(v) for v in value])
    if isinstance(value, (tuple, list)):
        return type(value)(_meta(v) for v in value)
    if isinstance(value, dict):
        items = [(k, _meta(v)) for k, v in value.items()]
        try:
            return type(value)(items)
        except TypeError:
            return dict(items)
    return value


def _compare(name, compiled, given):
    if isinstance(compiled, _TensorMeta):
        if not isinstance(given, torch.Tensor):
            raise Error(f"Type mismatch for {name}: expected {torch.Tensor} but got {type(given)}.{RECOMPILE_HINT}")
        if compiled.dtype != given.dtype:
            raise Error(f"Data type mismatch for {name}: expected {compiled.dtype} but got {given.dtype}."
                        f"{RECOMPILE_HINT}")
        if compiled.shape != given.shape:
            raise Error(f"Shape mismatch for {name}: expected {compiled.shape} but got {given.shape}.{RECOMPILE_HINT}")
        return
    if type(compiled) != type(given):  # noqa: E721 (exact types, as PopTorch compares)
        raise Error(f"Type mismatch for {name}: expected {type(compiled)} but got {type(given)}.{RECOMPILE_HINT}")
    if isinstance(compiled, (tuple, list)):
        if len(compiled) != len(given):
            raise Error(f"Length mismatch for {name}: expected {len(compiled)} elements but got {len(given)}."
                        f"{RECOMPILE_HINT}")
        for i, (c, g) in enumerate(zip(compiled, given)):
            _compare(f"{name}[{i}]", c, g)
    elif isinstance(compiled, dict):
        if set(compiled) != set(given):
            raise Error(f"Keys mismatch for {name}: expected {sorted(compiled)} but got {sorted(given)}."
                        f"{RECOMPILE_HINT}")
        for k in compiled:
            _compare(f"{name}[{k}]", compiled[k], given[k])
    elif compiled is not None and not _equal(compiled, given):
        raise Error(f"Value mismatch for {name}: expected {compiled} but got {given}.{RECOMPILE_HINT}")


def _equal(a, b):
    try:
        return bool(a == b)
    except (TypeError, ValueError, RuntimeError):
        return a is b
