"""Training maths against plain PyTorch: replicas, accumulation, device
iterations, reductions, optimizers, the loss rules, buffers and modes."""
import copy
import unittest

import torch
import torch.nn.functional as F

import poptorch

from .helpers import assert_same_weights, data, options, plain_sgd_steps, regression


class BatchingMathsTest(unittest.TestCase):
    def test_replicas_accumulation_iterations_equal_plain_sgd(self):
        # 2 replicas × 2 accumulation × 2 device iterations × micro-batch 2:
        # each call is two weight updates, each on its iteration's 8 rows.
        model, reference = regression()
        opts = options(replicas=2, accumulation=2, iterations=2)
        trained = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.1))
        x, y = data(32)
        trained(x[:16], y[:16])
        trained(x[16:], y[16:])
        plain_sgd_steps(reference, x, y, steps=4, lr=0.1)
        assert_same_weights(self, model, reference)

    def test_accumulation_and_replicas_are_interchangeable(self):
        a, b = regression()
        x, y = data(8)
        poptorch.trainingModel(a, options(accumulation=4), torch.optim.SGD(a.parameters(), lr=0.05))(x, y)
        poptorch.trainingModel(b, options(replicas=4), torch.optim.SGD(b.parameters(), lr=0.05))(x, y)
        assert_same_weights(self, a, b)

    def test_sum_reduction_adds_micro_batch_gradients(self):
        model, reference = regression()
        opts = options(replicas=2, accumulation=2)
        opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
        trained = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.1))
        x, y = data(8)
        trained(x, y)
        # Plain torch: the gradients of the four micro-batches (2 rows each,
        # mean loss each) added, not averaged.
        reference.zero_grad()
        for i in range(4):
            _, loss = reference(x[2 * i:2 * i + 2], y[2 * i:2 * i + 2])
            loss.backward()
        with torch.no_grad():
            for p in reference.parameters():
                p -= 0.1 * p.grad
        assert_same_weights(self, model, reference)

    def test_mean_and_sum_differ_by_the_micro_batch_count(self):
        mean_model, sum_model = regression()
        x, y = data(6)
        opts = options(accumulation=3)
        poptorch.trainingModel(mean_model, opts, torch.optim.SGD(mean_model.parameters(), lr=0.3))(x, y)
        opts = options(accumulation=3)
        opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
        poptorch.trainingModel(sum_model, opts, torch.optim.SGD(sum_model.parameters(), lr=0.1))(x, y)
        assert_same_weights(self, mean_model, sum_model)

    def test_momentum_carries_over_calls(self):
        model, reference = regression()
        opts = options(accumulation=3)
        trained = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        x, y = data(9)
        for i in range(3):
            trained(x[3 * i:3 * i + 3], y[3 * i:3 * i + 3])
        plain_sgd_steps(reference, x, y, steps=3, lr=0.1, momentum=0.9)
        assert_same_weights(self, model, reference)

    def test_adam_with_replicas_matches_torch_adam(self):
        model, reference = regression()
        trained = poptorch.trainingModel(model, options(replicas=2),
                                         poptorch.optim.Adam(model.parameters(), lr=0.01))
        x, y = data(12)
        for i in range(3):
            trained(x[4 * i:4 * i + 4], y[4 * i:4 * i + 4])
        optimizer = torch.optim.Adam(reference.parameters(), lr=0.01)
        for i in range(3):
            optimizer.zero_grad()
            reference(x[4 * i:4 * i + 4], y[4 * i:4 * i + 4])[1].backward()
            optimizer.step()
        assert_same_weights(self, model, reference)

    def test_loss_scaling_changes_nothing_in_fp32(self):
        a, b = regression()
        x, y = data(4)
        poptorch.trainingModel(a, options(), poptorch.optim.SGD(a.parameters(), lr=0.1, loss_scaling=1024.0))(x, y)
        poptorch.trainingModel(b, options(), poptorch.optim.SGD(b.parameters(), lr=0.1))(x, y)
        assert_same_weights(self, a, b, atol=0)

    def test_max_grad_norm_clips_the_reduced_gradient(self):
        model, reference = regression()
        x, y = data(4)
        poptorch.trainingModel(model, options(accumulation=2),
                               poptorch.optim.SGD(model.parameters(), lr=0.5, max_grad_norm=0.05))(x, y)
        reference(x, y)[1].backward()
        torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.05)
        with torch.no_grad():
            for p in reference.parameters():
                p -= 0.5 * p.grad
        assert_same_weights(self, model, reference)

    def test_default_optimizer_is_sgd_with_lr_0_01(self):
        model, reference = regression()
        x, y = data(4)
        poptorch.trainingModel(model, options())(x, y)
        plain_sgd_steps(reference, x, y, steps=1, lr=0.01)
        assert_same_weights(self, model, reference)


class OptimizerUpdatesTest(unittest.TestCase):
    def test_host_changes_need_set_optimizer(self):
        model, reference = regression()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        trained = poptorch.trainingModel(model, options(), optimizer)
        x, y = data(8)
        trained(x[:4], y[:4])
        optimizer.param_groups[0]["lr"] = 0.5
        with self.assertLogs("poptorch", "WARNING") as logs:
            trained(x[4:], y[4:])  # still 0.1 on the IPUs
        self.assertIn("setOptimizer", "".join(logs.output))
        plain_sgd_steps(reference, x, y, steps=2, lr=0.1)
        assert_same_weights(self, model, reference)
        trained.setOptimizer(optimizer)
        trained(x[:4], y[:4])
        plain = torch.optim.SGD(reference.parameters(), lr=0.5)
        plain.zero_grad()
        reference(x[:4], y[:4])[1].backward()
        plain.step()
        assert_same_weights(self, model, reference)

    def test_new_optimizer_object_continues_the_state(self):
        model, reference = regression()
        trained = poptorch.trainingModel(model, options(), torch.optim.SGD(model.parameters(), lr=0.1,
                                                                            momentum=0.9))
        x, y = data(8)
        trained(x[:4], y[:4])
        trained.setOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        trained(x[4:], y[4:])
        plain_sgd_steps(reference, x, y, steps=2, lr=0.1, momentum=0.9)
        assert_same_weights(self, model, reference)

    def test_unsupported_optimizers_are_refused(self):
        model, _ = regression()
        with self.assertRaisesRegex(poptorch.Error, "Unsupported optimizer type"):
            poptorch.trainingModel(model, options(), torch.optim.Adagrad(model.parameters()))
        with self.assertRaisesRegex(ValueError, "non-amsgrad"):
            poptorch.trainingModel(model, options(), torch.optim.Adam(model.parameters(), amsgrad=True))


class LossRulesTest(unittest.TestCase):
    def _train(self, forward, rows=4):
        class Model(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(4, 3)

            def forward(self, x, y):
                return forward(self.linear(x), y)

        torch.manual_seed(0)
        model = Model()
        reference = copy.deepcopy(model)
        trained = poptorch.trainingModel(model, options(), torch.optim.SGD(model.parameters(), lr=0.1))
        x, y = data(rows)
        return model, reference, trained, x, y

    def _reference_step(self, reference, loss_of, x, y):
        loss = loss_of(reference.linear(x), y)
        loss.backward()
        with torch.no_grad():
            for p in reference.parameters():
                p -= 0.1 * p.grad

    def test_no_loss_is_refused_and_nothing_is_compiled(self):
        model, _, trained, x, y = self._train(lambda out, y: (out, (out - y).pow(2).mean()))
        with self.assertRaisesRegex(poptorch.Error, "Couldn't find a loss"):
            trained(x, y)
        self.assertFalse(trained.isCompiled())
        self.assertFalse(trained.isAttachedToDevice())

    def test_two_independent_losses_are_refused(self):
        _, _, trained, x, y = self._train(lambda out, y: F.mse_loss(out, y) + F.l1_loss(out, y))
        with self.assertRaisesRegex(poptorch.Error, "Multiple independent losses found"):
            trained(x, y)

    def test_losses_joined_by_identity_loss_train_their_sum(self):
        def joined(out, y):
            return poptorch.identity_loss(F.mse_loss(out, y) + F.l1_loss(out, y), reduction="mean")
        model, reference, trained, x, y = self._train(joined)
        trained(x, y)
        self._reference_step(reference, lambda o, t: F.mse_loss(o, t) + F.l1_loss(o, t), x, y)
        assert_same_weights(self, model, reference)

    def test_a_metric_computed_without_gradients_is_not_a_loss(self):
        def with_metric(out, y):
            with torch.no_grad():
                metric = F.l1_loss(out, y)
            return F.mse_loss(out, y), metric
        model, reference, trained, x, y = self._train(with_metric)
        trained(x, y)
        self._reference_step(reference, F.mse_loss, x, y)
        assert_same_weights(self, model, reference)

    def test_loss_functions_are_torchs_own_outside_a_run(self):
        original = F.mse_loss
        _, _, trained, x, y = self._train(lambda out, y: F.mse_loss(out, y))
        trained(x, y)
        self.assertIs(F.mse_loss, original)
        self.assertFalse(hasattr(F.cross_entropy, "__wrapped__"))

    def test_loss_need_not_be_an_output(self):
        model, reference, trained, x, y = self._train(lambda out, y: out + 0 * torch.nn.MSELoss()(out, y))
        trained(x, y)
        self._reference_step(reference, F.mse_loss, x, y)
        assert_same_weights(self, model, reference)

    def test_identity_loss_reductions(self):
        for reduction, plain in (("sum", lambda d: d.sum()), ("mean", lambda d: d.mean()),
                                 ("none", lambda d: d.sum())):
            with self.subTest(reduction=reduction):
                model, reference, trained, x, y = self._train(
                    lambda out, y: poptorch.identity_loss((out - y) ** 2, reduction=reduction))
                out = trained(x, y)
                expected_shape = torch.Size([4, 3]) if reduction == "none" else torch.Size([])
                self.assertEqual(out.shape, expected_shape)
                self._reference_step(reference, lambda o, t: plain((o - t) ** 2), x, y)
                assert_same_weights(self, model, reference)
        with self.assertRaisesRegex(poptorch.Error, "Unsupported reduction type"):
            poptorch.identity_loss(torch.ones(2), reduction="max")

    def test_cross_entropy_with_long_labels(self):
        torch.manual_seed(0)
        net = torch.nn.Linear(4, 5)
        reference = copy.deepcopy(net)

        class Classifier(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = net
                self.loss = torch.nn.CrossEntropyLoss()

            def forward(self, x, labels):
                logits = self.net(x)
                return logits.argmax(-1), self.loss(logits, labels)

        x = torch.randn(6, 4)
        labels = torch.tensor([0, 1, 2, 3, 4, 0])
        trained = poptorch.trainingModel(Classifier(), options(replicas=3),
                                         torch.optim.SGD(net.parameters(), lr=0.2))
        predictions, loss = trained(x, labels)
        self.assertEqual(predictions.dtype, torch.int32)  # long outputs come back int32
        self.assertEqual(loss.shape, torch.Size([3]))  # Final: one loss per replica
        F.cross_entropy(reference(x), labels).backward()
        with torch.no_grad():
            for p in reference.parameters():
                p -= 0.2 * p.grad
        assert_same_weights(self, net, reference)


class ModelStateTest(unittest.TestCase):
    def test_train_eval_state_is_fixed_when_compiled(self):
        class Scaled(torch.nn.Module):
            def forward(self, x):
                return x * (2.0 if self.training else 1.0)

        model = Scaled().eval()
        wrapped = poptorch.inferenceModel(model, options())
        self.assertTrue(torch.equal(wrapped(torch.ones(2)), torch.ones(2)))
        model.train()
        self.assertTrue(torch.equal(wrapped(torch.ones(2)), torch.ones(2)))
        self.assertTrue(model.training)  # the host's own state is left as set

    def test_each_replica_keeps_its_own_batchnorm_statistics(self):
        torch.manual_seed(0)

        class Normed(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.norm = torch.nn.BatchNorm1d(3)
                self.linear = torch.nn.Linear(3, 1)

            def forward(self, x, y):
                out = self.linear(self.norm(x))
                return out, F.mse_loss(out, y)

        model = Normed()
        norm_of_replica_0 = copy.deepcopy(model.norm)
        x, y = torch.randn(8, 3) * 3 + 1, torch.randn(8, 1)
        trained = poptorch.trainingModel(model, options(replicas=2, iterations=2),
                                         torch.optim.SGD(model.parameters(), lr=0.0))
        trained(x, y)
        # Layout [iterations, accumulation, replicas, micro-batch]: replica 0
        # has rows 0-1 and 4-5.
        norm_of_replica_0(x[0:2])
        norm_of_replica_0(x[4:6])
        self.assertTrue(torch.allclose(model.norm.running_mean, norm_of_replica_0.running_mean, atol=1e-6))
        self.assertEqual(int(model.norm.num_batches_tracked), 2)

    def test_inference_buffer_changes_reach_the_host_on_copy_weights_to_host(self):
        class Counter(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("count", torch.zeros(1))

            def forward(self, x):
                self.count += 1
                return x + self.count

        model = Counter()
        wrapped = poptorch.inferenceModel(model, options(iterations=3))
        out = wrapped(torch.zeros(3, 1))
        self.assertEqual(out.flatten().tolist(), [1.0, 2.0, 3.0])
        self.assertEqual(float(model.count), 0.0)
        wrapped.copyWeightsToHost()
        self.assertEqual(float(model.count), 3.0)

    def test_outputs_refuse_backward(self):
        model, _ = regression()
        trained = poptorch.trainingModel(model, options())
        out, loss = trained(*data(2))
        with self.assertRaisesRegex(poptorch.Error, "backward\\(\\) cannot be called"):
            loss.backward()

    def test_a_model_is_trained_by_one_wrapper_at_a_time(self):
        model, _ = regression()
        first = poptorch.trainingModel(model, options())
        first(*data(2))
        with self.assertRaisesRegex(RuntimeError, "already been wrapped"):
            poptorch.trainingModel(model, options())
        first.destroy()
        poptorch.trainingModel(first, options())  # a wrapper stands for its model

    def test_an_error_in_a_run_detaches_and_the_next_call_attaches(self):
        class Fragile(torch.nn.Module):
            fail = False

            def forward(self, x):
                if Fragile.fail:
                    raise ValueError("broken input")
                return x * 2

        wrapped = poptorch.inferenceModel(Fragile(), options())
        wrapped(torch.ones(2))
        self.assertTrue(wrapped.isAttachedToDevice())
        Fragile.fail = True
        with self.assertRaisesRegex(ValueError, "broken input"):
            wrapped(torch.ones(2))
        self.assertFalse(wrapped.isAttachedToDevice())
        Fragile.fail = False
        self.assertTrue(torch.equal(wrapped(torch.ones(2)), torch.full((2,), 2.0)))
        self.assertTrue(wrapped.isAttachedToDevice())


if __name__ == "__main__":
    unittest.main()
