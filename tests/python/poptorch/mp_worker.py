"""One instance of the multi-process test (test_multiprocess.py), started
by mpirun with poprun's POPDIST_* variables: trains the test's model with
popdist.poptorch.Options on this instance's replicas of a global batch,
and writes its weights and its DataLoader share to OUT_DIR/rank<i>.pt.

Usage: mp_worker.py OUT_DIR
"""
import os
import sys

import torch

import popdist
import popdist.poptorch
import poptorch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mp_common  # noqa: E402 (after the path is set)


def main():
    poptorch.setLogLevel("WARN")
    out_dir = sys.argv[1]
    opts = popdist.poptorch.Options()
    mp_common.configure(opts)
    instance, local = popdist.getInstanceIndex(), popdist.getNumLocalReplicas()
    model = mp_common.model()
    trained = poptorch.trainingModel(model, opts, mp_common.optimizer(model))
    for x in mp_common.global_batches(popdist.getNumTotalReplicas()):
        trained(mp_common.instance_rows(x, instance, local))
    loader = poptorch.DataLoader(opts, list(range(40)), batch_size=1)
    share = [int(v) for batch in loader for v in batch]
    torch.save({"weights": model.state_dict(), "share": share,
                "process": (opts.Distributed.processId, opts.Distributed.numProcesses)},
               os.path.join(out_dir, f"rank{instance}.pt"))
    trained.destroy()


if __name__ == "__main__":
    main()
