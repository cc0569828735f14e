"""poptorch.Options: defaults, toDict, freezing, the environment, option
files, names we do not provide, and popdist.poptorch.Options."""
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import torch

import popdist.poptorch
import poptorch

from .helpers import options, regression


class OptionsTest(unittest.TestCase):
    def test_defaults_and_to_dict(self):
        opts = poptorch.Options()
        self.assertEqual((opts.replication_factor, opts.device_iterations, opts.Training.gradient_accumulation),
                         (1, 1, 1))
        self.assertEqual(opts.Training.accumulation_and_replication_reduction_type, poptorch.ReductionType.Mean)
        self.assertEqual(opts.Training.meanAccumulationAndReplicationReductionStrategy,
                         poptorch.MeanReductionStrategy.Post)
        self.assertTrue(opts.defaultOutputMode())
        opts.Precision.setPartialsType(torch.half)
        opts.Precision.enableStochasticRounding(True)
        opts.setAvailableMemoryProportion({"IPU0": 0.3})
        opts._Popart.set("autoRecomputation", 3)
        opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(False))
        opts.enableExecutableCaching("/tmp/cache")
        opts.setExecutionStrategy(poptorch.ShardedExecution())
        values = opts.toDict()
        self.assertEqual(values["partialsTypeMatMuls"], "half")
        self.assertTrue(values["enableStochasticRounding"])
        self.assertEqual(values["available_memory_proportion"], {0: 0.3})
        self.assertEqual(values["autoRecomputation"], 3)
        self.assertEqual(values["location_optimizer"], {"onChip": 0})
        self.assertEqual(values["cachePath"], "/tmp/cache")
        self.assertEqual(values["execution_mode"], 1)
        self.assertEqual(values["replication_factor"], 1)

    def test_output_mode_and_its_older_name(self):
        opts = poptorch.Options().outputMode(poptorch.OutputMode.EveryN, 4)
        self.assertEqual((opts.output_mode, opts.output_return_period), (poptorch.OutputMode.EveryN, 4))
        self.assertIs(poptorch.AnchorMode.Sum, poptorch.OutputMode.Sum)
        opts.anchorMode(poptorch.AnchorMode.Sum)
        self.assertEqual(opts.output_mode, poptorch.OutputMode.Sum)

    def test_wrapping_freezes_the_callers_options_and_works_on_a_copy(self):
        opts = options(iterations=2)
        wrapped = poptorch.inferenceModel(torch.nn.Linear(2, 2), opts)
        for change in (lambda: opts.deviceIterations(4), lambda: opts.Training.gradientAccumulation(2),
                       lambda: opts._Popart.set("k", 1), lambda: opts.randomSeed(1),
                       lambda: wrapped.options.replicationFactor(2)):
            with self.assertRaisesRegex(AttributeError, "Can't modify frozen Options"):
                change()
        self.assertIsNot(wrapped.options, opts)
        self.assertEqual(wrapped.options.output_mode, poptorch.OutputMode.All)
        self.assertTrue(opts.defaultOutputMode())
        clone = opts.clone()
        clone.deviceIterations(4)  # a clone is not frozen
        self.assertEqual(opts.device_iterations, 2)

    def test_random_seed_seeds_torch_and_is_recorded(self):
        poptorch.Options().randomSeed(42)
        first = torch.rand(3)
        opts = poptorch.Options().randomSeed(42)
        self.assertTrue(torch.equal(first, torch.rand(3)))
        self.assertEqual(opts.random_seed, 42)

    def test_environment_at_construction(self):
        env = {"POPTORCH_CACHE_DIR": "/tmp/pt-cache", "POPTORCH_IPU_MODEL": "1",
               "POPTORCH_DEFAULT_OPTIONS": '{"deviceIterations": 5, "_Popart.set": ["dummy", 7], '
                                           '"outputMode": "OutputMode.Sum"}',
               "OMPI_COMM_WORLD_SIZE": "4", "OMPI_COMM_WORLD_RANK": "3"}
        with mock.patch.dict(os.environ, env):
            opts = poptorch.Options()
        self.assertEqual(opts._Popart.options["cachePath"], "/tmp/pt-cache")
        self.assertTrue(opts.toDict()["use_model"])
        self.assertEqual(opts.device_iterations, 5)
        self.assertEqual(opts._Popart.options["dummy"], 7)
        self.assertEqual(opts.output_mode, poptorch.OutputMode.Sum)
        self.assertEqual((opts.Distributed.processId, opts.Distributed.numProcesses), (3, 4))
        opts.Distributed.disable()
        self.assertEqual((opts.Distributed.processId, opts.Distributed.numProcesses), (0, 1))

    def test_options_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as f:
            f.write("deviceIterations(8)  # comment\n\nTraining.gradientAccumulation(4)\n"
                    "outputMode(poptorch.OutputMode.All)\nPrecision.setPartialsType(torch.half)\n")
        try:
            opts = poptorch.Options().loadFromFile(f.name)
            self.assertEqual((opts.device_iterations, opts.Training.gradient_accumulation), (8, 4))
            self.assertEqual(opts.output_mode, poptorch.OutputMode.All)
            with open(f.name, "w") as g:
                g.write("noSuchOption(1)\n")
            with self.assertRaisesRegex(poptorch.ConfigFileError, ":1: noSuchOption"):
                poptorch.Options().loadFromFile(f.name)
        finally:
            os.unlink(f.name)

    def test_type_and_name_checks(self):
        opts = poptorch.Options()
        with self.assertRaisesRegex(TypeError, "Unexpected type"):
            opts.deviceIterations(2.0)
        with self.assertRaisesRegex(AttributeError, "Invalid attribute no_such_option"):
            opts.no_such_option  # noqa: B018
        with self.assertRaisesRegex(ValueError, "Mean or poptorch.ReductionType.Sum"):
            opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.NoReduction)


class NotProvidedTest(unittest.TestCase):
    def test_poptorch_names_we_do_not_provide_raise_naming_them(self):
        for name in ("custom_op", "load", "ctc_beam_search_decoder", "profiling"):
            with self.subTest(name=name):
                with self.assertRaisesRegex(poptorch.Error, f"poptorch.{name} is not provided by open V-IPU"):
                    getattr(poptorch, name)
                self.assertFalse(hasattr(poptorch, name))
        with self.assertRaisesRegex(AttributeError, "has no attribute 'surely_not_a_name'"):
            poptorch.surely_not_a_name  # noqa: B018

    def test_executor_methods_we_do_not_provide(self):
        wrapped = poptorch.inferenceModel(torch.nn.Linear(2, 2), options())
        with self.assertRaisesRegex(poptorch.Error, "PoplarExecutor.compileAndExport is not provided"):
            wrapped.compileAndExport("model.poptorch", torch.ones(1, 2))
        self.assertEqual(wrapped.out_features, 2)  # other names reach the model

    def test_import_names_this_implementation_first(self):
        env = dict(os.environ, POPTORCH_LOG_LEVEL="INFO")
        result = subprocess.run([sys.executable, "-c", "import poptorch"], env=env, capture_output=True, text=True,
                                timeout=60, check=True)
        first = result.stderr.splitlines()[0]
        self.assertIn("open V-IPU's PopTorch for the simulated IPU pod", first)
        self.assertIn("3.4.0+openvipu", first)
        self.assertIn("CPU", first)


POPRUN_ENV = {"POPDIST_NUM_TOTAL_REPLICAS": "8", "POPDIST_NUM_LOCAL_REPLICAS": "2",
              "POPDIST_REPLICA_INDEX_OFFSET": "4", "POPDIST_NUM_IPUS_PER_REPLICA": "2"}


class PopdistOptionsTest(unittest.TestCase):
    def test_outside_poprun_process_zero_of_one(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            for key in POPRUN_ENV:
                os.environ.pop(key, None)
            opts = popdist.poptorch.Options()
        self.assertEqual((opts.replication_factor, opts.Distributed.processId, opts.Distributed.numProcesses),
                         (1, 0, 1))
        self.assertIsInstance(opts, poptorch.Options)

    def test_under_poprun(self):
        with mock.patch.dict(os.environ, POPRUN_ENV):
            opts = popdist.poptorch.Options(ipus_per_replica=2)
            dataset = poptorch.DataLoader(opts, list(range(64)), batch_size=2)
        self.assertEqual((opts.replication_factor, opts.Distributed.processId, opts.Distributed.numProcesses),
                         (2, 2, 4))
        self.assertEqual(opts._ipus_per_replica_hint, 2)
        self.assertEqual(dataset.combinedBatchSize, 4)
        self.assertEqual([int(t) for b in dataset for t in b], list(range(32, 48)))

    def test_refusals(self):
        opts = popdist.poptorch.Options()
        calls = {"useIpuId": lambda: opts.useIpuId(1),
                 "replicationFactor": lambda: opts.replicationFactor(2),
                 "Distributed.disable": lambda: opts.Distributed.disable(),
                 "Distributed.setEnvVarNames": lambda: opts.Distributed.setEnvVarNames("A", "B"),
                 "Distributed.configureProcessId": lambda: opts.Distributed.configureProcessId(0, 2)}
        for name, call in calls.items():
            with self.subTest(name=name):
                with self.assertRaises(RuntimeError) as caught:
                    call()
                self.assertEqual(str(caught.exception), f"Cannot call `{name}` with popdist.poptorch.Options")
        opts.deviceIterations(2).randomSeed(3)  # the rest is PopTorch's
        model, _ = regression()
        poptorch.trainingModel(model, opts.useIpuModel(True))


if __name__ == "__main__":
    unittest.main()
