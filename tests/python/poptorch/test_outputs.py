"""Output modes (shapes and values) for training and inference, input
layout and types, and the refusals of contradictory options and inputs."""
import unittest

import torch

import poptorch

from .helpers import data, options, regression

MODES = (poptorch.OutputMode.All, poptorch.OutputMode.EveryN, poptorch.OutputMode.Final,
         poptorch.OutputMode.Sum)


def linear():
    torch.manual_seed(0)
    return torch.nn.Linear(3, 2)


class InferenceOutputsTest(unittest.TestCase):
    def _run(self, mode, replicas=2, iterations=2, period=None, rows=4):
        model = linear()
        opts = options(replicas=replicas, iterations=iterations)
        if mode is not None:
            opts.outputMode(mode, period)
        x = torch.randn(rows, 3)
        return poptorch.inferenceModel(model, opts)(x), model(x).detach()

    def test_default_is_all_in_input_order(self):
        out, native = self._run(None)
        self.assertEqual(out.shape, torch.Size([4, 2]))
        self.assertTrue(torch.allclose(out, native))

    def test_every_n_returns_every_nth_micro_batch(self):
        out, native = self._run(poptorch.OutputMode.EveryN, replicas=1, iterations=4, period=2)
        self.assertTrue(torch.allclose(out, native[[1, 3]]))

    def test_final_returns_each_replicas_last_micro_batch(self):
        # Layout [iterations, replicas, micro-batch]: the last iteration is rows 2, 3.
        out, native = self._run(poptorch.OutputMode.Final)
        self.assertTrue(torch.allclose(out, native[2:4]))

    def test_sum_adds_each_replicas_micro_batches(self):
        out, native = self._run(poptorch.OutputMode.Sum)
        self.assertTrue(torch.allclose(out, torch.stack([native[0] + native[2], native[1] + native[3]])))

    def test_scalar_outputs_become_vectors_only_when_several(self):
        class Total(torch.nn.Module):
            def forward(self, x):
                return x.sum()

        several = poptorch.inferenceModel(Total(), options(iterations=3))(torch.ones(6, 2))
        self.assertEqual(several.tolist(), [4.0, 4.0, 4.0])
        one = poptorch.inferenceModel(Total(), options())(torch.ones(6, 2))
        self.assertEqual(one.shape, torch.Size([]))
        final = poptorch.inferenceModel(Total(), options(iterations=3).outputMode(poptorch.OutputMode.Final))
        self.assertEqual(final(torch.ones(6, 2)).shape, torch.Size([]))

    def test_types_as_the_ipu_returns_them(self):
        class Typed(torch.nn.Module):
            def forward(self, x, n):
                return x * 2, n + 1

        out, count = poptorch.inferenceModel(Typed(), options())(torch.ones(2, dtype=torch.float64),
                                                                torch.tensor([1, 2]))
        self.assertEqual(out.dtype, torch.float32)
        self.assertEqual(count.dtype, torch.int32)
        self.assertEqual(count.tolist(), [2, 3])


class TrainingOutputsTest(unittest.TestCase):
    SHAPES = {  # 2 replicas × 2 accumulation × 2 iterations, micro-batch 1
        poptorch.OutputMode.All: ([8, 3], [8]),
        poptorch.OutputMode.EveryN: ([4, 3], [4]),
        poptorch.OutputMode.Final: ([2, 3], [2]),
        poptorch.OutputMode.Sum: ([2, 3], [2]),
    }

    def _train(self, mode, period=None, lr=0.1):
        model, reference = regression()
        opts = options(replicas=2, accumulation=2, iterations=2)
        if mode is not None:
            opts.outputMode(mode, period)
        trained = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=lr))
        x, y = data(8)
        out, loss = trained(x, y)
        return out, loss, reference, x, y

    def test_shapes_of_every_mode(self):
        for mode, (out_shape, loss_shape) in self.SHAPES.items():
            with self.subTest(mode=mode.name):
                out, loss, _, _, _ = self._train(mode, period=2)
                self.assertEqual(list(out.shape), out_shape)
                self.assertEqual(list(loss.shape), loss_shape)

    def test_default_is_final(self):
        out, loss, _, _, _ = self._train(None)
        self.assertEqual(list(out.shape), [2, 3])
        self.assertEqual(list(loss.shape), [2])

    def test_one_replica_one_micro_batch_keeps_a_scalar_loss(self):
        model, _ = regression()
        _, loss = poptorch.trainingModel(model, options())(*data(3))
        self.assertEqual(loss.shape, torch.Size([]))

    def test_all_gives_each_micro_batch_loss_before_its_update(self):
        # With lr 0 the weights stay, so every micro-batch's loss is the
        # plain model's on those rows, in input order.
        _, loss, reference, x, y = self._train(poptorch.OutputMode.All, lr=0.0)
        expected = torch.stack([reference(x[i:i + 1], y[i:i + 1])[1] for i in range(8)]).detach()
        self.assertTrue(torch.allclose(loss, expected, atol=1e-6))
        _, summed, reference, x, y = self._train(poptorch.OutputMode.Sum, lr=0.0)
        replica = [sum(expected[i] for i in range(r, 8, 2)) for r in range(2)]
        self.assertTrue(torch.allclose(summed, torch.stack(replica), atol=1e-5))


class RefusalsTest(unittest.TestCase):
    def test_inference_refuses_gradient_accumulation_and_leaves_options_unfrozen(self):
        opts = options(accumulation=2)
        with self.assertRaisesRegex(poptorch.Error, "gradientAccumulation to 1"):
            poptorch.inferenceModel(linear(), opts)
        opts.Training.gradientAccumulation(1)  # not frozen by the refusal
        poptorch.inferenceModel(linear(), opts)

    def test_every_n_period_must_divide_the_micro_batches(self):
        opts = options(iterations=2, accumulation=2).outputMode(poptorch.OutputMode.EveryN, 3)
        model, _ = regression()
        with self.assertRaisesRegex(poptorch.Error, "return period \\(3\\) must divide"):
            poptorch.trainingModel(model, opts)
        with self.assertRaisesRegex(ValueError, "output_return_period"):
            options().outputMode(poptorch.OutputMode.EveryN)

    def test_zero_replicas_are_refused(self):
        with self.assertRaisesRegex(poptorch.Error, "replicationFactor must be a positive integer"):
            poptorch.inferenceModel(linear(), options(replicas=0))

    def test_batch_must_divide_and_nothing_is_compiled(self):
        wrapped = poptorch.inferenceModel(linear(), options(replicas=2, iterations=2))
        with self.assertRaisesRegex(poptorch.Error, "Invalid batch dimension.*must be a multiple of"):
            wrapped(torch.ones(6, 3))
        self.assertFalse(wrapped.isCompiled())
        self.assertEqual(wrapped(torch.ones(8, 3)).shape, torch.Size([8, 2]))

    def test_later_calls_must_match_the_compiled_inputs(self):
        wrapped = poptorch.inferenceModel(linear(), options())
        wrapped(torch.ones(4, 3))
        with self.assertRaisesRegex(poptorch.Error, "Shape mismatch for input"):
            wrapped(torch.ones(2, 3))
        with self.assertRaisesRegex(poptorch.Error, "Number of positional arguments mismatch"):
            wrapped(torch.ones(4, 3), torch.ones(1))
        self.assertTrue(wrapped.isAttachedToDevice())  # a refused input is not a failed run


if __name__ == "__main__":
    unittest.main()
