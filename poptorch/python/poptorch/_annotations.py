"""PopTorch's model annotations and IPU operations, run on the CPU.

None of these changes the maths: blocks and stages decide on which IPU of a
replica a layer would run (and so how many IPUs a replica takes, which the
wrapper reads while tracing the model), memory and overlap settings shape
Poplar's plan, checkpoints shape recomputation. Operations with a result
compute it with PyTorch (serializedMatMul is a matmul, for_loop a Python
loop, CPU runs on the host as everything does). ipu_print_tensor prints the
tensor (and its gradient) each time the model runs, as on an IPU, but not
while the wrapper traces the model.

`tracing()` is the wrapper's hook: while it is active on a thread, the blocks
opened are recorded and isRunningOnIpu() is True.
"""
import contextlib
import threading

import torch

from . import enums
from ._errors import createPoptorchError

__all__ = [
    "Block", "BeginBlock", "BlockFunction", "removeBlocks", "LegacyBeginBlockFn", "ipu_print_tensor",
    "for_loop", "cond", "nop", "dynamic_slice", "dynamic_update", "recomputationCheckpoint",
    "serializedMatMul", "set_available_memory", "set_overlap_for_input", "set_overlap_for_output",
    "MultiConv", "CPU", "NameScope", "Attribute", "isRunningOnIpu"
]

_state = threading.local()


class _Trace:
    """What one traced forward pass opened."""

    def __init__(self, printing):
        self.blocks = []  # (user_id, ipu_id) in order
        self.printing = printing
        self.next_auto_id = 0


@contextlib.contextmanager
def tracing(record=True):
    """Marks this thread as running a wrapped model; with record, the
    blocks it opens are recorded (and ipu_print_tensor stays silent)."""
    previous = getattr(_state, "trace", None)
    trace = _Trace(printing=not record)
    _state.trace = trace
    try:
        yield trace
    finally:
        _state.trace = previous


def _current():
    return getattr(_state, "trace", None)


def isRunningOnIpu():
    """True while a wrapped model runs (PopTorch: while it runs on IPUs)."""
    return _current() is not None


def _open_block(user_id, ipu_id):
    trace = _current()
    if trace is None:
        return
    if user_id is None:
        user_id = str(trace.next_auto_id)
        trace.next_auto_id += 1
    trace.blocks.append((user_id, ipu_id))


def _check_id(name, value, expected_type):
    if value is not None and not isinstance(value, expected_type) and \
            not (isinstance(value, int) and value >= 0):
        raise ValueError(f"{name} must be either a positive integer or a {expected_type.__name__}")


class Block(torch.nn.Module):
    """`with poptorch.Block("name", ipu_id=1):` puts the layers called inside
    on an IPU of the replica (and in a stage)."""

    @staticmethod
    def useAutoId():
        trace = _current()
        if trace is not None:
            trace.next_auto_id = 0

    @staticmethod
    def start(user_id=None, ipu_id=None):
        _open_block(user_id, ipu_id)

    def __init__(self, user_id=None, ipu_id=None):
        super().__init__()
        _check_id("user_id", user_id, str)
        _check_id("ipu_id", ipu_id, int)
        self._user_id = user_id
        self._ipu_id = ipu_id

    def __enter__(self):
        _open_block(self._user_id, self._ipu_id)
        return self

    def __exit__(self, exc_type, value, traceback):
        return False


class _BlockHook:
    def __init__(self, user_id, ipu_id):
        self._user_id = user_id
        self._ipu_id = ipu_id

    def __call__(self, module, inputs):
        _open_block(self._user_id, self._ipu_id)

    def __repr__(self):
        return f"BeginBlock(user_id={self._user_id}, ipu_id={self._ipu_id})"


class LegacyBeginBlockFn(torch.nn.Module):
    """BeginBlock of a plain function (older programs)."""

    def __init__(self, layer_to_call, user_id=None, ipu_id=None):
        super().__init__()
        self._layer_to_call = layer_to_call
        self._user_id = user_id
        self._ipu_id = ipu_id

    def __call__(self, *args, **kwargs):
        _open_block(self._user_id, self._ipu_id)
        return self._layer_to_call(*args, **kwargs)


def BeginBlock(layer_to_call, user_id=None, ipu_id=None):
    """Starts a block at this module (a forward pre-hook); returns it."""
    if not isinstance(layer_to_call, torch.nn.Module):
        if callable(layer_to_call):
            return LegacyBeginBlockFn(layer_to_call, user_id, ipu_id)
        raise createPoptorchError("module is not an instance of torch.nn.Module or function.")
    if any(isinstance(h, _BlockHook) for h in layer_to_call._forward_pre_hooks.values()):
        raise createPoptorchError("module has already been assigned to a block.")
    layer_to_call.register_forward_pre_hook(_BlockHook(user_id, ipu_id))
    return layer_to_call


def BlockFunction(user_id=None, ipu_id=None):
    """Decorator: the function's layers are in this block."""
    def decorator(func):
        def wrapper(*args, **kwargs):
            with Block(user_id, ipu_id):
                return func(*args, **kwargs)
        wrapper.__name__ = getattr(func, "__name__", "block_function")
        wrapper.__doc__ = getattr(func, "__doc__", None)
        return wrapper
    return decorator


def removeBlocks(module):
    """Removes the BeginBlock annotations of a module and its children."""
    if not isinstance(module, torch.nn.Module):
        raise TypeError("removeBlocks takes a torch.nn.Module")
    for m in module.modules():
        for key in [k for k, h in m._forward_pre_hooks.items() if isinstance(h, _BlockHook)]:
            del m._forward_pre_hooks[key]


def _require_tensor(what, tensor):
    if not isinstance(tensor, torch.Tensor):
        raise createPoptorchError(f"{what} must take a torch.tensor argument. {type(tensor)} is not supported.")


def ipu_print_tensor(tensor, title="", print_gradient=True, summarise_threshold=1000, edge_items=3,
                     max_line_width=80, digits=4, float_format="auto", separator=", ",
                     open_bracket="(", close_bracket=")"):
    """Prints the tensor each time the model runs (and, in training, its
    gradient under "<title>_gradient") and returns it."""
    _require_tensor("ipu print tensor", tensor)
    if float_format not in ("auto", "fixed", "scientific", "none"):
        raise ValueError(f"float_format must be auto, fixed, scientific or none, not {float_format}")
    trace = _current()
    if trace is not None and not trace.printing:
        return tensor

    def show(t, name):
        saved = torch._tensor_str.PRINT_OPTS
        options = dict(precision=saved.precision, threshold=saved.threshold, edgeitems=saved.edgeitems,
                       linewidth=saved.linewidth, sci_mode=saved.sci_mode)
        try:
            torch.set_printoptions(precision=digits or 4, threshold=summarise_threshold or float("inf"),
                                   edgeitems=edge_items, linewidth=max_line_width or 1 << 30,
                                   sci_mode={"fixed": False, "scientific": True}.get(float_format))
            body = str(t.detach()).replace("tensor(", open_bracket, 1)
            if body.endswith(")"):
                body = body[:-1] + close_bracket
        finally:
            torch.set_printoptions(**options)
        print(f"{name}: {body}" if name else body, flush=True)

    show(tensor, title)
    if print_gradient and tensor.requires_grad and torch.is_grad_enabled():
        out = tensor.view_as(tensor)
        out.register_hook(lambda g: show(g, f"{title}_gradient"))
        return out
    return tensor


def for_loop(count, body, inputs):
    """Runs body `count` times, each time on the previous outputs."""
    if not isinstance(inputs, list):
        raise ValueError("poptorch.for_loop expects input tensors (inputs) to be a list of tensors. "
                         "(Object is not list)")
    for index, tensor in enumerate(inputs):
        if not isinstance(tensor, torch.Tensor):
            raise ValueError("poptorch.for_loop expects input tensors (inputs) to be a list of tensors. "
                             f"(Object contained in list at index {index} is not torch.tensor)")
    outputs = [t.clone() for t in inputs]
    for _ in range(count):
        result = body(*outputs)
        outputs = list(result) if isinstance(result, (list, tuple)) else [result]
    return outputs


def cond(condition, then_body, then_inps, else_body, else_inps):
    """Runs then_body or else_body on the host, as PopTorch does off the IPU."""
    if not isinstance(then_inps, list) or not isinstance(else_inps, list):
        raise ValueError("poptorch.cond expects then_inps and else_inps tensors to be a list of tensors. "
                         "(Object is not list)")
    result = then_body(*then_inps) if bool(condition) else else_body(*else_inps)
    return [result] if isinstance(result, torch.Tensor) else list(result)


def nop(tensor):
    """Identity."""
    _require_tensor("nop", tensor)
    return tensor


def dynamic_slice(tensor, dim, start, size, step):
    """tensor[start : start + size : step] along dim, start a tensor."""
    _require_tensor("dynamic_slice", tensor)
    if not isinstance(dim, int):
        raise createPoptorchError("Dimension must be an integer.")
    if not isinstance(start, torch.Tensor):
        raise createPoptorchError("Slice start argument to dynamic_slice must be a torch.tensor. "
                                  f"{type(start)} is not supported.")
    if not isinstance(size, int):
        raise createPoptorchError("Size must be an integer.")
    if not isinstance(step, int):
        raise createPoptorchError("Step must be an integer.")
    first = int(start)
    index = torch.arange(first, first + size, step, device=tensor.device)
    return tensor.index_select(dim, index)


def dynamic_update(input, src, dim, start, size):  # noqa: A002 (PopTorch's name)
    """A copy of input with src written at [start : start + size] along dim."""
    _require_tensor("dynamic_update", input)
    if not isinstance(dim, int):
        raise createPoptorchError("Dimension must be an integer.")
    if not isinstance(start, torch.Tensor):
        raise createPoptorchError("Slice start argument to dynamic_update must be a torch.tensor. "
                                  f"{type(start)} is not supported.")
    if not isinstance(src, torch.Tensor):
        raise createPoptorchError(f"Src argument to dynamic_update must be a torch.tensor. {type(src)} "
                                  "is not supported.")
    if not isinstance(size, int):
        raise createPoptorchError("Size must be an integer.")
    if input.dim() != src.dim():
        raise createPoptorchError(f"input and src tensors must have same dimensionality. "
                                  f"({input.dim()}) vs ({src.dim()})")
    if input.dtype != src.dtype:
        raise createPoptorchError(f"input and src tensor must have same dtype. ({input.dtype} vs {src.dtype})")
    out = input.clone()
    out.narrow(dim, int(start), size).copy_(src)
    return out


def recomputationCheckpoint(*tensors):
    """Returns its tensors (one, a tuple, or the list/tuple given)."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        return type(tensors[0])(recomputationCheckpoint(*tensors[0]))
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise ValueError("All inputs must be tensors")
    return tensors[0] if len(tensors) == 1 else tuple(tensors)


def serializedMatMul(lhs, rhs, mode, factor=0, keep_precision=False):
    """lhs @ rhs (the serialisation only changes the IPU's memory plan)."""
    if not isinstance(mode, enums.MatMulSerializationMode):
        raise TypeError("mode must be a poptorch.MatMulSerializationMode")
    if not isinstance(factor, int) or not isinstance(keep_precision, bool):
        raise TypeError("factor must be an int and keep_precision a bool")
    return torch.matmul(lhs, rhs)


def set_available_memory(tensor, available_memory_proportion):
    """Returns the tensor."""
    if not isinstance(tensor, torch.Tensor):
        raise createPoptorchError("You may only set available memory for torch.tensor values. "
                                  f"{type(tensor)} is not supported.")
    return tensor


def _overlap(what, tensors, mode):
    if not isinstance(mode, enums.OverlapMode):
        raise TypeError("mode must be a poptorch.OverlapMode")

    def check(t):
        if isinstance(t, torch.Tensor):
            return
        if isinstance(t, (list, tuple)):
            for x in t:
                check(x)
        elif isinstance(t, dict):
            for x in t.values():
                check(x)
        else:
            raise createPoptorchError(f"You may only set overlap for torch.tensor {what}. "
                                      f"{type(t)} is not supported.")
    check(tensors)
    return tensors


def set_overlap_for_input(input_tensors, mode):
    return _overlap("inputs", input_tensors, mode)


def set_overlap_for_output(output_tensors, mode):
    return _overlap("outputs", output_tensors, mode)


class MultiConv:
    """Context manager grouping convolutions; its settings are recorded."""

    def __init__(self):
        self._available_memory_proportions = None
        self._partials_types = None
        self._plan_type = None
        self._per_conv_reserved_tiles = None
        self._cycle_back_off = None
        self._enable_conv_ditherings = None

    def availableMemoryProportions(self, value):
        self._available_memory_proportions = value
        return self

    def partialsTypes(self, value):
        allowed = (torch.float, torch.float32, torch.half, torch.float16)
        values = value if isinstance(value, (list, tuple)) else [value]
        if any(v not in allowed for v in values):
            raise ValueError("Invalid partials types. Expecting torch.float or torch.half")
        self._partials_types = value
        return self

    def enableConvDithering(self, value):
        values = value if isinstance(value, (list, tuple)) else [value]
        if value is not None and any(not isinstance(v, bool) for v in values):
            raise ValueError("value must be bool or list of bools")
        self._enable_conv_ditherings = value
        return self

    def planType(self, value):
        if value is not None and not isinstance(value, enums.MultiConvPlanType):
            raise ValueError("Invalid plan type!")
        self._plan_type = value
        return self

    def perConvReservedTiles(self, value):
        self._per_conv_reserved_tiles = int(value)
        return self

    def cycleBackOff(self, value):
        self._cycle_back_off = float(value)
        return self

    def __enter__(self):
        return self

    def __exit__(self, exc_type, value, traceback):
        return False


class CPU:
    """Runs layer_to_call on the host (here, as everything else)."""

    def __init__(self, layer_to_call, ID):  # noqa: N803 (PopTorch's name)
        self._layer_to_call = layer_to_call
        if isinstance(layer_to_call, torch.nn.Module):
            layer_to_call.requires_grad_(False)
        self._ID = ID

    def __call__(self, *args, **kwargs):
        return self._layer_to_call(*args, **kwargs)


class NameScope:
    """Names the operators inside (for PopART's IR); no effect here."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError("Parameter to NameScope must be a string")
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, exc_type, value, traceback):
        return False


class Attribute:
    """Context manager setting PopART attributes on the ops inside; no effect."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs

    def __enter__(self):
        return self

    def __exit__(self, exc_type, value, traceback):
        return False


def _register_torch_ops():
    """torch.ops.poptorch.push_name_scope/pop_name_scope, which some
    applications call directly, as operators that do nothing."""
    try:
        library = torch.library.Library("poptorch", "DEF")
        library.define("push_name_scope(str name) -> ()")
        library.define("pop_name_scope() -> ()")
        library.impl("push_name_scope", lambda name: None, "CompositeImplicitAutograd")
        library.impl("pop_name_scope", lambda: None, "CompositeImplicitAutograd")
        return library
    except (AttributeError, RuntimeError):
        # An older torch, or the namespace is taken (Graphcore's PopTorch
        # loaded in the same process): leave torch.ops alone.
        return None


_torch_ops_library = _register_torch_ops()
