"""The pod hook: the IPU Model, the refusal without a device, and the
contract with the native module (a fake poptorch._pod here): attaching,
per-step times, faults, the workload description and the summary."""
import os
import unittest
from unittest import mock

import torch

import poptorch
from poptorch import _device

from .helpers import data, options, regression


class FakeAttachment:
    """What the contract asks of poptorch._pod.Attachment."""

    def __init__(self, pod, num_ipus, device_id=-1):
        pod.device_ids.append(device_id)
        if num_ipus > pod.ipus:
            raise RuntimeError(f"partition p1 has {pod.ipus} IPUs, {num_ipus} asked")
        self.pod = pod
        self.num_ipus = num_ipus
        self.description = f"partition p1, GCD 0, {num_ipus} IPUs on 1 machine"
        pod.attached += 1

    def run(self, workload, steps):
        self.pod.runs.append((workload, steps))
        if self.pod.fault:
            raise RuntimeError("agent ag1: IPU 2 error")
        return [0.001 * (i + 1) for i in range(steps)]

    def detach(self):
        self.pod.attached -= 1


class FakePod:
    def __init__(self, ipus=4):
        self.ipus = ipus
        self.attached = 0
        self.runs = []
        self.device_ids = []
        self.fault = False

    def configured(self):
        return True

    def available_ipus(self):
        return self.ipus

    def Attachment(self, num_ipus, **kwargs):  # noqa: N802 (the contract's name)
        return FakeAttachment(self, num_ipus, **kwargs)


class NoPodTest(unittest.TestCase):
    def setUp(self):
        patcher = mock.patch.object(_device, "_native", None)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_without_a_device_compiling_is_refused_saying_how_to_get_one(self):
        with mock.patch.dict(os.environ, {"POPTORCH_IPU_MODEL": "0", "IPUOF_VIPU_API_PARTITION_ID": "",
                                          "IPUOF_CONFIG_PATH": "", "HOME": "/nonexistent"}):
            model, _ = regression()
            trained = poptorch.trainingModel(model, poptorch.Options())
            with self.assertRaises(poptorch.Error) as caught:
                trained(*data(2))
            self.assertFalse(poptorch.ipuHardwareIsAvailable())
        message = str(caught.exception)
        for words in ("No IPU device is available", "poprun", "IPUOF_VIPU_API_PARTITION_ID", "useIpuModel(True)"):
            self.assertIn(words, message)
        self.assertFalse(trained.isCompiled())

    def test_a_configured_attachment_without_the_pod_module_says_so(self):
        with mock.patch.dict(os.environ, {"IPUOF_VIPU_API_PARTITION_ID": "p1", "POPTORCH_IPU_MODEL": "0"}):
            self.assertTrue(_device.attachment_configured())
            self.assertTrue(poptorch.ipuHardwareIsAvailable())
            wrapped = poptorch.inferenceModel(torch.nn.Linear(2, 2), poptorch.Options())
            with self.assertRaisesRegex(poptorch.Error, "built without its pod module"):
                wrapped(torch.ones(1, 2))

    def test_ipu_model_computes_without_timing(self):
        model, _ = regression()
        trained = poptorch.trainingModel(model, options(iterations=2))
        trained(*data(4))
        self.assertEqual(trained.getLatency(), (0.0, 0.0, 0.0))
        summary = trained.summary()
        self.assertIn("IPU time not modelled (IPU Model: CPU only)", str(summary))
        self.assertEqual((summary.steps, summary.samples, summary.ipu_time_s), (2, 4, None))
        with self.assertRaisesRegex(poptorch.Error, "Cycle count logging is disabled"):
            trained.cycleCount()


class PodTest(unittest.TestCase):
    def setUp(self):
        self.pod = FakePod()
        patcher = mock.patch.object(_device, "_native", self.pod)
        patcher.start()
        self.addCleanup(patcher.stop)

    def _pod_options(self, **kwargs):
        opts = poptorch.Options()
        if "replicas" in kwargs:
            opts.replicationFactor(kwargs["replicas"])
        if "iterations" in kwargs:
            opts.deviceIterations(kwargs["iterations"])
        return opts

    def test_attach_run_and_report(self):
        self.assertTrue(poptorch.ipuHardwareIsAvailable(4))
        self.assertFalse(poptorch.ipuHardwareIsAvailable(8))
        self.assertEqual(poptorch.ipuHardwareVersion(), 2)
        model, _ = regression()
        trained = poptorch.trainingModel(model, self._pod_options(replicas=2, iterations=3).logCycleCount(True))
        trained(*data(12))
        self.assertTrue(trained.isAttachedToDevice())
        self.assertEqual(self.pod.attached, 1)
        workload, steps = self.pod.runs[-1]
        self.assertEqual(steps, 3)
        minimum, maximum, mean = trained.getLatency()
        self.assertAlmostEqual(minimum, 0.001)
        self.assertAlmostEqual(maximum, 0.003)
        self.assertAlmostEqual(mean, 0.002)
        self.assertEqual(trained.cycleCount(), round(0.003 * 1.33e9))
        summary = trained.summary()
        self.assertEqual((summary.steps, summary.samples), (3, 12))
        self.assertAlmostEqual(summary.ipu_time_s, 0.006)
        self.assertAlmostEqual(summary.ipu_samples_per_s, 2000.0)
        self.assertIn("partition p1, GCD 0, 2 IPUs on 1 machine", str(summary))
        with self.assertLogs("poptorch", "INFO") as logs:
            trained.destroy()
        self.assertIn("samples/s on the IPUs", "".join(logs.output))
        self.assertEqual(self.pod.attached, 0)
        self.assertFalse(trained.isCompiled())

    def test_workload_description(self):
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
                self.relu = torch.nn.ReLU()
                self.fc = torch.nn.Linear(8 * 4 * 4, 10)
                self.loss = torch.nn.CrossEntropyLoss()

            def forward(self, x, labels):
                out = self.fc(self.relu(self.conv(x)).flatten(1))
                return out, self.loss(out, labels)

        opts = self._pod_options(replicas=2, iterations=2)
        opts.Training.gradientAccumulation(2)
        model = Net()
        trained = poptorch.trainingModel(model, opts, poptorch.optim.LAMB(model.parameters()))
        trained(torch.randn(16, 3, 4, 4), torch.zeros(16, dtype=torch.long))
        workload, _ = self.pod.runs[-1]
        self.assertEqual(workload["name"], "Net")
        self.assertEqual(workload["params"], sum(p.numel() for p in model.parameters()))
        # Micro-batch 2: the convolution is a (2·16) × (3·9) × 8 GEMM.
        self.assertEqual(workload["gemms"], [[2, 128, 10, 1], [32, 27, 8, 1]])
        self.assertEqual(workload["ops"], 2)  # ReLU and the loss
        self.assertEqual(workload["elementwise_bytes"], 4.0 * (2 * 8 * 16 + 1))
        self.assertEqual(workload["input_bytes_per_sample"], 3 * 4 * 4 * 4 + 4)  # labels travel as int32
        expected = {"micro_batch": 2, "grad_accum": 2, "device_iterations": 2, "replicas": 2, "total_replicas": 2,
                    "ipus_per_replica": 1, "optimizer": "lamb", "training": True}
        self.assertEqual({k: workload[k] for k in expected}, expected)

    def test_a_fault_in_a_run_detaches_and_leaves_the_weights(self):
        model, _ = regression()
        before = [p.clone() for p in model.parameters()]
        trained = poptorch.trainingModel(model, self._pod_options())
        trained.compile(*data(2))
        self.pod.fault = True
        with self.assertRaisesRegex(poptorch.Error, "agent ag1: IPU 2 error"):
            trained(*data(2))
        self.assertFalse(trained.isAttachedToDevice())
        self.assertEqual(self.pod.attached, 0)
        for p, q in zip(model.parameters(), before):
            self.assertTrue(torch.equal(p, q))
        self.pod.fault = False
        trained(*data(2))
        self.assertTrue(trained.isAttachedToDevice())

    def test_a_refused_attachment_compiles_nothing(self):
        wrapped = poptorch.inferenceModel(torch.nn.Linear(2, 2), self._pod_options(replicas=8))
        with self.assertRaisesRegex(poptorch.Error, "Could not attach to 8 IPU\\(s\\): partition p1 has 4 IPUs"):
            wrapped(torch.ones(8, 2))
        self.assertFalse(wrapped.isCompiled())
        self.assertEqual(self.pod.attached, 0)

    def test_detach_and_attach_again(self):
        wrapped = poptorch.inferenceModel(torch.nn.Linear(2, 2), self._pod_options())
        with self.assertRaisesRegex(poptorch.Error, "not been compiled"):
            wrapped.detachFromDevice()
        wrapped(torch.ones(1, 2))
        wrapped.detachFromDevice()
        self.assertEqual(self.pod.attached, 0)
        with self.assertRaisesRegex(poptorch.Error, "Device is not attached"):
            wrapped.detachFromDevice()
        wrapped.attachToDevice()
        with self.assertRaisesRegex(poptorch.Error, "Device is already attached"):
            wrapped.attachToDevice()
        wrapped(torch.ones(1, 2))
        self.assertEqual(self.pod.attached, 1)
        wrapped.destroy()

    def test_the_chosen_device_is_passed_on(self):
        poptorch.inferenceModel(torch.nn.Linear(2, 2), self._pod_options())(torch.ones(1, 2))
        poptorch.inferenceModel(torch.nn.Linear(2, 2), self._pod_options().useIpuId(5))(torch.ones(1, 2))
        self.assertEqual(self.pod.device_ids, [-1, 5])

    def test_replicas_are_attached_in_powers_of_two(self):
        wrapped = poptorch.inferenceModel(torch.nn.Linear(2, 2), self._pod_options(replicas=3))
        with self.assertRaisesRegex(poptorch.Error, "autoRoundNumIPUs"):
            wrapped(torch.ones(3, 2))
        opts = self._pod_options(replicas=3).autoRoundNumIPUs(True)
        wrapped = poptorch.inferenceModel(torch.nn.Linear(2, 2), opts)
        wrapped(torch.ones(3, 2))
        self.assertIn("4 IPUs", wrapped.summary().device)
        wrapped.destroy()


if __name__ == "__main__":
    unittest.main()
