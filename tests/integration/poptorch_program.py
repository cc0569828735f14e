"""A PopTorch program for tests/integration/poptorch_test.cc: trains a small
linear model on the pod the environment names (IPUOF_VIPU_API_*), a step at
a time, and says what happened on each line:

  attached <description>       the model compiled and holds its IPUs
  step <n> <seconds>           a step ran; the pod's modelled IPU seconds
  error <message>              the pod refused (exit status 1)

--steps N runs N steps; --then-after FILE waits (up to a minute) for FILE
to exist and then runs one more step; --hold stays attached until killed.
"""
import argparse
import os
import signal
import sys
import time

import torch

import poptorch


class Regression(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 4)

    def forward(self, x, y):
        out = self.linear(x)
        return out, torch.nn.functional.mse_loss(out, y)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--then-after", default="")
    parser.add_argument("--hold", action="store_true")
    args = parser.parse_args()
    opts = poptorch.Options()
    opts.replicationFactor(args.replicas)
    opts.randomSeed(0)
    model = Regression()
    training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(), lr=0.01))
    x = torch.randn(4 * args.replicas, 16)
    y = torch.randn(4 * args.replicas, 4)

    def step(n):
        training(x, y)
        print(f"step {n} {training.getLatency()[2]:.9f}", flush=True)

    try:
        training.compile(x, y)
        print(f"attached {training._device.description if hasattr(training, '_device') else ''}", flush=True)
        for n in range(args.steps):
            step(n)
        if args.then_after:
            deadline = time.monotonic() + 60
            while not os.path.exists(args.then_after) and time.monotonic() < deadline:
                time.sleep(0.05)
            step(args.steps)
    except poptorch.Error as e:
        print(f"error {e}", flush=True)
        return 1
    if args.hold:
        signal.pause()
    training.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
