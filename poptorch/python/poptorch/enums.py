"""PopTorch's enumerations, with PopTorch's names and values (programs pass
them to options, and some write their integer values to JSON).

`AnchorMode` is the name SDK 2.x used for `OutputMode`: it is the same enum,
so `AnchorMode.All is OutputMode.All`.
"""
import enum

__all__ = [
    "MeanReductionStrategy", "DataLoaderMode", "SharingStrategy", "OutputMode", "AnchorMode",
    "ConnectionType", "HalfFloatCastingBehavior", "ReductionType", "SyncPattern",
    "MatMulSerializationMode", "Liveness", "OverlapMode", "AutoStage", "MultiConvPlanType",
    "CommGroupType", "VariableRetrievalMode"
]


class MeanReductionStrategy(enum.IntEnum):
    """When a Mean reduction divides. On the CPU in FP32 every strategy gives
    the same numbers: gradients are summed and divided once."""
    Running = 0
    Post = 1
    PostAndLoss = 2


class DataLoaderMode(enum.IntEnum):
    """Sync: the program's thread loads. Async: a background thread
    prefetches (AsynchronousDataAccessor). AsyncRebatched: as Async, the
    workers loading smaller batches that the accessor joins."""
    Sync = 0
    Async = 1
    AsyncRebatched = 2


class SharingStrategy(enum.IntEnum):
    """How PopTorch hands a dataset to its loader process. Our loader is a
    thread of the same process, so every strategy shares the dataset as is."""
    SharedMemory = 0
    FileSystem = 1
    Fork = 2
    ForkServer = 3


class OutputMode(enum.IntEnum):
    """Which micro-batches' outputs a run returns: All, EveryN (every N-th,
    N = output_return_period), Final (the last), Sum (their sum), Default
    (All for inference, Final for training)."""
    Final = 0
    EveryN = 1
    All = 2
    Sum = 3
    Default = 4


AnchorMode = OutputMode


class ConnectionType(enum.IntEnum):
    """When to attach to the IPUs: Always and OnDemand attach when the model
    is compiled; Never does not attach (compile only)."""
    Always = 0
    OnDemand = 1
    Never = 2


class HalfFloatCastingBehavior(enum.IntEnum):
    """Deprecated in PopTorch; accepted."""
    FloatDowncastToHalf = 0
    HalfUpcastToFloat = 1
    Default = 2


class ReductionType(enum.IntEnum):
    """How gradients of the micro-batches and replicas of one weight update
    are combined: Sum, or Mean (the sum divided by their number)."""
    Sum = 0
    Mean = 1
    NoReduction = 2


class SyncPattern(enum.IntEnum):
    Full = 0
    SinglePipeline = 1
    ReplicaAndLadder = 2


class MatMulSerializationMode(enum.Enum):
    InputChannels = "input_channels"
    ReducingDim = "reducing_dim"
    OutputChannels = "output_channels"
    Disabled = "none"


class Liveness(enum.IntEnum):
    AlwaysLive = 0
    OffChipAfterFwd = 1
    OffChipAfterFwdNoOverlap = 2
    OffChipAfterEachPhase = 3


class OverlapMode(enum.Enum):
    NoOverlap = "no_overlap"
    OverlapAccumulationLoop = "overlap_accumulation_loop"
    OverlapDeviceIterationLoop = "overlap_device_iteration_loop"


class AutoStage(enum.IntEnum):
    """How blocks without an explicit stage get one: the stage of a block is
    its IPU (SameAsIpu), or each new block opens the next stage
    (AutoIncrement)."""
    SameAsIpu = 0
    AutoIncrement = 1


class MultiConvPlanType(enum.IntEnum):
    Parallel = 0
    Serial = 1


class CommGroupType(enum.IntEnum):
    """How replicas are grouped: All (one group), Consecutive (replicas
    0..k-1, k..2k-1, ...), Orthogonal (replicas r, r+m, r+2m, ... with m
    groups), NoGrouping (each replica alone)."""
    All = 0
    Consecutive = 1
    Orthogonal = 2
    NoGrouping = 3


class VariableRetrievalMode(enum.IntEnum):
    OnePerGroup = 0
    AllReplicas = 2
