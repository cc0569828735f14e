"""poptorch.Options and its groups (Training, Precision, Distributed,
TensorLocations, Jit, _Popart), tensor locations, and the execution
strategies (stages, phases) with PopTorch's names and defaults.

What an option does here:
- batching and reduction (deviceIterations, replicationFactor,
  inputReplicaGrouping, Training.gradientAccumulation,
  accumulationAndReplicationReductionType, outputMode/anchorMode,
  Distributed) change the maths exactly as on IPUs (see _wrapper.py);
- randomSeed seeds torch, useIpuModel/connectionType choose the device,
  autoRoundNumIPUs rounds the IPUs asked of the pod, logCycleCount enables
  cycleCount(), ipus of stages and blocks size the replica;
- everything that only shapes Poplar's compilation or the IPU's
  arithmetic (partials type, stochastic rounding, memory proportions, tensor
  locations, _Popart keys, ...) is accepted, recorded and shown by toDict(),
  and changes nothing on the CPU. Tensor locations and the optimizer's
  state types are passed on to the pod in the workload description.

Construction reads the environment: POPTORCH_CACHE_DIR (executable
caching), POPTORCH_IPU_MODEL=1 (useIpuModel(True)), POPTORCH_DEFAULT_OPTIONS
(a JSON object of options, {"deviceIterations": 4, "_Popart.set": ["k", 1]}),
and OMPI_COMM_WORLD_SIZE/OMPI_COMM_WORLD_RANK (Distributed).
"""
import copy
import json
import os

import torch

from . import enums
from ._logging import logger
from ._options_impl import OptionsDict, parse_option_file

__all__ = [
    "Options", "TensorLocationSettings", "Stage", "Phase", "PipelinedExecution",
    "ShardedExecution", "SerialPhasedExecution", "ParallelPhasedExecution", "ConfigFileError"
]


class ConfigFileError(Exception):
    """A line of an options file (Options.loadFromFile) that cannot be read."""


class _JitOptions(OptionsDict):
    """Options.Jit: PopTorch's JIT-tracing switch, kept for old programs."""

    def traceModel(self, trace_model):
        logger.warning("[Deprecated] options.Jit.traceModel() is ignored: the model runs as written")
        if trace_model:
            raise ValueError("options.Jit.traceModel(True) is no longer supported")
        return self


class _PopartOptions:
    """Options._Popart: PopART session options by name. Recorded and shown
    by toDict(); PopART itself does not run here."""

    def __init__(self):
        self._is_frozen = False
        self.options = {}
        self.set("instrumentWithHardwareCycleCounter", False)
        self.set("rearrangeAnchorsOnHost", False)

    def checkIsFrozen(self):
        if self._is_frozen:
            raise AttributeError("Can't modify frozen Options")

    def set(self, key, value):
        self.checkIsFrozen()
        self.options[key] = value
        return self

    def setEngineOptions(self, engine_options):
        return self.set("engineOptions", engine_options)

    def setPatterns(self, patterns, level=2):
        if not isinstance(level, int) or not isinstance(patterns, dict):
            raise TypeError("setPatterns takes a dict of pattern names and an int level")
        self.set("patterns_level", level)
        return self.set("patterns", patterns)

    def __deepcopy__(self, memo):
        copied = _PopartOptions.__new__(_PopartOptions)
        memo[id(self)] = copied
        copied._is_frozen = False
        copied.options = copy.deepcopy(self.options, memo)
        return copied

    def __repr__(self):
        return "_PopartOptions(" + ", ".join(f"{k}={v!r}" for k, v in self.options.items()) + ")"


class _PrecisionOptions(OptionsDict):
    """Options.Precision: the IPU's number formats. Recorded (in _Popart's
    keys, as PopTorch does); the CPU computes in PyTorch's own precision."""

    def __init__(self, popart):
        super().__init__()
        self._popart_options = popart

    def halfFloatCasting(self, half_float_casting):  # noqa: ARG002 (PopTorch's signature)
        logger.warning("[Deprecated] options.Precision.halfFloatCasting() is ignored")
        return self

    def runningStatisticsAlwaysFloat(self, value):
        if not isinstance(value, bool):
            raise ValueError("runningStatisticsAlwaysFloat needs to be set to a bool")
        logger.warning("[Deprecated] options.Precision.runningStatisticsAlwaysFloat() is ignored")
        return self

    def enableFloatingPointExceptions(self, enabled):
        if not isinstance(enabled, bool):
            raise TypeError("enableFloatingPointExceptions needs to be set to a bool")
        self._popart_options.set("enableFloatingPointChecks", enabled)
        return self

    def enableStochasticRounding(self, enabled):
        self._popart_options.set("enableStochasticRounding", enabled)
        return self

    def setPartialsType(self, dtype):
        if dtype in (torch.float, torch.float32):
            name = "float"
        elif dtype in (torch.half, torch.float16):
            name = "half"
        else:
            raise ValueError("parameter to setPartialsType should be either torch.float or torch.half")
        self._popart_options.set("partialsTypeMatMuls", name)
        self._popart_options.set("convolutionOptions", {"partialsType": name})
        return self


class _TrainingOptions(OptionsDict):
    """Options.Training: gradient accumulation and how gradients of a weight
    update are reduced (see _wrapper.py for the maths)."""

    def __init__(self, popart):
        super().__init__(gradient_accumulation=1,
                         accumulation_and_replication_reduction_type=enums.ReductionType.Mean,
                         meanAccumulationAndReplicationReductionStrategy=enums.MeanReductionStrategy.Post)
        self._popart_options = popart

    def gradientAccumulation(self, gradient_accumulation):
        """Micro-batches whose gradients make one weight update."""
        self.set(gradient_accumulation=gradient_accumulation)
        return self

    def accumulationAndReplicationReductionType(self, reduction_type):
        """Mean (default): the summed gradients are divided by accumulation
        × replicas of every process. Sum: not divided."""
        if not isinstance(reduction_type, enums.ReductionType) or \
                reduction_type == enums.ReductionType.NoReduction:
            raise ValueError("accumulationAndReplicationReductionType must be set to "
                             "poptorch.ReductionType.Mean or poptorch.ReductionType.Sum")
        self.set(accumulation_and_replication_reduction_type=reduction_type)
        return self

    def setMeanAccumulationAndReplicationReductionStrategy(self, mean_reduction_strategy):
        """Accepted: in FP32 every strategy divides the same sum by the same
        count."""
        self.set(meanAccumulationAndReplicationReductionStrategy=mean_reduction_strategy)
        return self

    def setAutomaticLossScaling(self, enabled):
        self._popart_options.set("automaticLossScalingSettings.enabled", enabled)
        return self

    def setConvolutionDithering(self, enabled):
        self._popart_options.set("convolutionOptions", {"enableConvDithering": enabled})
        return self


class _DistributedOptions(OptionsDict):
    """Options.Distributed: this process's id and the number of processes
    (instances) the replicas are spread over. Read at construction from
    OMPI_COMM_WORLD_SIZE/OMPI_COMM_WORLD_RANK, so that a plain Options()
    under mpirun (and poprun) knows them. Use popdist.poptorch.Options
    under poprun."""

    def __init__(self):
        super().__init__(num_distributed_processes=1, distributed_process_id=0, ipuof_configs={})
        self._gcd_mappings = {}
        self.setEnvVarNames("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")

    def disable(self):
        """One process (id 0 of 1), whatever the environment says."""
        self.set(num_distributed_processes=1, distributed_process_id=0)
        return self

    def setEnvVarNames(self, var_num_processes, var_process_id):
        """Reads the process count and id from these variables (default
        1 and 0 when unset)."""
        return self.configureProcessId(int(os.environ.get(var_process_id, "0")),
                                       int(os.environ.get(var_num_processes, "1")))

    def configureProcessId(self, process_id, num_processes):
        self.set(distributed_process_id=process_id)
        self.set(num_distributed_processes=num_processes)
        return self

    @property
    def processId(self):
        return self.distributed_process_id

    @property
    def numProcesses(self):
        return self.num_distributed_processes


class TensorLocationSettings(OptionsDict):
    """Where a class of tensors lives (on chip, Streaming Memory, sharded
    across replicas). Recorded; the pod's model reads offloading and
    sharding of the optimizer state from it."""

    def minElementsForOffChip(self, min_elements):
        if not isinstance(min_elements, int):
            raise TypeError("minElementsForOffChip takes an int")
        self.createOrSet(minElementsForOffChip=min_elements)
        return self

    def minElementsForReplicatedTensorSharding(self, min_elements):
        if not isinstance(min_elements, int):
            raise TypeError("minElementsForReplicatedTensorSharding takes an int")
        self.createOrSet(minElementsForReplicatedTensorSharding=min_elements)
        return self

    def useOnChipStorage(self, use=True):
        if use is None:
            self.deleteIfExists("onChip")
        else:
            if not isinstance(use, bool):
                raise TypeError("useOnChipStorage takes a bool or None")
            self.createOrSet(onChip=int(use))
        return self

    def useReplicatedTensorSharding(self, use=True):
        if not isinstance(use, bool):
            raise TypeError("useReplicatedTensorSharding takes a bool")
        self.createOrSet(useReplicatedTensorSharding=int(use))
        return self

    def useIOTilesToLoad(self, use=True):
        if not isinstance(use, bool):
            raise TypeError("useIOTilesToLoad takes a bool")
        self.createOrSet(useIOTilesToLoad=int(use))
        return self

    def useIOTilesToStore(self, use=True):
        if not isinstance(use, bool):
            raise TypeError("useIOTilesToStore takes a bool")
        self.createOrSet(useIOTilesToStore=int(use))
        return self


class _TensorLocationOptions(OptionsDict):
    """Options.TensorLocations."""

    def numIOTiles(self, num_tiles):
        if not isinstance(num_tiles, int) or not 32 <= num_tiles <= 192 or num_tiles % 2:
            raise ValueError("numIOTiles must be an even number between 32 and 192.")
        self.createOrSet(numIOTiles=num_tiles)
        return self

    def _location(self, key, location):
        if not isinstance(location, TensorLocationSettings):
            raise TypeError("expected a poptorch.TensorLocationSettings")
        self.createOrSet(**{key: location.toDict()})
        return self

    def setActivationLocation(self, location):
        return self._location("location_activation", location)

    def setWeightLocation(self, location):
        return self._location("location_weight", location)

    def setOptimizerLocation(self, location):
        return self._location("location_optimizer", location)

    def setAccumulatorLocation(self, location):
        return self._location("location_accumulator", location)


class Stage:
    """Blocks that run on one IPU (a pipeline stage)."""

    def __init__(self, *block_ids):
        if not all(isinstance(b, str) for b in block_ids):
            raise TypeError(f"Block IDs are supposed to be strings but got {block_ids}")
        self._blocks = block_ids
        self._stage_id = -1
        self._phase_id = -1
        self._ipu = None

    @property
    def blocks(self):
        return self._blocks

    def ipu(self, ipu):
        if not isinstance(ipu, int):
            raise TypeError("Stage.ipu takes an int")
        self._ipu = ipu
        return self

    def _setStage(self, stage):
        if stage is not None:
            self._stage_id = stage
        return self


class Phase:
    """Stages that run in parallel in phased execution."""

    def __init__(self, *arg):
        if all(isinstance(elt, Stage) for elt in arg):
            self.stages = arg
        elif all(isinstance(elt, str) for elt in arg):
            self.stages = [Stage(*arg)]
        else:
            raise TypeError("All arguments must either be block IDs (strings) or Stages")

    def stage(self, idx):
        return self.stages[idx]

    def ipus(self, *ipus):
        if len(ipus) != len(self.stages):
            raise ValueError(f"Phase contains {len(self.stages)} stages but you provided {len(ipus)} ipus")
        for stage, ipu in zip(self.stages, ipus):
            stage.ipu(ipu)


class _IExecutionStrategy:
    """How the model's blocks map to stages and IPUs. On the CPU every
    strategy computes the same thing; the strategy decides how many IPUs a
    replica takes and which pipelining rules apply."""

    pipelined = False

    def __init__(self, block_map, auto_stage=enums.AutoStage.SameAsIpu):
        self._block_map = block_map
        self._auto_stage = auto_stage

    def stage(self, block_id):
        if block_id not in self._block_map:
            raise KeyError(f"Unknown block {block_id}")
        return self._block_map[block_id]

    def backendOptions(self):
        return {}

    def _stages_and_ipus(self, blocks):
        """(number of stages, IPUs a replica needs) for the blocks a traced
        forward opened, each (user_id, ipu_id) in order."""
        ipus = set()
        stages = set()
        for index, (user_id, ipu_id) in enumerate(blocks):
            stage = self._block_map.get(user_id)
            if stage is not None:
                stages.add(stage._stage_id)
                ipu = stage._ipu if stage._ipu is not None else (ipu_id if ipu_id is not None
                                                                 else stage._stage_id)
            else:
                ipu = ipu_id if ipu_id is not None else index
                stages.add(ipu if self._auto_stage == enums.AutoStage.SameAsIpu else index)
            ipus.add(max(ipu, 0))
        for stage in self._block_map.values():
            if stage._ipu is not None:
                ipus.add(stage._ipu)
        return max(len(stages), 1), (max(ipus) + 1 if ipus else 1)


def _stage_map(args):
    block_map = {}
    for stage_id, arg in enumerate(args):
        if isinstance(arg, Stage):
            stage = arg
        elif isinstance(arg, str):
            stage = Stage(arg)
        else:
            stage = Stage(*arg)
        stage._setStage(stage_id)
        for block in stage.blocks:
            if block in block_map:
                raise ValueError(f"{block} associated with more than one stage")
            block_map[block] = stage
    return block_map


class PipelinedExecution(_IExecutionStrategy):
    """Stages run as a pipeline over the micro-batches (the default when
    blocks are defined). Training needs gradient accumulation of at least
    2 × stages − 1, inference at least as many device iterations as stages."""

    pipelined = True

    def __init__(self, *args):
        if len(args) == 1 and isinstance(args[0], enums.AutoStage):
            super().__init__({}, args[0])
        else:
            super().__init__(_stage_map(args))

    def backendOptions(self):
        return {"execution_mode": 0}


class ShardedExecution(PipelinedExecution):
    """Stages run one after the other on their IPUs (no pipelining)."""

    pipelined = False

    def backendOptions(self):
        return {"execution_mode": 1}


class _IPhasedExecution(_IExecutionStrategy):
    def __init__(self, *phases):
        if not phases:
            raise ValueError("There is currently no AutoStage for PhasedExecution, "
                             "please explicitly specify the phases")
        self._tensors_liveness = enums.Liveness.AlwaysLive
        self._separate_backward_phase = False
        self._phases = []
        block_map = {}
        for phase_id, arg in enumerate(phases):
            phase = arg if isinstance(arg, Phase) else Phase(*(arg if isinstance(arg, list) else [arg]))
            self._phases.append(phase)
            for stage in phase.stages:
                stage._phase_id = phase_id
                for block in stage.blocks:
                    if block in block_map:
                        raise ValueError(f"{block} associated with more than one stage")
                    block_map[block] = stage
        super().__init__(block_map)

    def phase(self, phase):
        return self._phases[phase]

    def useSeparateBackwardPhase(self, use=True):
        self._separate_backward_phase = bool(use)
        return self

    def backendOptions(self):
        return {"execution_mode": 2, "separate_backward_phase": self._separate_backward_phase,
                "tensors_liveness": self._tensors_liveness.value}


class ParallelPhasedExecution(_IPhasedExecution):
    def backendOptions(self):
        return {**super().backendOptions(), "serial_phases_execution": False}

    def sendTensorsOffChipAfterFwd(self, off_chip=True):
        self._tensors_liveness = enums.Liveness.OffChipAfterFwd if off_chip else enums.Liveness.AlwaysLive
        return self


class SerialPhasedExecution(_IPhasedExecution):
    def setTensorsLiveness(self, liveness):
        if not isinstance(liveness, enums.Liveness):
            raise TypeError("setTensorsLiveness takes a poptorch.Liveness")
        self._tensors_liveness = liveness
        return self

    def backendOptions(self):
        return {**super().backendOptions(), "serial_phases_execution": True}


class Options(OptionsDict):
    """Every option of a wrapped model. Wrapping freezes the object given
    and works on a copy (`model.options`), frozen too."""

    def __init__(self):
        self._jit = _JitOptions()
        self._popart = _PopartOptions()
        self._graphProcessing = _PrecisionOptions(self._popart)
        self._training = _TrainingOptions(self._popart)
        self._distributed = _DistributedOptions()
        self._tensor_locations = _TensorLocationOptions()
        self._execution_strategy = PipelinedExecution()
        self._source_location_excludes = ["install/poptorch", "site-packages/torch", "site-packages/poptorch"]
        self._show_compilation_progress_bar = True
        self._relax_optimizer_checks = False
        self._module_namescope_enabled = True
        # IPUs a replica needs when the caller knows better than the blocks
        # (popdist.poptorch.Options(ipus_per_replica=...)).
        self._ipus_per_replica_hint = 0
        super().__init__(replication_factor=1,
                         input_group_size=1,
                         input_cgt=enums.CommGroupType.Consecutive,
                         broadcast_buffers=True,
                         device_iterations=1,
                         log_dir=".",
                         max_repeat_logs=4,
                         auto_round_num_ipus=False,
                         anchored_tensors={},
                         output_mode=enums.OutputMode.Default.value,
                         output_return_period=1,
                         connection_type=enums.ConnectionType.Always.value,
                         sync_pattern=enums.SyncPattern.Full.value,
                         available_memory_proportion={})
        path = os.environ.get("POPTORCH_CACHE_DIR", "")
        if path:
            logger.info("POPTORCH_CACHE_DIR is set: setting cache path to %s", path)
            self.enableExecutableCaching(path)
        if os.environ.get("POPTORCH_IPU_MODEL", "") == "1":
            self.useIpuModel(True)
        self.from_json(os.environ.get("POPTORCH_DEFAULT_OPTIONS", "{}") or "{}")

    # --- groups -----------------------------------------------------------
    @property
    def TensorLocations(self):
        return self._tensor_locations

    @property
    def Distributed(self):
        return self._distributed

    @property
    def Jit(self):
        return self._jit

    @property
    def Precision(self):
        return self._graphProcessing

    @property
    def Training(self):
        return self._training

    @property
    def _Popart(self):
        return self._popart

    # --- reading options from text -------------------------------------------
    def from_json(self, string):
        """Applies a JSON object of {"accessor.path": value}; a list value is
        passed as the arguments, "Enum.Value" strings become enums."""
        try:
            values = json.loads(string)
        except json.JSONDecodeError as e:
            raise ValueError(f"options JSON: {e}") from e
        for option, value in values.items():
            target = self
            for attribute in option.split("."):
                target = getattr(target, attribute)
            if isinstance(value, str) and value.count(".") == 1:
                enum_name, member = value.split(".")
                enum_type = getattr(enums, enum_name, None)
                if enum_type is not None and hasattr(enum_type, member):
                    value = getattr(enum_type, member)
            if isinstance(value, list):
                target(*value)
            else:
                target(value)
        return self

    def loadFromFile(self, filepath):
        """Applies an options file: one call per line, as
        `deviceIterations(4)` or `Training.gradientAccumulation(8)`."""
        return parse_option_file(self, filepath)

    # --- batching and replication ------------------------------------------------
    def deviceIterations(self, device_iterations):
        """Weight updates (training) or batches (inference) per call."""
        self.set(device_iterations=device_iterations)
        return self

    def replicationFactor(self, replication_factor):
        """Replicas of the model in this process (local replicas)."""
        self.set(replication_factor=replication_factor)
        return self

    def inputReplicaGrouping(self, input_group_size, input_group_type):
        """Replicas of one group get the same input micro-batch."""
        if input_group_type == enums.CommGroupType.NoGrouping:
            input_group_size = 1
            input_group_type = enums.CommGroupType.Consecutive
        if input_group_type == enums.CommGroupType.All:
            raise ValueError("input_group_type cannot be All")
        if self.replication_factor < input_group_size:
            raise ValueError("input_group_size cannot be larger than replication_factor")
        if self.replication_factor % input_group_size != 0:
            raise ValueError("input_group_size must be a factor of replication_factor")
        self.set(input_group_size=input_group_size)
        self.set(input_cgt=input_group_type)
        return self

    def broadcastBuffers(self, broadcast_buffers=True):
        """Each replica keeps its own buffers either way (PopTorch never
        broadcasts them); recorded."""
        self.set(broadcast_buffers=broadcast_buffers)
        return self

    def outputMode(self, output_mode, output_return_period=None):
        """Which micro-batches' outputs a call returns (see OutputMode)."""
        if not isinstance(output_mode, enums.OutputMode):
            raise TypeError("outputMode takes a poptorch.OutputMode")
        if output_mode == enums.OutputMode.EveryN:
            if not output_return_period or output_return_period <= 0:
                raise ValueError("EveryN anchor must have output_return_period set to valid positive integer")
        elif output_return_period:
            logger.info("Anchor return period argument ignored with output_mode set to %s",
                        output_mode.name)
        self.set(output_mode=output_mode.value, output_return_period=output_return_period or 1)
        return self

    def anchorMode(self, anchor_mode, anchor_return_period=None):
        """SDK 2.x's name of outputMode."""
        logger.warning("Options.anchorMode is deprecated: use Options.outputMode")
        return self.outputMode(anchor_mode, anchor_return_period)

    def defaultOutputMode(self):
        return self.output_mode == enums.OutputMode.Default

    def defaultAnchorMode(self):
        return self.defaultOutputMode()

    def anchorTensor(self, short_name, long_name, output_mode=None, output_return_period=1):
        """Recorded; reading anchored tensors needs the PopART graph."""
        if output_mode != enums.OutputMode.EveryN:
            output_return_period = 1
        self.checkIsFrozen()
        self.anchored_tensors[short_name] = [long_name, output_mode is None, output_mode, output_return_period]

    # --- device ---------------------------------------------------------------------------------
    def useIpuModel(self, use_model):
        """Compute on the CPU with no pod (no IPU time modelled). Takes
        precedence over POPTORCH_IPU_MODEL."""
        self.createOrSet(use_model=bool(use_model))
        return self

    def useIpuId(self, ipu_id):
        """Recorded: the pod attaches the IPUs of the partition's GCD that
        the environment names."""
        if not isinstance(ipu_id, int):
            raise TypeError("useIpuId takes an int")
        self.createOrSet(ipu_id=ipu_id)
        return self

    def useOfflineIpuTarget(self, ipu_version=2):
        self.connectionType(enums.ConnectionType.Never)
        self.createOrSet(ipu_version=ipu_version)
        return self

    def connectionType(self, connection_type):
        if not isinstance(connection_type, enums.ConnectionType):
            raise TypeError("connectionType takes a poptorch.ConnectionType")
        self.set(connection_type=connection_type.value)
        return self

    def syncPattern(self, sync_pattern):
        if not isinstance(sync_pattern, enums.SyncPattern):
            raise TypeError("syncPattern takes a poptorch.SyncPattern")
        self.set(sync_pattern=sync_pattern.value)
        return self

    def autoRoundNumIPUs(self, auto_round_num_ipus=True):
        """Round the IPUs asked of the pod up to a power of two."""
        self.set(auto_round_num_ipus=auto_round_num_ipus)
        return self

    def setExecutionStrategy(self, strategy):
        if not isinstance(strategy, _IExecutionStrategy):
            raise TypeError("setExecutionStrategy takes a PipelinedExecution, ShardedExecution, "
                            "SerialPhasedExecution or ParallelPhasedExecution")
        self.checkIsFrozen()
        self._execution_strategy = strategy
        return self

    # --- recorded only -------------------------------------------------------------------------
    def setAvailableMemoryProportion(self, available_memory_proportion):
        memory = {}
        for key, value in available_memory_proportion.items():
            if not key.startswith("IPU"):
                raise ValueError('Available memory proportions are expected to be in a dictionary of '
                                 f'{{"IPU0": 0.5}} where the 0 in IPU is the index of the IPU. Invalid key: {key}')
            memory[int(key[3:])] = value
        self.createOrSet(available_memory_proportion=memory)
        return self

    def enableExecutableCaching(self, path):
        """Recorded: nothing is compiled, so nothing is cached."""
        if path is None:
            self._Popart.set("enableEngineCaching", False)
        else:
            self._Popart.set("cachePath", path)
            self._Popart.set("enableEngineCaching", True)
        return self

    def randomSeed(self, random_seed):
        """Seeds torch (torch.manual_seed) and records the seed, which the
        DataLoader's global shuffle across processes uses."""
        if not isinstance(random_seed, int):
            raise TypeError("randomSeed takes an int")
        self.checkIsFrozen()
        torch.manual_seed(random_seed)
        self.createOrSet(random_seed=random_seed)
        return self

    def enableStableNorm(self, enabled):
        self._Popart.set("enableStableNorm", enabled)
        return self

    def enableSyntheticData(self, enabled):
        """Recorded (PopART's syntheticDataMode); the model still computes
        on the inputs given."""
        self._Popart.set("syntheticDataMode", 2 if enabled else 0)
        return self

    def logCycleCount(self, log_cycle_count):
        """Enables cycleCount(), derived from the pod's modelled step time."""
        self._Popart.set("instrumentWithHardwareCycleCounter", log_cycle_count)
        return self

    def enableProfiling(self, profile_dir=None):
        engine = dict(self._popart.options.get("engineOptions", {}))
        engine.update({"debug.allowOutOfMemory": "true", "autoReport.directory": profile_dir or ".",
                       "autoReport.all": "true"})
        self._popart.setEngineOptions(engine)
        return self

    def logDir(self, log_dir):
        self.set(log_dir=log_dir)
        return self

    def maxRepeatLogs(self, max_lines):
        self.set(max_repeat_logs=(1 << 64) - 1 if max_lines is None else max_lines)
        return self

    def modelName(self, name):
        self.createOrSet(model_name=name)
        return self

    def disableModuleNamescope(self):
        self.checkIsFrozen()
        self._module_namescope_enabled = False
        return self

    def updatableNamedBuffers(self, buffers):
        self._Popart.set("updatableNamedBuffers", buffers)
        return self

    def sourceLocationExcludes(self, excludes):
        self.checkIsFrozen()
        self._source_location_excludes = list(excludes)
        return self

    def appendToLocationExcludes(self, *excludes):
        self.checkIsFrozen()
        self._source_location_excludes += list(excludes)
        return self

    def showCompilationProgressBar(self, show=True):
        self.checkIsFrozen()
        self._show_compilation_progress_bar = show
        return self

    def relaxOptimizerAttributesChecks(self, relax=True):
        self.checkIsFrozen()
        self._relax_optimizer_checks = relax
        return self

    # --- whole options ------------------------------------------------------------------------------
    def toDict(self):
        """Every option in one dictionary (the strategy's, _Popart's keys,
        the top level, Training, Distributed, TensorLocations)."""
        out = self._execution_strategy.backendOptions()
        out.update(self._popart.options)
        out.update(self._values)
        out.update(self._training.toDict())
        out.update(self._distributed.toDict())
        out.update(self._tensor_locations.toDict())
        return out

    def clone(self):
        """An unfrozen deep copy."""
        return copy.deepcopy(self)

    def __repr__(self):
        groups = ", ".join(f"{name}={getattr(self, name)!r}"
                           for name in ("Distributed", "Jit", "Precision", "TensorLocations", "Training", "_Popart"))
        return "Options(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ", " + groups + ")"
