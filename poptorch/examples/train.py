"""Trains a small classifier with PopTorch on the simulated pod.

Under poprun (one instance per process, replicas spread over them):

    PYTHONPATH=build/python build/bin/poprun --allow-run-as-root=yes \\
        --vipu-partition=p1 --num-replicas=4 --num-instances=2 \\
        python3 poptorch/examples/train.py

Alone, with the replicas of --replicas (default 4) in this process:

    PYTHONPATH=build/python python3 poptorch/examples/train.py

--ipu-model (or POPTORCH_IPU_MODEL=1) computes without a pod: the maths is
the same, but no IPU time is modelled. Each epoch prints its loss and the
modelled IPU time per step; the end prints the run's summary.
"""
import argparse

import torch

import popdist
import popdist.poptorch
import poptorch


def arguments():
    parser = argparse.ArgumentParser(description="PopTorch example: a classifier on generated data")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--device-iterations", type=int, default=2)
    parser.add_argument("--gradient-accumulation", type=int, default=2)
    parser.add_argument("--replicas", type=int, default=4, help="replicas when not under poprun")
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ipu-model", action="store_true", help="compute on the CPU without a pod")
    return parser.parse_args()


class Blobs(torch.utils.data.Dataset):
    """Four classes of 8 features around four centres; the same samples in
    every instance (a fixed generator), as a dataset on a shared disk."""

    def __init__(self, samples, seed):
        generator = torch.Generator().manual_seed(seed)
        centres = torch.randn(4, 8, generator=generator) * 2
        self.labels = torch.randint(0, 4, (samples,), generator=generator)
        self.features = centres[self.labels] + torch.randn(samples, 8, generator=generator)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.features[index], self.labels[index]


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, features, labels):
        logits = self.layers(features)
        return logits, self.loss(logits, labels)


def make_options(args):
    if popdist.isPopdistEnvSet():
        # Replicas, instance index and count come from poprun.
        opts = popdist.poptorch.Options()
    else:
        opts = poptorch.Options()
        opts.replicationFactor(args.replicas)
    # The same seed everywhere: the same initial weights and the same
    # shuffle in every instance.
    opts.randomSeed(args.seed)
    opts.deviceIterations(args.device_iterations)
    opts.Training.gradientAccumulation(args.gradient_accumulation)
    if args.ipu_model:
        opts.useIpuModel(True)
    return opts


def main():
    args = arguments()
    opts = make_options(args)
    instance, instances = opts.Distributed.processId, opts.Distributed.numProcesses
    name = f"[instance {instance}/{instances}]"
    dataset = Blobs(args.samples, args.seed)
    loader = poptorch.DataLoader(opts, dataset, batch_size=args.micro_batch, shuffle=True)
    model = Classifier()
    training = poptorch.trainingModel(model, opts, poptorch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9))
    print(f"{name} {opts.replication_factor} local replicas, combined batch {loader.combinedBatchSize}, "
          f"{len(loader)} steps of {args.device_iterations} weight updates per epoch", flush=True)
    for epoch in range(args.epochs):
        losses = []
        for features, labels in loader:
            _, loss = training(features, labels)
            losses.append(float(loss.mean()))
        _, _, step_time = training.getLatency()
        ipu = f"{step_time * 1e3:.3f} ms/step modelled" if step_time else "IPU time not modelled"
        print(f"{name} epoch {epoch + 1}: loss {sum(losses) / len(losses):.4f}, {ipu}", flush=True)
    with torch.no_grad():
        accuracy = (model.layers(dataset.features).argmax(-1) == dataset.labels).float().mean()
    print(f"{name} accuracy on the whole dataset {float(accuracy):.3f}", flush=True)
    # The same in every instance: one data-parallel program.
    checksum = sum(float(p.double().sum()) for p in model.parameters())
    print(f"{name} weights checksum {checksum:.9f}", flush=True)
    print(f"{name} summary: {training.summary()}", flush=True)
    training.destroy()


if __name__ == "__main__":
    main()
