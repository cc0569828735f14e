"""PopTorch's speed on the simulated pod, in two figures:

1. the wrapper's step against plain PyTorch's: the same model, batch and
   optimizer, one weight update a step, on the CPU (the IPU Model: no pod
   in the loop), median of --steps steps after a warm-up;
2. the pod's part of a step: one run of the step's workload on the
   partition's machines through poptorch-pod (attached to the IPUs the
   environment names, IPUOF_VIPU_API_*), median and p90 of --steps calls.

Prints one line a figure and a JSON object with them all (--json).
"""
import argparse
import json
import statistics
import sys
import time

import torch

import poptorch


class Mlp(torch.nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        layers = []
        for _ in range(depth):
            layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
        self.body = torch.nn.Sequential(*layers)
        self.head = torch.nn.Linear(width, 10)

    def forward(self, x, labels=None):
        out = self.head(self.body(x))
        if labels is None:
            return out
        return out, torch.nn.functional.cross_entropy(out, labels)


def timed(step, steps):
    for _ in range(5):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    times.sort()
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def plain_and_wrapped(args):
    torch.manual_seed(0)
    x = torch.randn(args.batch, args.width)
    y = torch.randint(0, 10, (args.batch,))
    plain = Mlp(args.width, args.depth)
    optimizer = torch.optim.SGD(plain.parameters(), lr=0.01)

    def plain_step():
        optimizer.zero_grad()
        _, loss = plain(x, y)
        loss.backward()
        optimizer.step()

    wrapped_model = Mlp(args.width, args.depth)
    opts = poptorch.Options()
    opts.useIpuModel(True)
    wrapped = poptorch.trainingModel(wrapped_model, opts,
                                     poptorch.optim.SGD(wrapped_model.parameters(), lr=0.01))
    wrapped.compile(x, y)

    def wrapped_step():
        wrapped(x, y)

    # Interleaved rounds, so that a busy moment of the machine weighs on both.
    plain_times, wrapped_times = [], []
    for _ in range(args.rounds):
        plain_times.append(timed(plain_step, args.steps)[0])
        wrapped_times.append(timed(wrapped_step, args.steps)[0])
    wrapped.destroy()
    return statistics.median(plain_times), statistics.median(wrapped_times)


def pod_part(args):
    from poptorch import _pod  # noqa: WPS433 (only with a pod)
    attachment = _pod.Attachment(args.ipus)
    workload = {"name": "Mlp", "micro_batch": args.batch, "grad_accum": 1, "device_iterations": 1,
                "replicas": args.ipus, "total_replicas": args.ipus, "ipus_per_replica": 1,
                "optimizer": "sgd", "training": True, "input_bytes_per_sample": 4 * args.width,
                "gemms": [[args.batch, args.width, args.width, 1]] * args.depth +
                         [[args.batch, args.width, 10, 1]],
                "elementwise_bytes": 4.0 * args.batch * args.width * args.depth, "ops": args.depth}
    try:
        median, p90 = timed(lambda: attachment.run(workload, 1), args.steps)
        modelled = attachment.run(workload, 1)[0]
    finally:
        attachment.detach()
    return median, p90, modelled, attachment.description


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ipus", type=int, default=0, help="attach this many IPUs and time the pod's part")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    figures = {"model": f"MLP {args.depth}x{args.width}, batch {args.batch}, SGD"}
    plain, wrapped = plain_and_wrapped(args)
    figures.update(plain_step_ms=plain * 1e3, wrapped_step_ms=wrapped * 1e3, wrapper_ratio=wrapped / plain)
    print(f"{figures['model']}: plain PyTorch {plain * 1e3:.3f} ms/step, poptorch (IPU Model) "
          f"{wrapped * 1e3:.3f} ms/step, ratio {wrapped / plain:.3f}")
    if args.ipus:
        median, p90, modelled, where = pod_part(args)
        figures.update(pod_part_ms_p50=median * 1e3, pod_part_ms_p90=p90 * 1e3,
                       modelled_step_ms=modelled * 1e3, attached=where)
        print(f"pod's part of a step on {where}: p50 {median * 1e3:.3f} ms, p90 {p90 * 1e3:.3f} ms "
              f"(the step it models: {modelled * 1e3:.3f} ms on the IPUs)")
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
