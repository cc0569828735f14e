"""Finding a training model's final loss, as PopTorch does.

PopTorch turns every PyTorch loss function and every identity_loss into a
loss node of the graph; a loss whose value flows into another loss is part
of that one; exactly one independent loss must remain, and backpropagation
starts there. It need not be an output of the model. A model with no loss
node is refused ("Couldn't find a loss in graph!"), and so is one with two
independent ones ("Multiple independent losses found in graph").

How we see the loss nodes: while a training model runs, the functions of
torch.nn.functional whose results are losses (cross_entropy, mse_loss, ...,
which torch.nn's loss modules call) and identity_loss record the tensors
they return, on this thread. "Flows into" is read from the autograd graph:
loss A is part of loss B when A's grad_fn is reachable from B's. The
wrapper finds the final loss once, while tracing, and afterwards takes the
loss recorded at the same position.

Limit: a loss function imported by name (`from torch.nn.functional import
mse_loss`) before poptorch was imported is not seen; wrap its result in
poptorch.identity_loss(loss, reduction="none").
"""
import contextlib
import functools
import threading

import torch
import torch.nn.functional as F

from ._errors import Error

__all__ = ["identity_loss"]

# torch.nn.functional's losses (those PopTorch lowers to loss nodes).
_LOSS_FUNCTIONS = (
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "cross_entropy",
    "ctc_loss", "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss",
    "margin_ranking_loss", "mse_loss", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "nll_loss", "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss",
)

NO_LOSS = ("Couldn't find a loss in graph! A trainingModel needs one final loss: compute it with a "
           "torch.nn loss (torch.nn.functional.*_loss, cross_entropy, ...) or mark it with "
           "poptorch.identity_loss(x, reduction=...).")
MULTIPLE_LOSSES = ("Multiple independent losses found in graph. Graph must have one final loss. "
                   "Wrap final graph loss in poptorch.identity_loss.")

_state = threading.local()
_patch_lock = threading.Lock()
_originals = {}
_active = 0


class _Recorder:
    def __init__(self):
        self.losses = []

    def add(self, value):
        if isinstance(value, torch.Tensor) and not any(value is t for t in self.losses):
            self.losses.append(value)


def _record(value):
    recorder = getattr(_state, "recorder", None)
    # A loss computed with gradients off (a metric under torch.no_grad())
    # cannot start backpropagation: it is not a loss node of ours.
    if recorder is not None and torch.is_grad_enabled():
        recorder.add(value)


def _wrap(function):
    @functools.wraps(function)
    def loss_function(*args, **kwargs):
        out = function(*args, **kwargs)
        _record(out)
        return out
    return loss_function


def _patch():
    """Wraps torch.nn.functional's losses while some thread runs a
    training model, and only then: TorchScript, for one, cannot compile
    the wrappers."""
    global _active
    with _patch_lock:
        if _active == 0:
            for name in _LOSS_FUNCTIONS:
                function = getattr(F, name, None)
                if function is not None:
                    _originals[name] = function
                    setattr(F, name, _wrap(function))
        _active += 1


def _unpatch():
    global _active
    with _patch_lock:
        _active -= 1
        if _active == 0:
            for name, function in _originals.items():
                setattr(F, name, function)
            _originals.clear()


@contextlib.contextmanager
def recording():
    """Records the losses computed on this thread; yields the recorder."""
    previous = getattr(_state, "recorder", None)
    recorder = _Recorder()
    _state.recorder = recorder
    _patch()
    try:
        yield recorder
    finally:
        _unpatch()
        _state.recorder = previous


def identity_loss(x, reduction):
    """Marks x as a loss: returns its sum ("sum"), mean ("mean") or x itself
    ("none"); backpropagation starts from the final such loss (for "none",
    with a gradient of ones)."""
    if not isinstance(x, torch.Tensor):
        raise Error(f"identity_loss takes a torch.Tensor, not {type(x)}")
    if reduction == "sum":
        out = x.sum()
    elif reduction == "mean":
        out = x.mean()
    elif reduction == "none":
        # A view, so that the marked loss is a node of its own in the graph.
        out = x.view_as(x)
    else:
        raise Error(f'Unsupported reduction type! identity_loss takes "sum", "mean" or "none", not {reduction!r}')
    _record(out)
    return out


def _reachable(start):
    """grad_fn nodes reachable from `start` (not counting start itself)."""
    seen = set()
    stack = [n for n, _ in start.next_functions if n is not None]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return seen


def final_loss_index(losses):
    """The position of the one independent loss among the recorded ones;
    Error when there is none or more than one."""
    if not losses:
        raise Error(NO_LOSS)
    if len(losses) == 1:
        return 0
    used = set()
    for j, loss in enumerate(losses):
        if loss.grad_fn is None:
            continue
        below = _reachable(loss.grad_fn)
        for i, other in enumerate(losses):
            if i != j and other.grad_fn is not None and other.grad_fn in below:
                used.add(i)
    independent = [i for i in range(len(losses)) if i not in used]
    if len(independent) != 1:
        raise Error(MULTIPLE_LOSSES)
    return independent[0]


def backward(loss):
    """Backpropagates from the final loss (a gradient of ones for a loss
    that is not a scalar)."""
    if not loss.requires_grad:
        raise Error("The final loss does not depend on any parameter that requires a gradient, "
                    "so a trainingModel has nothing to train.")
    if loss.dim() == 0:
        loss.backward()
    else:
        loss.backward(torch.ones_like(loss))
