"""What a launched Python instance sees through popdist: every getter as
NAME=VALUE, and with --collectives the results of the collectives."""
import sys

import popdist

for name in ["isPopdistEnvSet", "getNumTotalReplicas", "getNumLocalReplicas",
             "getNumIpusPerReplica", "getReplicaIndexOffset", "getNumInstances",
             "getInstanceIndex", "getLocalInstanceIndex", "isUniformReplicasPerInstance",
             "getDeviceId"]:
    print(f"popdist.{name}={int(getattr(popdist, name)())}")
print(f"popdist.checkNumIpusPerReplica(1)={int(popdist.checkNumIpusPerReplica(1))}")
print(f"popdist.getAutoReportDirectory={popdist.getAutoReportDirectory()}")
if "--collectives" in sys.argv:
    popdist.init()
    index = popdist.getInstanceIndex()
    print(f"collectives.allReduceSum={popdist.allReduceSum(index + 1)}")
    print(f"collectives.allGather={','.join(str(v) for v in popdist.allGather(index))}")
    print(f"collectives.broadcast={popdist.broadcast(42.5 if index == 0 else 0)}")
    sub = popdist.execute_on_instances({0, 1}, lambda: popdist.allReduceSum(10 + index))
    print(f"collectives.executeOnInstances={sub if sub is not None else 'none'}")
