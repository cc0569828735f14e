"""poptorch.optim: PopTorch's optimizers, subclasses of torch.optim's, taking
PopTorch's extra arguments.

The update is PyTorch's own (the IPU's optimizers are documented to match
it), applied once per weight update to the reduced gradient. What the extra
arguments do here:
- loss_scaling: nothing. On an IPU the loss is multiplied by it and the
  gradients divided by it again; in FP32 that is the identity, so it is
  recorded only (and passed to the pod, which knows the cost).
- max_grad_norm (SGD, Adam, AdamW): the gradients of all parameters are
  clipped to this global norm (torch.nn.utils.clip_grad_norm_) before the
  update, as PopART's clipping does. Default: no clipping.
- bias_correction=False (AdamW, LAMB): the moments are not bias-corrected.
- use_tf_variant=True (RMSprop): TensorFlow's variant (square average
  starting at one, eps inside the root, learning rate inside the momentum).
- accum_type, first/second_order_momentum_accum_type, velocity_accum_type,
  velocity_scaling, use_combined_accum: the IPU's storage formats; checked
  and recorded, the CPU keeps FP32 (passed to the pod as the state's
  precision).
- LAMB: implemented here (PyTorch has none), as in "Large Batch Optimization
  for Deep Learning" (You et al.), with the trust ratio's weight norm
  clamped to max_weight_norm.

variable_attrs (VariableAttributes) tracks which attributes the program set
(variable) or left at their defaults (constant), as PopTorch does.
"""
import inspect
import math

import torch

__all__ = ["VariableAttributes", "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "LAMB"]

_ACCUM_TYPES = (torch.float16, torch.float32)
_ACCUM_ERROR = "Accumulation types must be either torch.float32 or torch.float16"


class VariableAttributes:
    """Which optimizer attributes are variable (set by the program, may
    change with setOptimizer) and which constant."""

    def __init__(self, variable_attributes, allowed_attributes):
        self._variable_attributes = list(variable_attributes)
        self._allowed_attributes = list(allowed_attributes)

    def isConstant(self, attr):
        return attr not in self._variable_attributes

    def markAsConstant(self, attr):
        self._check(attr)
        self._variable_attributes = [a for a in self._variable_attributes if a != attr]

    def markAsVariable(self, attr):
        self._check(attr)
        self._variable_attributes.append(attr)

    def _check(self, attr):
        if attr not in self._allowed_attributes:
            raise ValueError(f"Unknown attribute {attr}, allowed values: {self._allowed_attributes}")


class Optimizer:
    """What every PopTorch optimizer adds to its torch.optim parent."""

    loss_scaling = 1.0
    max_grad_norm = float("inf")


def _parent_kwargs(parent, given):
    """The arguments the program set that this PyTorch's parent accepts.
    An argument PopTorch's newer PyTorch knows but ours does not is dropped
    when it is false/None, refused otherwise."""
    accepted = inspect.signature(parent.__init__).parameters
    out = {}
    for name, value in given.items():
        if value is None:
            continue
        if name in accepted:
            out[name] = value
        elif value:
            raise TypeError(f"{parent.__name__}: argument {name}={value!r} is not supported by PyTorch "
                            f"{torch.__version__}")
    return out


def _set_moment_types(optimizer, accum_type, first_order, second_order):
    """The accumulator and the two moments' types of Adam, AdamW, RMSprop
    and LAMB (float32 unless given), checked."""
    optimizer.accum_type = accum_type or torch.float32
    optimizer.first_order_momentum_accum_type = first_order or torch.float32
    optimizer.second_order_momentum_accum_type = second_order or torch.float32
    _check_types(optimizer.accum_type, optimizer.first_order_momentum_accum_type,
                 optimizer.second_order_momentum_accum_type)


def _check_types(*types):
    for t in types:
        if t not in _ACCUM_TYPES:
            raise ValueError(_ACCUM_ERROR)


def _common(self, given, extra_allowed, loss_scaling):
    self.loss_scaling = 1.0 if loss_scaling is None else float(loss_scaling)
    variables = [k for k, v in given.items() if v is not None]
    self.variable_attrs = VariableAttributes(variables, list(self.defaults) + extra_allowed)


class SGD(Optimizer, torch.optim.SGD):
    """torch.optim.SGD with PopTorch's arguments."""

    def __init__(self, params, lr, momentum=None, dampening=None, weight_decay=None, nesterov=None,
                 maximize=None, foreach=None, differentiable=None, loss_scaling=None, velocity_scaling=None,
                 use_combined_accum=None, accum_type=None, velocity_accum_type=None, max_grad_norm=None):
        given = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                     maximize=maximize, foreach=foreach, differentiable=differentiable)
        torch.optim.SGD.__init__(self, params, **_parent_kwargs(torch.optim.SGD, given))
        self.use_combined_accum = bool(use_combined_accum)
        self.accum_type = accum_type or torch.float32
        self.velocity_accum_type = velocity_accum_type or torch.float32
        _check_types(self.accum_type, self.velocity_accum_type)
        self.max_grad_norm = float("inf") if max_grad_norm is None else float(max_grad_norm)
        if self.use_combined_accum:
            scaling = 1.0 if velocity_scaling is None else float(velocity_scaling)
            self.defaults["velocity_scaling"] = scaling
            for group in self.param_groups:
                group.setdefault("velocity_scaling", scaling)
        _common(self, dict(given, loss_scaling=loss_scaling, velocity_scaling=velocity_scaling),
                ["loss_scaling"], loss_scaling)


class Adam(Optimizer, torch.optim.Adam):
    """torch.optim.Adam with PopTorch's arguments (amsgrad refused)."""

    def __init__(self, params, lr=None, betas=None, eps=None, weight_decay=None, amsgrad=None, foreach=None,
                 maximize=None, capturable=None, differentiable=None, fused=None, loss_scaling=None,
                 accum_type=None, first_order_momentum_accum_type=None, second_order_momentum_accum_type=None,
                 max_grad_norm=None):
        given = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, foreach=foreach,
                     maximize=maximize, capturable=capturable, differentiable=differentiable, fused=fused)
        torch.optim.Adam.__init__(self, params, **_parent_kwargs(torch.optim.Adam, given))
        _set_moment_types(self, accum_type, first_order_momentum_accum_type, second_order_momentum_accum_type)
        self.max_grad_norm = float("inf") if max_grad_norm is None else float(max_grad_norm)
        _common(self, dict(given, loss_scaling=loss_scaling), ["loss_scaling"], loss_scaling)


class AdamW(Optimizer, torch.optim.AdamW):
    """torch.optim.AdamW with PopTorch's arguments; bias_correction=False
    drops the moments' bias correction."""

    def __init__(self, params, lr=None, betas=None, eps=None, weight_decay=None, amsgrad=None, maximize=None,
                 foreach=None, capturable=None, differentiable=None, fused=None, loss_scaling=None,
                 bias_correction=None, accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None, max_grad_norm=None):
        given = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                     foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused)
        torch.optim.AdamW.__init__(self, params, **_parent_kwargs(torch.optim.AdamW, given))
        self.bias_correction = True if bias_correction is None else bool(bias_correction)
        _set_moment_types(self, accum_type, first_order_momentum_accum_type, second_order_momentum_accum_type)
        self.max_grad_norm = float("inf") if max_grad_norm is None else float(max_grad_norm)
        _common(self, dict(given, loss_scaling=loss_scaling), ["loss_scaling"], loss_scaling)

    @torch.no_grad()
    def step(self, closure=None):
        if self.bias_correction:
            return torch.optim.AdamW.step(self, closure)
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = torch.tensor(0.0)
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                grad = -p.grad if group.get("maximize") else p.grad
                p.mul_(1 - group["lr"] * group["weight_decay"])
                state["exp_avg"].mul_(beta1).add_(grad, alpha=1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                p.addcdiv_(state["exp_avg"], state["exp_avg_sq"].sqrt().add_(group["eps"]), value=-group["lr"])
        return loss


class RMSprop(Optimizer, torch.optim.RMSprop):
    """torch.optim.RMSprop with PopTorch's arguments; use_tf_variant=True
    follows TensorFlow's formula."""

    def __init__(self, params, lr=None, alpha=None, eps=None, weight_decay=None, momentum=None, centered=None,
                 foreach=None, maximize=None, differentiable=None, loss_scaling=None, accum_type=None,
                 first_order_momentum_accum_type=None, second_order_momentum_accum_type=None,
                 use_tf_variant=None):
        given = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered,
                     foreach=foreach, maximize=maximize, differentiable=differentiable)
        torch.optim.RMSprop.__init__(self, params, **_parent_kwargs(torch.optim.RMSprop, given))
        _set_moment_types(self, accum_type, first_order_momentum_accum_type, second_order_momentum_accum_type)
        self.use_tf_variant = bool(use_tf_variant)
        _common(self, dict(given, loss_scaling=loss_scaling), ["loss_scaling"], loss_scaling)

    @torch.no_grad()
    def step(self, closure=None):
        if not self.use_tf_variant:
            return torch.optim.RMSprop.step(self, closure)
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if group["weight_decay"]:
                    grad = grad.add(p, alpha=group["weight_decay"])
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["square_avg"] = torch.ones_like(p)
                    if group["momentum"] > 0:
                        state["momentum_buffer"] = torch.zeros_like(p)
                    if group["centered"]:
                        state["grad_avg"] = torch.zeros_like(p)
                state["step"] += 1
                square_avg = state["square_avg"]
                square_avg.mul_(group["alpha"]).addcmul_(grad, grad, value=1 - group["alpha"])
                if group["centered"]:
                    grad_avg = state["grad_avg"]
                    grad_avg.mul_(group["alpha"]).add_(grad, alpha=1 - group["alpha"])
                    denom = square_avg.addcmul(grad_avg, grad_avg, value=-1).add_(group["eps"]).sqrt_()
                else:
                    denom = square_avg.add(group["eps"]).sqrt_()
                if group["momentum"] > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(group["momentum"]).addcdiv_(grad, denom, value=group["lr"])
                    p.sub_(buf)
                else:
                    p.addcdiv_(grad, denom, value=-group["lr"])
        return loss


class LAMB(Optimizer, torch.optim.Optimizer):
    """Layer-wise Adaptive Moments (LAMB).

    For each parameter w with gradient g, step t:
        m = b1 m + (1 - b1) g,  v = b2 v + (1 - b2) g²
        m̂ = m / (1 - b1^t), v̂ = v / (1 - b2^t)   (bias_correction)
        u = m̂ / (√v̂ + eps) + weight_decay · w
        r = min(‖w‖, max_weight_norm) / ‖u‖  (1 when either norm is 0)
        w = w − lr · r · u
    """

    def __init__(self, params, lr=None, betas=None, eps=None, weight_decay=None, bias_correction=None,
                 loss_scaling=None, max_weight_norm=None, accum_type=None, first_order_momentum_accum_type=None,
                 second_order_momentum_accum_type=None):
        given = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, bias_correction=bias_correction,
                     loss_scaling=loss_scaling, max_weight_norm=max_weight_norm)
        defaults = dict(lr=1e-3 if lr is None else lr,
                        betas=(0.9, 0.999) if betas is None else tuple(betas),
                        eps=1e-8 if eps is None else eps,
                        weight_decay=1e-2 if weight_decay is None else weight_decay,
                        max_weight_norm=65500.0 if max_weight_norm is None else max_weight_norm)
        torch.optim.Optimizer.__init__(self, params, defaults)
        self.bias_correction = True if bias_correction is None else bool(bias_correction)
        self.max_weight_norm = defaults["max_weight_norm"]
        _set_moment_types(self, accum_type, first_order_momentum_accum_type, second_order_momentum_accum_type)
        _common(self, given, ["loss_scaling"], loss_scaling)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            max_norm = group.get("max_weight_norm", self.max_weight_norm)
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                c1 = 1 - beta1 ** state["step"] if self.bias_correction else 1.0
                c2 = 1 - beta2 ** state["step"] if self.bias_correction else 1.0
                update = (m / c1) / (v.sqrt() / math.sqrt(c2) + group["eps"])
                if group["weight_decay"]:
                    update.add_(p, alpha=group["weight_decay"])
                w_norm = p.norm()
                if max_norm is not None:
                    w_norm = w_norm.clamp(max=max_norm)
                u_norm = update.norm()
                trust = 1.0 if w_norm == 0 or u_norm == 0 else float(w_norm / u_norm)
                p.add_(update, alpha=-group["lr"] * trust)
        return loss
