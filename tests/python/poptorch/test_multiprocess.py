"""Several instances, as poprun runs them: 2 instances × 2 replicas end with
the weights of 1 instance × 4 replicas on the same global batches, and
every instance ends with the same weights. The instances are started with
Open MPI's mpirun, one app context per instance with poprun's POPDIST_*
variables; the example program runs the same way."""
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch

import poptorch

from . import mp_common
from .helpers import assert_same_weights

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
DEADLINE_S = 120


def _mpi_missing():
    if shutil.which("mpirun") is None:
        return "mpirun (Open MPI) is not installed"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py (python3-mpi4py) is not installed"
    return None


def poprun_like(command, instances, replicas, extra_env=None):
    """mpirun with one app context per instance, each with the POPDIST_*
    variables poprun would give it."""
    local = replicas // instances
    env = dict(os.environ, POPDIST_NUM_TOTAL_REPLICAS=str(replicas), POPDIST_NUM_LOCAL_REPLICAS=str(local),
               POPDIST_NUM_IPUS_PER_REPLICA="1", POPTORCH_IPU_MODEL="1", POPTORCH_LOG_LEVEL="WARN",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")
    env.update(extra_env or {})
    args = ["mpirun", "--oversubscribe"]
    for instance in range(instances):
        if instance:
            args.append(":")
        args += ["-n", "1", "-x", f"POPDIST_REPLICA_INDEX_OFFSET={instance * local}", "-x", "PYTHONPATH"]
        args += command
    return subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=DEADLINE_S)


class MultiProcessTest(unittest.TestCase):
    def setUp(self):
        # As the C++ tests do (cannot_run.h): skip saying why, or fail where
        # every test must run.
        missing = _mpi_missing()
        if missing and os.environ.get("VIPU_TESTS_MUST_RUN") == "1":
            self.fail(f"cannot run here, but VIPU_TESTS_MUST_RUN=1 says every test must run: {missing}")
        if missing:
            self.skipTest(f"skipped: {missing}")

    def test_two_instances_train_as_one_with_all_replicas(self):
        out_dir = tempfile.mkdtemp(prefix="poptorch-mp-")
        self.addCleanup(shutil.rmtree, out_dir, True)
        result = poprun_like([sys.executable, os.path.join(HERE, "mp_worker.py"), out_dir], instances=2, replicas=4)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        ranks = [torch.load(os.path.join(out_dir, f"rank{i}.pt")) for i in range(2)]
        self.assertEqual([r["process"] for r in ranks], [(0, 2), (1, 2)])
        # Combined batch 1 × 2 × 2 × 2 = 8 per instance; 8·⌊40/16⌋ = 16 each.
        self.assertEqual([r["share"] for r in ranks], [list(range(16)), list(range(16, 32))])
        for name, value in ranks[0]["weights"].items():
            self.assertTrue(torch.equal(value, ranks[1]["weights"][name]), f"{name} differs between instances")

        reference = mp_common.model()
        opts = mp_common.configure(poptorch.Options().replicationFactor(4))
        trained = poptorch.trainingModel(reference, opts, mp_common.optimizer(reference))
        for x in mp_common.global_batches(4):
            trained(x)
        instance = mp_common.model()
        instance.load_state_dict(ranks[0]["weights"])
        assert_same_weights(self, instance, reference, atol=1e-6)
        self.assertFalse(torch.equal(instance[0].weight, mp_common.model()[0].weight))  # it did train

    def test_two_processes_without_mpi_launching_them_are_refused(self):
        # In a process of its own: MPI is initialised there, not in this one.
        program = ("import torch, poptorch\n"
                   "opts = poptorch.Options().useIpuModel(True)\n"
                   "opts.Distributed.configureProcessId(1, 2)\n"
                   "class Model(torch.nn.Module):\n"
                   "    def __init__(self):\n"
                   "        super().__init__()\n"
                   "        self.linear = torch.nn.Linear(2, 1)\n"
                   "    def forward(self, x):\n"
                   "        return poptorch.identity_loss(self.linear(x), reduction='sum')\n"
                   "model = Model()\n"
                   "trained = poptorch.trainingModel(model, opts)\n"
                   "try:\n"
                   "    trained(torch.ones(1, 2))\n"
                   "except poptorch.Error as e:\n"
                   "    print(e, trained.isCompiled())\n")
        result = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True,
                                timeout=DEADLINE_S, env=dict(os.environ, POPTORCH_LOG_LEVEL="WARN"))
        self.assertIn("process 1 of 2 (Distributed), but MPI makes it rank 0 of 1", result.stdout, result.stderr)
        self.assertTrue(result.stdout.strip().endswith("False"), result.stdout)

    def test_the_example_runs_unchanged_under_two_instances(self):
        result = poprun_like([sys.executable, os.path.join(ROOT, "poptorch", "examples", "train.py"),
                              "--epochs", "1", "--samples", "128"], instances=2, replicas=4)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        for instance in range(2):
            self.assertIn(f"[instance {instance}/2] 2 local replicas", result.stdout)
            self.assertIn(f"[instance {instance}/2] summary: trainingModel Classifier", result.stdout)


if __name__ == "__main__":
    unittest.main()
