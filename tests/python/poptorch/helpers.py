"""Shared pieces of the PopTorch tests: small models, options on the IPU
Model (no pod), and plain-PyTorch references."""
import copy
import os

import torch

import poptorch

poptorch.setLogLevel(os.environ.get("POPTORCH_TEST_LOG_LEVEL", "WARN"))


def options(**kwargs):
    """Options computing on the CPU with no pod."""
    opts = poptorch.Options().useIpuModel(True)
    if "replicas" in kwargs:
        opts.replicationFactor(kwargs["replicas"])
    if "iterations" in kwargs:
        opts.deviceIterations(kwargs["iterations"])
    if "accumulation" in kwargs:
        opts.Training.gradientAccumulation(kwargs["accumulation"])
    return opts


class Regression(torch.nn.Module):
    """A linear layer trained with a mean-squared error: returns (output, loss)."""

    def __init__(self, inputs=4, outputs=3):
        super().__init__()
        self.linear = torch.nn.Linear(inputs, outputs)

    def forward(self, x, target):
        out = self.linear(x)
        return out, torch.nn.functional.mse_loss(out, target)


def regression(seed=0, inputs=4, outputs=3):
    """(model, an identical copy) from the same seed."""
    torch.manual_seed(seed)
    model = Regression(inputs, outputs)
    return model, copy.deepcopy(model)


def data(rows, inputs=4, outputs=3, seed=1):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, inputs, generator=generator), torch.randn(rows, outputs, generator=generator)


def plain_sgd_steps(model, x, y, steps, lr, momentum=0.0):
    """Plain PyTorch: `steps` SGD updates, update i on the i-th equal share
    of the rows (mean loss over the share)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    share = x.shape[0] // steps
    for i in range(steps):
        optimizer.zero_grad()
        _, loss = model(x[i * share:(i + 1) * share], y[i * share:(i + 1) * share])
        loss.backward()
        optimizer.step()
    return model


def assert_same_weights(test, a, b, atol=1e-6):
    for (name, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        test.assertTrue(torch.allclose(p, q, atol=atol), f"{name}: max difference {(p - q).abs().max()}")
