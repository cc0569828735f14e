"""Open V-IPU's PopTorch: Graphcore's PopTorch API for the simulated IPU pod,
with the model's maths computed by PyTorch on the CPU.

A program written for PopTorch runs unchanged: Options, trainingModel,
inferenceModel, DataLoader, the optimizers, the annotations. Batching,
replication, gradient accumulation, the reduction of gradients across
replicas and poprun instances, output modes and the loss rules follow
PopTorch exactly (_wrapper.py, _batching.py, _loss.py); each step's time on
the IPUs comes from the pod's model (_device.py). A name of Graphcore's
PopTorch that we do not provide raises NotProvidedError (an AttributeError
and a poptorch.Error) naming it. docs/pytorch.md lists every name.
"""
import torch

from . import enums, optim
from ._annotations import (CPU, Attribute, BeginBlock, Block, BlockFunction, LegacyBeginBlockFn, MultiConv,
                           NameScope, cond, dynamic_slice, dynamic_update, for_loop, ipu_print_tensor,
                           isRunningOnIpu, nop, recomputationCheckpoint, removeBlocks, serializedMatMul,
                           set_available_memory, set_overlap_for_input, set_overlap_for_output)
from ._dataloader import AsynchronousDataAccessor, DataLoader
from ._device import hardware_available as _hardware_available
from ._errors import (NOT_PROVIDED, Error, NotProvidedError, RecoverableError, UnrecoverableError,
                      createPoptorchError, not_provided)
from ._logging import logger, setLogLevel
from ._loss import identity_loss
from ._wrapper import (PoplarExecutor, inferenceModel, registerPostCompileHook, registerPreCompileHook,
                       trainingModel)
from .enums import (AnchorMode, AutoStage, CommGroupType, ConnectionType, DataLoaderMode,
                    HalfFloatCastingBehavior, Liveness, MatMulSerializationMode, MeanReductionStrategy,
                    MultiConvPlanType, OutputMode, OverlapMode, ReductionType, SharingStrategy, SyncPattern,
                    VariableRetrievalMode)
from .options import (ConfigFileError, Options, ParallelPhasedExecution, Phase, PipelinedExecution,
                      SerialPhasedExecution, ShardedExecution, Stage, TensorLocationSettings)

__version__ = "3.4.0+openvipu"

__all__ = [
    "AnchorMode", "AsynchronousDataAccessor", "Attribute", "AutoStage", "BeginBlock", "Block", "BlockFunction",
    "CPU", "CommGroupType", "ConfigFileError", "ConnectionType", "DataLoader", "DataLoaderMode", "Error",
    "HalfFloatCastingBehavior", "LegacyBeginBlockFn", "Liveness", "MatMulSerializationMode",
    "MeanReductionStrategy", "MultiConv", "MultiConvPlanType", "NameScope", "NotProvidedError", "Options",
    "OutputMode", "OverlapMode", "ParallelPhasedExecution", "Phase", "PipelinedExecution", "PoplarExecutor",
    "RecoverableError", "ReductionType", "SerialPhasedExecution", "ShardedExecution", "SharingStrategy",
    "Stage", "SyncPattern", "TensorLocationSettings", "UnrecoverableError", "VariableRetrievalMode",
    "cond", "createPoptorchError", "dynamic_slice", "dynamic_update", "enums", "for_loop", "identity_loss",
    "inferenceModel", "ipuHardwareIsAvailable", "ipuHardwareVersion", "ipu_print_tensor", "isRunningOnIpu",
    "logger", "nop", "optim", "recomputationCheckpoint", "registerPostCompileHook", "registerPreCompileHook",
    "removeBlocks", "serializedMatMul", "set_available_memory", "set_overlap_for_input",
    "set_overlap_for_output", "setLogLevel", "trainingModel",
]


def ipuHardwareIsAvailable(num_ipus=1):
    """True when an IPUoF attachment is configured for this process
    (poprun, the IPUOF_* variables or ~/.ipuof.conf.d/), as the pod module
    sees it (with a GCD of at least num_ipus IPUs when it says)."""
    return _hardware_available(num_ipus)


def ipuHardwareVersion():
    """2 (the simulated pods are of Mk2 IPU-Machines); Error when no IPU is
    available."""
    if not ipuHardwareIsAvailable():
        raise Error("No IPU hardware available on this system")
    return 2


def __getattr__(name):
    if name in NOT_PROVIDED:
        raise not_provided(name, NOT_PROVIDED[name])
    raise AttributeError(f"module 'poptorch' has no attribute '{name}'")


logger.info("PopTorch %s: open V-IPU's PopTorch for the simulated IPU pod, not Graphcore's; the model's maths "
            "runs on this machine's CPU (PyTorch %s), IPU times come from the pod's model", __version__,
            torch.__version__)
