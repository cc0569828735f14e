"""Annotations and IPU operations: no effect on the maths, the IPUs a
replica takes, the pipelining rules, and the operations' results."""
import contextlib
import io
import unittest

import torch
import torch.nn.functional as F

import poptorch

from .helpers import assert_same_weights, data, options


class Staged(torch.nn.Module):
    """Two linear layers on two IPUs, annotated three different ways."""

    def __init__(self, style):
        super().__init__()
        torch.manual_seed(0)
        self.first = torch.nn.Linear(4, 4)
        self.second = torch.nn.Linear(4, 3)
        self.style = style
        if style == "begin":
            poptorch.BeginBlock(self.first, "a", ipu_id=0)
            poptorch.BeginBlock(self.second, "b", ipu_id=1)

    @poptorch.BlockFunction("b", ipu_id=1)
    def _second(self, x):
        return self.second(x)

    def forward(self, x, y):
        if self.style == "with":
            with poptorch.Block("a", ipu_id=0):
                x = self.first(x)
            with poptorch.Block("b", ipu_id=1):
                out = self.second(x)
        elif self.style == "function":
            out = self._second(self.first(x))
        else:
            out = self.second(self.first(x))
        out = poptorch.recomputationCheckpoint(out)
        out = poptorch.set_available_memory(out, 0.3)
        return out, F.mse_loss(out, y)


class BlocksTest(unittest.TestCase):
    def test_blocks_change_nothing_but_the_ipus_of_a_replica(self):
        x, y = data(6)
        results = {}
        for style in ("none", "with", "begin", "function"):
            model = Staged(style)
            opts = options(accumulation=3)
            trained = poptorch.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=0.1))
            trained(x, y)
            results[style] = model
            expected = 1 if style == "none" else 2
            self.assertEqual(trained._executable.workload["ipus_per_replica"], expected)
        for style in ("with", "begin", "function"):
            assert_same_weights(self, results[style], results["none"])

    def test_pipelined_training_needs_accumulation_of_twice_the_stages_less_one(self):
        model = Staged("with")
        trained = poptorch.trainingModel(model, options(accumulation=2))
        with self.assertRaisesRegex(poptorch.Error, "at least 2 × 2 − 1 = 3"):
            trained(*data(2))
        self.assertFalse(trained.isCompiled())
        trained.destroy()
        opts = options(accumulation=2).setExecutionStrategy(poptorch.ShardedExecution())
        poptorch.trainingModel(Staged("with"), opts)(*data(2))

    def test_pipelined_inference_needs_as_many_iterations_as_stages(self):
        with self.assertRaisesRegex(poptorch.Error, "at least 2 device iterations"):
            poptorch.inferenceModel(Staged("with"), options())(*data(1))
        poptorch.inferenceModel(Staged("with"), options(iterations=2))(*data(2))

    def test_begin_block_once_per_module(self):
        layer = torch.nn.Linear(2, 2)
        poptorch.BeginBlock(layer, "x", ipu_id=0)
        with self.assertRaisesRegex(poptorch.Error, "already been assigned to a block"):
            poptorch.BeginBlock(layer, "y", ipu_id=1)
        poptorch.removeBlocks(layer)
        poptorch.BeginBlock(layer, "y", ipu_id=1)

    def test_stages_of_an_explicit_pipeline(self):
        strategy = poptorch.PipelinedExecution(poptorch.Stage("a").ipu(0), poptorch.Stage("b").ipu(3))
        opts = options(accumulation=3).setExecutionStrategy(strategy)
        trained = poptorch.trainingModel(Staged("with"), opts)
        trained(*data(3))
        self.assertEqual(trained._executable.workload["ipus_per_replica"], 4)


class OperationsTest(unittest.TestCase):
    def test_print_tensor_prints_value_and_gradient_each_run(self):
        class Printing(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(2, 1)

            def forward(self, x):
                out = poptorch.ipu_print_tensor(self.linear(x), "activation")
                return poptorch.identity_loss(out, reduction="sum")

        trained = poptorch.trainingModel(Printing(), options())
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            trained(torch.ones(1, 2))
            trained(torch.ones(1, 2))
        text = printed.getvalue()
        self.assertEqual(text.count("activation: "), 2)  # not while tracing
        self.assertEqual(text.count("activation_gradient: ("), 2)

    def test_operations_compute_on_the_cpu(self):
        a, b = torch.randn(3, 4), torch.randn(4, 2)
        self.assertTrue(torch.allclose(poptorch.serializedMatMul(a, b, poptorch.MatMulSerializationMode.ReducingDim,
                                                                 2), a @ b))
        self.assertTrue(torch.equal(poptorch.for_loop(3, lambda t: t * 2, [torch.ones(2)])[0], torch.full((2,), 8.)))
        self.assertIs(poptorch.nop(a), a)
        self.assertEqual(poptorch.recomputationCheckpoint(a, b), (a, b))
        start = torch.tensor(1)
        self.assertTrue(torch.equal(poptorch.dynamic_slice(torch.arange(6), 0, start, 4, 2), torch.tensor([1, 3])))
        updated = poptorch.dynamic_update(torch.zeros(4), torch.ones(2), 0, start, 2)
        self.assertEqual(updated.tolist(), [0.0, 1.0, 1.0, 0.0])
        self.assertEqual(poptorch.cond(torch.tensor(True), lambda t: t + 1, [a], lambda t: t - 1, [a])[0].sum(),
                         (a + 1).sum())
        with poptorch.MultiConv().planType(poptorch.MultiConvPlanType.Serial), poptorch.NameScope("n"), \
                poptorch.Attribute(matmul={"x": 1}):
            torch.ops.poptorch.push_name_scope("scope")
            torch.ops.poptorch.pop_name_scope()
        doubled = poptorch.CPU(lambda t: t * 2, "double")
        self.assertTrue(torch.equal(doubled(a), a * 2))
        self.assertEqual(poptorch.set_overlap_for_input([a, b], poptorch.OverlapMode.OverlapAccumulationLoop), [a, b])

    def test_is_running_on_ipu_inside_a_wrapped_model_only(self):
        seen = []

        class Probe(torch.nn.Module):
            def forward(self, x):
                seen.append(poptorch.isRunningOnIpu())
                return x

        poptorch.inferenceModel(Probe(), options())(torch.ones(1))
        self.assertTrue(all(seen) and seen)
        self.assertFalse(poptorch.isRunningOnIpu())

    def test_compile_hooks(self):
        calls = []
        pre = poptorch.registerPreCompileHook(lambda: calls.append("pre"))
        post = poptorch.registerPostCompileHook(lambda: calls.append("post"))
        try:
            poptorch.inferenceModel(torch.nn.Linear(1, 1), options())(torch.ones(1, 1))
        finally:
            pre.remove()
            post.remove()
        self.assertEqual(calls, ["pre", "post"])


class OptimizersTest(unittest.TestCase):
    def _lamb_reference(self, weight, grad, state, lr, betas, eps, weight_decay, step, bias_correction=True):
        m = state["m"] = betas[0] * state["m"] + (1 - betas[0]) * grad
        v = state["v"] = betas[1] * state["v"] + (1 - betas[1]) * grad * grad
        if bias_correction:
            m, v = m / (1 - betas[0] ** step), v / (1 - betas[1] ** step)
        update = m / (v.sqrt() + eps) + weight_decay * weight
        trust = weight.norm() / update.norm()
        return weight - lr * trust * update

    def test_lamb_against_a_hand_written_step(self):
        class SummedLinear(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(3, 2, bias=False)

            def forward(self, x):
                return poptorch.identity_loss(self.linear(x), reduction="sum")

        for bias_correction in (True, False):
            with self.subTest(bias_correction=bias_correction):
                torch.manual_seed(0)
                model = SummedLinear()
                weight = model.linear.weight.detach().clone()
                optimizer = poptorch.optim.LAMB(model.parameters(), lr=0.1, weight_decay=0.01,
                                                bias_correction=bias_correction, loss_scaling=64.0)
                trained = poptorch.trainingModel(model, options(), optimizer)
                state = {"m": torch.zeros_like(weight), "v": torch.zeros_like(weight)}
                x = torch.randn(2, 3)
                for step in (1, 2):
                    reference = weight.clone().requires_grad_()
                    (x @ reference.t()).sum().backward()
                    weight = self._lamb_reference(weight, reference.grad, state, 0.1, (0.9, 0.999), 1e-8, 0.01, step,
                                                  bias_correction)
                    trained(x)
                    self.assertTrue(torch.allclose(model.linear.weight, weight, atol=1e-6), f"step {step}")

    def test_adamw_without_bias_correction(self):
        torch.manual_seed(0)
        w = torch.randn(3)
        param = torch.nn.Parameter(w.clone())
        optimizer = poptorch.optim.AdamW([param], lr=0.1, weight_decay=0.1, bias_correction=False)
        param.grad = torch.ones(3)
        optimizer.step()
        m, v = 0.1 * torch.ones(3), 0.001 * torch.ones(3)
        expected = w * (1 - 0.1 * 0.1) - 0.1 * m / (v.sqrt() + 1e-8)
        self.assertTrue(torch.allclose(param, expected, atol=1e-6))

    def test_variable_attributes_and_extra_arguments(self):
        optimizer = poptorch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1, momentum=0.9,
                                       velocity_accum_type=torch.float16, use_combined_accum=True)
        self.assertFalse(optimizer.variable_attrs.isConstant("lr"))
        self.assertTrue(optimizer.variable_attrs.isConstant("dampening"))
        optimizer.variable_attrs.markAsConstant("lr")
        self.assertTrue(optimizer.variable_attrs.isConstant("lr"))
        with self.assertRaisesRegex(ValueError, "Unknown attribute"):
            optimizer.variable_attrs.markAsVariable("nonsense")
        with self.assertRaisesRegex(ValueError, "Accumulation types"):
            poptorch.optim.Adam([torch.nn.Parameter(torch.ones(1))], accum_type=torch.int32)


if __name__ == "__main__":
    unittest.main()
