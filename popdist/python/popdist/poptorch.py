"""popdist.poptorch: PopTorch options for a process that poprun launched.

`popdist.poptorch.Options(ipus_per_replica=None)` is a poptorch.Options
whose replication factor is this instance's replicas
(popdist.getNumLocalReplicas()), whose Distributed process id and count are
popdist.getInstanceIndex() and getNumInstances(), and whose device is
popdist.getDeviceId(ipus_per_replica). poprun decides those, so the options
that would contradict it refuse: useIpuId, replicationFactor,
Distributed.disable, Distributed.setEnvVarNames and
Distributed.configureProcessId raise
RuntimeError("Cannot call `X` with popdist.poptorch.Options").

ipus_per_replica defaults to poprun's --ipus-per-replica
(popdist.getNumIpusPerReplica(), 1 outside poprun); outside poprun the
options are those of process 0 of 1 with one replica. Programs still call
opts.randomSeed() themselves, so that every instance starts from the same
weights and shuffles alike.
"""
import poptorch

import popdist

__all__ = ["Options"]


def _refuse(name):
    def refused(*_args, **_kwargs):
        raise RuntimeError(f"Cannot call `{name}` with popdist.poptorch.Options")
    refused.__name__ = name.rsplit(".", 1)[-1]
    return refused


class _PopdistDistributedOptions(poptorch.options._DistributedOptions):
    """Distributed options whose process id and count come from PopDist."""

    disable = _refuse("Distributed.disable")
    setEnvVarNames = _refuse("Distributed.setEnvVarNames")
    configureProcessId = _refuse("Distributed.configureProcessId")

    def __init__(self):
        poptorch.options.OptionsDict.__init__(self, num_distributed_processes=1, distributed_process_id=0,
                                              ipuof_configs={})
        self._gcd_mappings = {}
        self.set(distributed_process_id=popdist.getInstanceIndex(),
                 num_distributed_processes=popdist.getNumInstances())


class Options(poptorch.Options):
    """poptorch.Options set from poprun's environment (see the module)."""

    useIpuId = _refuse("useIpuId")
    replicationFactor = _refuse("replicationFactor")

    def __init__(self, ipus_per_replica=None, **kwargs):
        alias = kwargs.pop("numIpusPerReplica", None)
        if kwargs:
            raise TypeError(f"popdist.poptorch.Options got unexpected arguments {sorted(kwargs)}")
        if ipus_per_replica is None:
            ipus_per_replica = alias if alias is not None else popdist.getNumIpusPerReplica()
        if not isinstance(ipus_per_replica, int) or ipus_per_replica < 1:
            raise ValueError(f"ipus_per_replica must be a positive integer, got {ipus_per_replica!r}")
        if popdist.isPopdistEnvSet() and not popdist.checkNumIpusPerReplica(ipus_per_replica):
            poptorch.logger.warning("popdist.poptorch.Options: ipus_per_replica=%d, but poprun was given "
                                    "--ipus-per-replica=%d", ipus_per_replica, popdist.getNumIpusPerReplica())
        super().__init__()
        self._distributed = _PopdistDistributedOptions()
        self.set(replication_factor=popdist.getNumLocalReplicas())
        self._ipus_per_replica_hint = ipus_per_replica
        if popdist.isPopdistEnvSet():
            self.createOrSet(ipu_id=popdist.getDeviceId(ipus_per_replica))
            self._Popart.set("enableDistributedReplicatedGraphs", True)
            self._Popart.set("globalReplicationFactor", popdist.getNumTotalReplicas())
            self._Popart.set("globalReplicaOffset", popdist.getReplicaIndexOffset())
