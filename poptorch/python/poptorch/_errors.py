"""PopTorch's exception types, and the names of Graphcore's PopTorch that
this one does not provide.

`Error` is what PopTorch raises for a refused model, option or input and for
a failed run; programs catch it by that name, so every refusal of ours is an
`Error` (or the `AttributeError` PopTorch itself uses for frozen options).
A name of Graphcore's PopTorch that we do not implement raises
`NotProvidedError`, an `Error` that is also an `AttributeError`, so that
`hasattr(poptorch, name)` stays False and a program that tries it learns at
once what is missing instead of running something that quietly differs.
"""

__all__ = [
    "Error", "RecoverableError", "UnrecoverableError", "NotProvidedError",
    "createPoptorchError", "not_provided", "NOT_PROVIDED", "NOT_PROVIDED_METHODS"
]


class Error(RuntimeError):
    """A PopTorch error: `message` is the text, `type` where it came from
    ("poptorch_py_error" for the Python side, "pod" for the simulated pod),
    `location` a short hint of the place, or ""."""

    def __init__(self, message, type="poptorch_py_error", location=""):  # noqa: A002 (PopTorch's name)
        super().__init__(message)
        self.message = message
        self.type = type
        self.location = location


class RecoverableError(Error):
    """An error after which the device can be used again once
    `recovery_action` ("IPU_RESET", "PARTITION_RESET", "FULL_RESET") is done."""

    def __init__(self, message, recovery_action="IPU_RESET", type="pod", location=""):  # noqa: A002
        super().__init__(message, type, location)
        self.recovery_action = recovery_action


class UnrecoverableError(Error):
    """An error after which the device cannot be used by this process."""


class NotProvidedError(Error, AttributeError):
    """A name of Graphcore's PopTorch that open V-IPU's PopTorch lacks."""


# Shown as poptorch.Error (the name programs catch), not where it is defined.
for _cls in (Error, RecoverableError, UnrecoverableError, NotProvidedError):
    _cls.__module__ = "poptorch"
del _cls


def createPoptorchError(msg):
    """PopTorch's helper: an `Error` raised from the Python side."""
    return Error(msg, "poptorch_py_error")


# Public names of Graphcore's PopTorch 3.4 (module level) that we do not
# provide, with why: each needs PopART/Poplar, the IPU's own arithmetic, or a
# graph library we do not emulate.
NOT_PROVIDED = {
    "load": "loads a compiled Poplar executable; nothing is compiled here",
    "custom_op": "runs a PopART custom operation, which needs PopART",
    "ctc_beam_search_decoder": "is a PopART operation with no CPU counterpart here",
    "fps": "is a PopTorch Geometric operation (needs torch_cluster semantics on the IPU)",
    "nearest": "is a PopTorch Geometric operation (needs torch_cluster semantics on the IPU)",
    "profiling": "writes PopVision trace files, which need libpvti",
    "ICustomArgParser": "parses custom argument types for the PopART tracer",
    "registerCustomArgParser": "parses custom argument types for the PopART tracer",
    "getIpuTensorId": "names a tensor inside a PopART graph",
    "accessAttributes": "reads custom-op attributes for PopART",
    "importPoptorchMetadataFromFile": "reads a compiled Poplar executable",
    "poptorch_core": "is the C++ core over PopART",
    "autocasting": "casts to float16 inside the PopART graph",
    "autocast": "casts to float16 inside the PopART graph",
    "testing": "holds Graphcore's test helpers",
}

# Methods of PoplarExecutor that need a compiled Poplar executable.
NOT_PROVIDED_METHODS = {
    "compileAndExport": "saves a compiled Poplar executable; nothing is compiled here",
    "save": "saves a compiled Poplar executable; nothing is compiled here",
    "loadExecutable": "loads a compiled Poplar executable; nothing is compiled here",
    "getTensorNames": "lists the tensors of the PopART graph",
    "getAnchoredTensor": "reads a tensor anchored in the PopART graph",
    "getPerfCounters": "reads Poplar's host-exchange timestamps",
    "getHostIpuLatency": "measures host-to-IPU transfers, which are not modelled apart",
    "getIpuHostLatency": "measures IPU-to-host transfers, which are not modelled apart",
}


def not_provided(name, why, where="poptorch"):
    """The error for a PopTorch name we do not provide."""
    return NotProvidedError(f"{where}.{name} is not provided by open V-IPU's PopTorch: it {why}. "
                            "See docs/pytorch.md for what is implemented.")
