"""trainingModel, inferenceModel and the wrapper they return
(PoplarExecutor): running a PyTorch model as PopTorch runs it on IPUs,
with the maths on the CPU.

One call of the wrapper is one run of `device_iterations` steps. For each
step (device iteration) and each micro-batch of it, the micro-batches being
laid out as _batching.py says:

Training
- every (accumulation step, replica) micro-batch runs forward and backward
  on the same weights, the weights of the step;
- the gradients of the step are summed over its micro-batches and replicas
  and, with several processes (poprun instances), over every process's
  (_collectives.py);
- with ReductionType.Mean (the default) the sum is divided by
  accumulation × local replicas × processes (the global replica count);
  with Sum it is not;
- the optimizer's gradient clipping (max_grad_norm) applies, then one
  optimizer step: one weight update per device iteration;
- the loss backpropagated is the model's one final loss (_loss.py).
Inference: every micro-batch runs forward under torch.no_grad().

Like PopTorch:
- wrapping freezes the caller's options and works on a copy; the output mode
  Default becomes Final (training) or All (inference); inference refuses
  gradient accumulation;
- the model is "compiled" on the first call (or compile()): it is traced
  once on the first micro-batch (which finds the loss, the blocks, the work
  for the pod, and fixes the input shapes and the train()/eval() state of
  every module, as a compiled executable does), then the IPUs are attached;
- later calls must pass inputs of the same shapes and types;
- the optimizer's hyperparameters (learning rate, momentum, ...) reach the
  IPUs when the model is wrapped and at each setOptimizer(); changing them on
  the host alone (a scheduler without setOptimizer) does not change the run,
  as on IPUs; a new optimizer of the same kind continues the old one's state;
- long outputs come back int32, double ones float32.

Differs (see docs/pytorch.md): the forward runs in Python for every
micro-batch (PopTorch runs it once, to trace), so Python side effects in
forward happen every time; the parameters' .grad are cleared after each
weight update; an inference model always computes with the host's current
parameters (PopTorch needs copyWeightsToDevice() after host-side changes
other than a training model's).

Any error during a run detaches the device; the next call attaches again.
"""
import collections
import copy
import datetime
import logging
import math
import time
import weakref

import torch

from . import enums, optim
from ._annotations import tracing
from ._batching import InputSignature, MicroBatches, combine_outputs, flatten, host_input, rebuild
from ._buffers import DeviceBuffers
from ._collectives import GradientReducer
from ._describe import Probe, describe
from ._device import Device
from ._errors import NOT_PROVIDED_METHODS, Error, not_provided
from ._logging import logger
from ._loss import backward, final_loss_index, recording
from ._report import RunStats, track
from .options import Options

__all__ = ["PoplarExecutor", "trainingModel", "inferenceModel", "registerPreCompileHook",
           "registerPostCompileHook"]

NO_EXECUTABLE_ERR = "Model has not been compiled or has been destroyed."
# The Mk2 IPU's clock, to turn modelled seconds into cycles (cycleCount).
IPU_CLOCK_HZ = 1.33e9

_SUPPORTED_OPTIMIZERS = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop, optim.LAMB)

# User models wrapped by a live trainingModel (a model is trained by one).
_training_wrappers = weakref.WeakKeyDictionary()


def _check_positive(name, value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise Error(f"{name} must be a positive integer, got {value!r}")


def _check_options(options, training):
    """Refuses contradictory options before anything is frozen."""
    _check_positive("Options.replicationFactor", options.replication_factor)
    _check_positive("Options.deviceIterations", options.device_iterations)
    _check_positive("Options.Training.gradientAccumulation", options.Training.gradient_accumulation)
    processes, pid = options.Distributed.numProcesses, options.Distributed.processId
    _check_positive("Options.Distributed numProcesses", processes)
    if not isinstance(pid, int) or not 0 <= pid < processes:
        raise Error(f"Options.Distributed: process id {pid} is not in 0..{processes - 1}")
    if not training and options.Training.gradient_accumulation != 1:
        message = ("You must set poptorch.Options().Training.gradientAccumulation to 1 or leave it as its default "
                   "value (1) when running a poptorch.inferenceModel().")
        strategy = options._execution_strategy
        if strategy.pipelined:
            message += (" Use poptorch.Options().deviceIterations to process a sufficient number of batches each "
                        "run for pipelined execution instead.")
        raise Error(message)
    if options.output_mode == enums.OutputMode.EveryN:
        steps = options.device_iterations * options.Training.gradient_accumulation
        period = options.output_return_period
        if steps % period != 0:
            raise Error(f"OutputMode.EveryN: the output return period ({period}) must divide the micro-batches of "
                        f"one run, deviceIterations × gradientAccumulation ({steps})")


def _check_optimizer(optimizer):
    if not isinstance(optimizer, _SUPPORTED_OPTIMIZERS):
        raise Error(f"Unsupported optimizer type {type(optimizer).__name__}. Types supported: SGD, Adam, AdamW, "
                    "RMSprop (torch.optim or poptorch.optim), LAMB (poptorch.optim)")
    if any(group.get("amsgrad", False) for group in optimizer.param_groups):
        raise ValueError("Only non-amsgrad Adam/AdamW optimizers are supported.")
    bases = type(optimizer).__bases__
    if torch.optim.Optimizer not in bases and optim.Optimizer not in bases:
        logger.warning("Optimizer `%s` subclassed from classes in poptorch.optim or torch.optim may not behave as "
                       "on IPUs, which run their own optimizers, not the Python code.", type(optimizer).__name__)


def _hyperparameters(optimizer):
    return [{k: copy.deepcopy(v) for k, v in group.items() if k != "params"} for group in optimizer.param_groups]


def _same(a, b):
    try:
        return bool(a == b)
    except (RuntimeError, TypeError, ValueError):
        return a is b


class _Executable:
    """What compiling a wrapped model found; lives until destroy()."""

    def __init__(self, signature, loss_index, loss_count, workload, modes, compile_time):
        self.signature = signature
        self.loss_index = loss_index
        self.loss_count = loss_count
        self.workload = workload
        self.modes = modes
        self.compile_time = compile_time

    def __bool__(self):
        return True


class PoplarExecutor:
    """A model wrapped for the IPUs: call it with a run's inputs."""

    _precompile_hooks = collections.OrderedDict()
    _postcompile_hooks = collections.OrderedDict()

    def __init__(self, model, options, training, optimizer=None, user_model=None):
        if options is not None and not isinstance(options, Options):
            raise Error(f"Invalid type: 'options' is of type {type(options)} (Expected poptorch.Options)")
        base = options if options is not None else Options()
        _check_options(base, training)
        if training:
            optimizer = optimizer if optimizer is not None else optim.SGD(
                (user_model or model).parameters(), lr=0.01)
            _check_optimizer(optimizer)
        elif optimizer is not None:
            raise Error("Optimizer should be None for inference")
        if options is not None:
            # Prevent the caller from changing the options the model runs with.
            options._freeze()
        options = base.clone()
        if options.defaultOutputMode():
            options.outputMode(enums.OutputMode.Final if training else enums.OutputMode.All)

        self._user_model = user_model or model
        self._model = model
        self._training = training
        self._options = options
        self._optimizer = optimizer
        self._optimizer_hyper = _hyperparameters(optimizer) if optimizer is not None else None
        self._hyper_warned = False
        self._executable = None
        self._device = None
        self._buffers = None
        self._reducer = None
        self._stats = RunStats()
        self._options._freeze()
        if training:
            _training_wrappers[self._user_model] = weakref.ref(self)
        track(self)

    # --- attributes --------------------------------------------------------------------------------------------
    def __getattr__(self, attr):
        if attr in NOT_PROVIDED_METHODS:
            raise not_provided(attr, NOT_PROVIDED_METHODS[attr], "PoplarExecutor")
        if attr.startswith("__") or "_user_model" not in self.__dict__:
            raise AttributeError(attr)
        return getattr(self._user_model, attr)

    def __repr__(self):
        return repr(self._user_model)

    @property
    def model(self):
        """The wrapped torch model (its parameters are the ones trained)."""
        return self._user_model

    @property
    def options(self):
        """The options the model runs with (a frozen copy)."""
        return self._options

    # --- compiling and attaching -------------------------------------------------------------------------------
    def compile(self, *args, **kwargs):
        """Traces and compiles the model for these inputs (no run)."""
        if self._executable is not None:
            logger.warning("Call to compile() ignored: the executable is already compiled")
            return
        self._compile(args, kwargs)

    def isCompiled(self):
        return bool(self._executable)

    def _compile(self, args, kwargs):
        start = time.perf_counter()
        for hook in list(PoplarExecutor._precompile_hooks.values()):
            hook()
        leaves = []
        spec = flatten((args, kwargs), leaves)
        batches = MicroBatches(self._options, leaves)
        if any(t.requires_grad for t in leaves):
            logger.warning("Input tensor has requires_grad=True set. This tensor will be detached because "
                           "backward pass via inputs is not supported.")
        micro_args, micro_kwargs = rebuild(spec, iter(batches.micro_leaves()))
        modes = [(m, m.training) for m in self._user_model.modules()]
        loss_index, loss_count, probe, blocks, mutated = self._trace(micro_args, micro_kwargs)
        stages, ipus = self._options._execution_strategy._stages_and_ipus(blocks)
        ipus = max(ipus, self._options._ipus_per_replica_hint or 1)
        self._check_pipeline(stages)
        # Bytes as sent: long inputs travel as int32.
        input_bytes = sum((4 if t.dtype == torch.int64 else host_input(t).element_size()) * t[0].numel()
                          for t in batches.micro_leaves() if t.dim())
        workload = describe(self._user_model, probe, options=self._options, optimizer=self._optimizer,
                            training=self._training, micro_batch=batches.micro_batch,
                            input_bytes_per_sample=input_bytes, ipus_per_replica=ipus)
        device = Device(self._device_ipus(ipus), self._use_ipu_model(), self._options._values.get("ipu_id"))
        processes = self._options.Distributed.numProcesses
        reducer = None
        if self._training and processes > 1:
            reducer = GradientReducer(processes, self._options.Distributed.processId)
            reducer.check()
        signature = InputSignature(self._user_model, args, kwargs)
        # Attaching is the last step that can fail, so that a refusal leaves
        # nothing attached or compiled.
        if self._options.connection_type != enums.ConnectionType.Never:
            device.attach()
        self._device = device
        self._reducer = reducer
        self._buffers = DeviceBuffers(self._user_model, self._options.replication_factor, self._training)
        if mutated:
            self._buffers.activate()
        self._executable = _Executable(signature, loss_index, loss_count, workload, modes,
                                       datetime.timedelta(seconds=time.perf_counter() - start))
        for hook in list(PoplarExecutor._postcompile_hooks.values()):
            hook()
        logger.debug("Compiled %s for %s: %s", type(self._user_model).__name__, device.description, workload)

    def _trace(self, args, kwargs):
        """The forward pass PopTorch traces: run once on the first
        micro-batch, its effects on buffers and the RNG undone."""
        model = self._user_model
        rng = torch.get_rng_state()
        saved = [(b, b.detach().clone(), b._version) for b in model.buffers()]
        probe = Probe(model)
        loss_index, loss_count = None, 0
        try:
            with tracing(record=True) as trace:
                if self._training:
                    with torch.enable_grad(), recording() as recorder:
                        model(*args, **kwargs)
                        loss_index = final_loss_index(recorder.losses)
                        loss_count = len(recorder.losses)
                else:
                    with torch.no_grad():
                        model(*args, **kwargs)
        finally:
            probe.remove()
            mutated = any(b._version != version for b, _, version in saved)
            with torch.no_grad():
                for b, value, _ in saved:
                    b.copy_(value)
            torch.set_rng_state(rng)
        return loss_index, loss_count, probe, trace.blocks, mutated

    def _check_pipeline(self, stages):
        if stages < 2 or not self._options._execution_strategy.pipelined:
            return
        if self._training:
            need = 2 * stages - 1
            accumulation = self._options.Training.gradient_accumulation
            if accumulation < need:
                raise Error(f"Pipelined training over {stages} stages needs a gradient accumulation of at least "
                            f"2 × {stages} − 1 = {need} (Options.Training.gradientAccumulation), got {accumulation}")
        elif self._options.device_iterations < stages:
            raise Error(f"Pipelined inference over {stages} stages needs at least {stages} device iterations "
                        f"(Options.deviceIterations), got {self._options.device_iterations}")

    def _use_ipu_model(self):
        return bool(self._options._values.get("use_model", False))

    def _device_ipus(self, ipus_per_replica):
        count = self._options.replication_factor * ipus_per_replica
        if self._options.auto_round_num_ipus:
            return 1 << (count - 1).bit_length()
        if count & (count - 1) and not self._use_ipu_model():
            raise Error(f"The model needs {count} IPUs ({self._options.replication_factor} replicas × "
                        f"{ipus_per_replica} IPUs), but IPUs are attached in powers of two: use "
                        "Options.autoRoundNumIPUs(True) to round up")
        return count

    def attachToDevice(self):
        """Attaches again after detachFromDevice()."""
        if not self.isCompiled():
            raise Error(NO_EXECUTABLE_ERR)
        if self._options.connection_type == enums.ConnectionType.Never:
            raise Error("Trying to attach to an offline device (ConnectionType.Never)")
        if self._device.attached():
            raise Error("Device is already attached")
        self._device.attach()
        self._buffers.upload()

    def detachFromDevice(self):
        """Frees the IPUs; the weights stay on the host."""
        if not self.isCompiled():
            raise Error(NO_EXECUTABLE_ERR)
        if not self._device.attached():
            raise Error("Device is not attached")
        self._device.detach()

    def isAttachedToDevice(self):
        return self.isCompiled() and self._device.attached()

    def destroy(self):
        """Detaches, forgets the compiled model and reports the runs."""
        if not self.isCompiled():
            return
        self._report_summary()
        self._device.detach()
        self._executable = None
        if self._training and _training_wrappers.get(self._user_model, lambda: None)() is self:
            del _training_wrappers[self._user_model]

    # --- weights and optimizer -----------------------------------------------------------------------------
    def copyWeightsToHost(self):
        """The device's weights to the host model. Parameters always are;
        an inference model's changed buffers come back here."""
        if not self.isCompiled():
            raise Error(NO_EXECUTABLE_ERR)
        self._buffers.download()

    def copyWeightsToHostIfNeeded(self):
        return False

    def copyWeightsToDevice(self):
        """The host model's weights to every replica."""
        if not self.isCompiled():
            raise Error(NO_EXECUTABLE_ERR)
        self._buffers.upload()

    def copyNamedBuffersToDevice(self):
        if not self.isCompiled():
            raise Error(NO_EXECUTABLE_ERR)
        if "updatableNamedBuffers" not in self._options._Popart.options:
            raise Error("No named buffers marked as updatable via updatableNamedBuffers option")
        self._buffers.upload()

    def load_state_dict(self, state_dict, strict=True):
        out = self._user_model.load_state_dict(state_dict, strict)
        if self.isAttachedToDevice():
            self.copyWeightsToDevice()
        return out

    def setOptimizer(self, optimizer):
        """The optimizer (and its current hyperparameters) the IPUs use
        from the next call."""
        if not self._training:
            raise Error("setOptimizer() is only for a poptorch.trainingModel")
        _check_optimizer(optimizer)
        old = self._optimizer
        if old is not None and optimizer is not old and type(optimizer) is type(old) and not optimizer.state:
            # The IPUs keep the optimizer state a new optimizer object does
            # not replace.
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p in old.state:
                        optimizer.state[p] = old.state[p]
        self._optimizer = optimizer
        self._optimizer_hyper = _hyperparameters(optimizer)
        self._hyper_warned = False

    @property
    def rng_state(self):
        """The random generator's state (PyTorch's, which computes here)."""
        if not self.isCompiled():
            raise Error(NO_EXECUTABLE_ERR)
        return torch.get_rng_state().tolist()

    @rng_state.setter
    def rng_state(self, state):
        if not self.isCompiled():
            raise Error(NO_EXECUTABLE_ERR)
        torch.set_rng_state(torch.tensor(state, dtype=torch.uint8))

    # --- running -----------------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if self._options.connection_type == enums.ConnectionType.Never:
            raise Error("Trying to run a model on an offline device (ConnectionType.Never): use "
                        "model.compile(inputs) instead of model(inputs)")
        if not self.isCompiled():
            self._compile(args, kwargs)
        if not self._device.attached():
            self.attachToDevice()
        self._executable.signature.check(args, kwargs)
        try:
            outputs = self._run(args, kwargs)
        except BaseException:
            self._device.detach()
            logger.warning("Detached %s from %s after an error in a run; the next call attaches again",
                           type(self._user_model).__name__, self._device.description)
            raise
        self._mark_outputs(outputs)
        return outputs

    def _run(self, args, kwargs):
        start = time.perf_counter()
        options = self._options
        leaves = []
        spec = flatten((args, kwargs), leaves)
        batches = MicroBatches(options, leaves)
        iterations, accumulation, replicas = options.device_iterations, options.Training.gradient_accumulation, \
            options.replication_factor
        steps = iterations * accumulation
        mode = enums.OutputMode(options.output_mode)
        keep = self._kept_micro_batches(mode, options.output_return_period, replicas, steps)
        step_times = self._device.run(self._executable.workload, iterations)
        outputs = [None] * (steps * replicas)
        out_spec = None
        model = self._user_model
        saved_modes = [(m, m.training) for m, _ in self._executable.modes]
        for m, flag in self._executable.modes:
            m.training = flag
        self._buffers.begin_run()
        try:
            with tracing(record=False):
                for d in range(iterations):
                    if self._training:
                        self._clear_grads()
                    for g in range(accumulation):
                        for r in range(replicas):
                            index = (d * accumulation + g) * replicas + r
                            self._buffers.enter(r)
                            micro_args, micro_kwargs = rebuild(spec, iter(batches.get(d, g, r)))
                            out = self._micro_batch(model, micro_args, micro_kwargs)
                            out_leaves = []
                            out_spec = flatten(out, out_leaves)
                            if index in keep:
                                outputs[index] = [t.detach() for t in out_leaves]
                            del out, out_leaves
                    if self._training:
                        self._update(accumulation * replicas)
        finally:
            if self._training:
                self._clear_grads()
            self._buffers.end_run()
            for m, flag in saved_modes:
                m.training = flag
        samples = iterations * accumulation * batches.groups * batches.micro_batch
        wall = time.perf_counter() - start
        self._stats.record(iterations, samples, step_times, wall)
        if logger.isEnabledFor(logging.DEBUG):
            ipu = (", ".join(f"{t * 1e3:.3f}" for t in step_times) + " ms (modelled)") if step_times else \
                "not modelled"
            logger.debug("%s: %d steps, %d samples; IPU time per step %s; CPU wall %.3f ms", type(model).__name__,
                         iterations, samples, ipu, wall * 1e3)
        return combine_outputs(outputs, out_spec, mode, options.output_return_period, replicas, steps)

    @staticmethod
    def _kept_micro_batches(mode, period, replicas, steps):
        if mode in (enums.OutputMode.All, enums.OutputMode.Sum):
            return set(range(steps * replicas))
        if mode == enums.OutputMode.EveryN:
            return {s * replicas + r for s in range(steps) if (s + 1) % period == 0 for r in range(replicas)}
        return set(range((steps - 1) * replicas, steps * replicas))

    def _micro_batch(self, model, args, kwargs):
        if not self._training:
            with torch.no_grad():
                return model(*args, **kwargs)
        with torch.enable_grad(), recording() as recorder:
            out = model(*args, **kwargs)
            losses = recorder.losses
            executable = self._executable
            if len(losses) == executable.loss_count and executable.loss_index is not None:
                loss = losses[executable.loss_index]
            else:
                loss = losses[final_loss_index(losses)]
        backward(loss)
        return out

    def _clear_grads(self):
        for p in self._user_model.parameters():
            p.grad = None
        for group in self._optimizer.param_groups:
            for p in group["params"]:
                p.grad = None

    def _optimizer_params(self):
        seen, params = set(), []
        for group in self._optimizer.param_groups:
            for p in group["params"]:
                if id(p) not in seen:
                    seen.add(id(p))
                    params.append(p)
        return params

    def _update(self, local_micro_batches):
        """One weight update from the gradients summed by backward()."""
        options = self._options
        params = self._optimizer_params()
        processes = options.Distributed.numProcesses
        if self._reducer is not None:
            self._reducer.allreduce(params)
        with torch.no_grad():
            if options.Training.accumulation_and_replication_reduction_type == enums.ReductionType.Mean:
                divisor = local_micro_batches * processes
                for p in params:
                    if p.grad is not None:
                        p.grad.div_(divisor)
            max_norm = getattr(self._optimizer, "max_grad_norm", math.inf)
            if max_norm is not None and math.isfinite(max_norm):
                torch.nn.utils.clip_grad_norm_([p for p in params if p.grad is not None], max_norm)
        self._step_with_device_hyperparameters()

    def _step_with_device_hyperparameters(self):
        optimizer = self._optimizer
        groups = optimizer.param_groups
        device = self._optimizer_hyper
        if device is None or len(device) != len(groups):
            optimizer.step()
            return
        live = [{k: g[k] for k in d if k in g} for g, d in zip(groups, device)]
        changed = [k for g, d in zip(groups, device) for k in d if k in g and not _same(g[k], d[k])]
        if changed and not self._hyper_warned:
            self._hyper_warned = True
            logger.warning("The optimizer's %s changed on the host without setOptimizer(): the IPUs keep the "
                           "values of the last setOptimizer(), as PopTorch's do", ", ".join(sorted(set(changed))))
        for g, d in zip(groups, device):
            g.update(d)
        try:
            optimizer.step()
        finally:
            for g, values in zip(groups, live):
                g.update(values)

    def _mark_outputs(self, outputs):
        def error_on_backward(*_args, **_kwargs):
            raise Error("backward() cannot be called explicitly on outputs of a PopTorch model. If you're using "
                        "a trainingModel, the backwards pass is performed automatically when invoking the model. "
                        "If you're using an inferenceModel, you should use a trainingModel instead.")
        leaves = []
        flatten(outputs, leaves)
        for t in leaves:
            t.backward = error_on_backward

    # --- what the runs cost ----------------------------------------------------------------------------------
    def getLatency(self):
        """(min, max, mean) modelled IPU seconds per step (device
        iteration) of the last call; zeros when nothing is modelled (IPU
        Model). PopTorch's gives the measured round trip of the last run;
        ours is the pod's model of the IPUs' time."""
        return self._stats.latency()

    def getComputeLatency(self):
        """As getLatency(): the pod models the whole step."""
        return self._stats.latency()

    def cycleCount(self):
        """Cycles of the last step of the last call: its modelled time at
        the Mk2 IPU's 1.33 GHz."""
        if not self._options._Popart.options.get("instrumentWithHardwareCycleCounter"):
            raise Error("Cycle count logging is disabled. Please set option logCycleCount to True to enable.")
        if not self.isCompiled() or not self._stats.last_step_times:
            if self.isCompiled() and not self._device.modelled:
                raise Error("cycleCount() needs IPU times from the pod; the IPU Model does not model them")
            raise Error("Please run the model at least once before obtaining cycle count.")
        return int(round(self._stats.last_step_times[-1] * IPU_CLOCK_HZ))

    def compilationTime(self):
        """How long compiling (tracing and attaching) took."""
        if not self.isCompiled():
            raise Error("Please compile the model before obtaining compilation time.")
        return self._executable.compile_time

    def summary(self):
        """The runs so far (a RunSummary; str() is the report line)."""
        name = ("trainingModel " if self._training else "inferenceModel ") + type(self._user_model).__name__
        device = self._device.description if self._device is not None else "no device (not compiled)"
        modelled = self._device is not None and self._device.modelled
        return self._stats.summary(name, device, modelled)

    def _report_summary(self):
        if self._stats.steps and not self._stats.reported:
            self._stats.reported = True
            logger.info("%s", self.summary())


def trainingModel(model, options=None, optimizer=None):
    """Wraps `model` for training on the IPUs (see PoplarExecutor)."""
    if isinstance(model, PoplarExecutor):
        model = model._user_model
    wrapper = _training_wrappers.get(model)
    if wrapper is not None and wrapper() is not None:
        raise RuntimeError("Model has already been wrapped in 'poptorch.trainingModel'. Call model.destroy() on "
                           "the model to unwrap before wrapping again.")
    return PoplarExecutor(model=model, options=options, training=True, optimizer=optimizer)


def inferenceModel(model, options=None):
    """Wraps `model` for inference on the IPUs."""
    if isinstance(model, PoplarExecutor):
        model = model._user_model
    return PoplarExecutor(model=model, options=options, training=False)


def _register(hooks, hook):
    if not callable(hook):
        raise RuntimeError("Compile hook must be callable")
    handle = torch.utils.hooks.RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def registerPreCompileHook(hook):
    """Calls hook() before each model is compiled; returns a handle whose
    remove() unregisters it."""
    return _register(PoplarExecutor._precompile_hooks, hook)


def registerPostCompileHook(hook):
    """Calls hook() after each model is compiled."""
    return _register(PoplarExecutor._postcompile_hooks, hook)
