"""What the multi-process test and its instances share: the model, the
options and the global batches, so that both sides train the same thing."""
import torch

import poptorch

ITERATIONS, ACCUMULATION, MICRO_BATCH, CALLS = 2, 2, 2, 3


def configure(opts):
    opts.deviceIterations(ITERATIONS)
    opts.Training.gradientAccumulation(ACCUMULATION)
    opts.randomSeed(0)
    opts.useIpuModel(True)
    return opts


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), _Loss(torch.nn.Linear(8, 3)))


class _Loss(torch.nn.Module):
    def __init__(self, head):
        super().__init__()
        self.head = head

    def forward(self, x):
        return poptorch.identity_loss(self.head(x).pow(2), reduction="mean")


def optimizer(m):
    return poptorch.optim.SGD(m.parameters(), lr=0.1, momentum=0.5)


def global_batches(total_replicas):
    """Each call's inputs for all replicas of the launch: [rows, 4]."""
    generator = torch.Generator().manual_seed(3)
    rows = ITERATIONS * ACCUMULATION * total_replicas * MICRO_BATCH
    return [torch.randn(rows, 4, generator=generator) for _ in range(CALLS)]


def instance_rows(x, instance, local_replicas):
    """The rows of this instance's replicas, in the layout
    [iterations, accumulation, replicas, micro-batch] of its own call."""
    total = x.shape[0] // (ITERATIONS * ACCUMULATION * MICRO_BATCH)
    view = x.reshape(ITERATIONS, ACCUMULATION, total, MICRO_BATCH, *x.shape[1:])
    first = instance * local_replicas
    return view[:, :, first:first + local_replicas].reshape(-1, *x.shape[1:])
