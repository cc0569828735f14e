"""PopDist for Python: what poprun tells each instance, and collectives
between the instances.

Pure Python, reading the environment poprun sets (POPDIST_*), with the same
defaults as the C++ library outside poprun. Collectives use mpi4py (Debian:
python3-mpi4py) and are imported only when init() is called, so the getters
work without MPI. The package installs it in python3's dist-packages; a
build places it in <build>/python, found with PYTHONPATH=build/python.
"""

import os
import re

__all__ = [
    "PopdistError", "isPopdistEnvSet", "getNumTotalReplicas", "getNumLocalReplicas",
    "getNumIpusPerReplica", "getReplicaIndexOffset", "getNumInstances", "getInstanceIndex",
    "getLocalInstanceIndex", "isUniformReplicasPerInstance", "getDeviceId",
    "checkNumIpusPerReplica", "execute_on_instances", "init", "initializeBackend",
    "isBackendInitialized", "finalizeBackend", "allReduceSum", "allGather", "broadcast",
]


class PopdistError(RuntimeError):
    """A malformed launch environment or a collective without a backend."""


def _read(name, default, minimum=0):
    value = os.environ.get(name, "")
    if value == "":
        return default
    if not value.isdigit():
        raise PopdistError(f"{name}: must be a non-negative integer, got {value}")
    n = int(value)
    if n < minimum:
        raise PopdistError(f"{name}: must be a positive integer, got {value}")
    return n


def isPopdistEnvSet():
    """True if poprun launched this process."""
    return os.environ.get("POPDIST_NUM_TOTAL_REPLICAS", "") != ""


def getNumTotalReplicas():
    return _read("POPDIST_NUM_TOTAL_REPLICAS", 1, 1)


def getNumLocalReplicas():
    return _read("POPDIST_NUM_LOCAL_REPLICAS", 1, 1)


def getNumIpusPerReplica():
    return _read("POPDIST_NUM_IPUS_PER_REPLICA", 1, 1)


def getReplicaIndexOffset():
    return _read("POPDIST_REPLICA_INDEX_OFFSET", 0)


def getLocalInstanceIndex():
    return _read("POPDIST_LOCAL_INSTANCE_INDEX", 0)


def isUniformReplicasPerInstance():
    return _read("POPDIST_UNIFORM_REPLICAS_PER_INSTANCE", 1) == 1


def _require_uniform(what):
    if not isUniformReplicasPerInstance():
        raise PopdistError(f"{what}: requires a uniform number of replicas per instance")


def getNumInstances():
    _require_uniform("getNumInstances")
    return getNumTotalReplicas() // getNumLocalReplicas()


def getInstanceIndex():
    _require_uniform("getInstanceIndex")
    return getReplicaIndexOffset() // getNumLocalReplicas()


def getAutoReportDirectory():
    """This instance's own profile directory under poprun's --autoreport-dir
    (POPDIST_AUTOREPORT_DIRECTORY), <dir>/<instance index>; "" otherwise."""
    directory = os.environ.get("POPDIST_AUTOREPORT_DIRECTORY", "")
    if not directory:
        return ""
    return os.path.join(directory, str(getInstanceIndex()))


def _instance_size():
    m = re.search(r'"instanceSize"\s*:\s*"?([0-9]+)"?', os.environ.get("POPLAR_TARGET_OPTIONS", ""))
    return int(m.group(1)) if m else 0


def getDeviceId(ipusPerReplica=0):
    """Device id of this instance's replicas, devices numbered size class by
    size class inside the instance's GCD (as the C++ getDeviceId)."""
    ipr = ipusPerReplica or getNumIpusPerReplica()
    width = getNumLocalReplicas() * ipr
    n = _instance_size() or getNumTotalReplicas() * ipr
    if width > n:
        raise PopdistError(f"getDeviceId: this instance needs {width} IPUs, more than the {n} of its domain")
    device, size = 0, 1
    while size < width:
        device += n // size
        size *= 2
    return device + (getReplicaIndexOffset() * ipr % n) // width


def checkNumIpusPerReplica(expected):
    return getNumIpusPerReplica() == expected


# --- backend and collectives (mpi4py) ---------------------------------------

_comm_stack = []


def _mpi():
    try:
        from mpi4py import MPI  # noqa: WPS433 (imported on demand)
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise PopdistError("the PopDist backend needs mpi4py (Debian: python3-mpi4py)") from e
    return MPI


def initializeBackend():
    MPI = _mpi()
    if not MPI.Is_initialized():
        MPI.Init()
    if not _comm_stack:
        _comm_stack.append(MPI.COMM_WORLD)


def isBackendInitialized():
    if not _comm_stack:
        return False
    MPI = _mpi()
    return MPI.Is_initialized() and not MPI.Is_finalized()


def finalizeBackend():
    if isBackendInitialized():
        _mpi().Finalize()
    _comm_stack.clear()


def init():
    """Initialises the default (MPI) backend; mpi4py finalises it at exit."""
    initializeBackend()


def _comm(what):
    if not isBackendInitialized():
        raise PopdistError(f"{what}: the PopDist backend is not initialised; call popdist.init() first")
    return _comm_stack[-1]


def allReduceSum(value):
    """Element-wise sum over the instances of a number or a list of numbers."""
    comm = _comm("allReduceSum")
    if isinstance(value, (list, tuple)):
        return [comm.allreduce(v) for v in value]
    return comm.allreduce(value)


def allGather(value):
    """The values of every instance, in instance order."""
    return _comm("allGather").allgather(value)


def broadcast(value, root=0):
    """The value of instance `root` on every instance."""
    return _comm("broadcast").bcast(value if _comm("broadcast").Get_rank() == root else None, root=root)


def execute_on_instances(instances, func, *args, **kwargs):
    """Executes func only on the given instances; collectives inside it
    involve only those instances. Every instance must call it."""
    member = getInstanceIndex() in set(instances)
    if not isBackendInitialized():
        return func(*args, **kwargs) if member else None
    MPI = _mpi()
    sub = _comm_stack[-1].Split(1 if member else MPI.UNDEFINED, getInstanceIndex())
    if not member:
        return None
    _comm_stack.append(sub)
    try:
        return func(*args, **kwargs)
    finally:
        _comm_stack.pop()
        sub.Free()
