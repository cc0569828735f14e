"""poptorch.DataLoader: combined batches, per-process shares, the global
shuffle, the asynchronous modes; AsynchronousDataAccessor's end."""
import threading
import time
import unittest

import torch

import poptorch

from .helpers import options


def rows(loader):
    return [int(v) for batch in loader for v in batch]


def process_options(pid, processes, seed=None, **kwargs):
    opts = options(**kwargs)
    opts.Distributed.configureProcessId(pid, processes)
    if seed is not None:
        opts.randomSeed(seed)
    return opts


class Numbers(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if not 0 <= index < self.n:
            raise IndexError(index)
        return torch.tensor(index)


class CombinedBatchTest(unittest.TestCase):
    def test_combined_batch_is_one_run(self):
        opts = options(replicas=2, iterations=3, accumulation=2)
        loader = poptorch.DataLoader(opts, Numbers(100), batch_size=2)
        self.assertIsInstance(loader, torch.utils.data.DataLoader)
        self.assertEqual(loader.combinedBatchSize, 24)
        self.assertEqual(len(loader), 4)  # drop_last by default
        self.assertEqual(rows(loader), list(range(96)))
        with self.assertRaisesRegex(AttributeError, "frozen"):
            opts.deviceIterations(1)  # the DataLoader froze its options

    def test_input_groups_divide_the_replicas(self):
        opts = options(replicas=4)
        opts.inputReplicaGrouping(2, poptorch.CommGroupType.Consecutive)
        self.assertEqual(poptorch.DataLoader(opts, Numbers(8), batch_size=1).combinedBatchSize, 2)

    def test_batches_feed_the_model_with_its_micro_batches(self):
        opts = options(replicas=2, iterations=2)
        loader = poptorch.DataLoader(opts, Numbers(16), batch_size=2)

        class Identity(torch.nn.Module):
            def forward(self, x):
                return x * 1

        wrapped = poptorch.inferenceModel(Identity(), opts)
        self.assertEqual([int(v) for batch in loader for v in wrapped(batch)], list(range(16)))


class ProcessSharesTest(unittest.TestCase):
    def test_contiguous_blocks_with_drop_last(self):
        # 3 processes, combined batch 4, 50 samples: 4·⌊50/12⌋ = 16 each.
        shares = [rows(poptorch.DataLoader(process_options(p, 3, replicas=2), Numbers(50), batch_size=2))
                  for p in range(3)]
        self.assertEqual(shares, [list(range(0, 16)), list(range(16, 32)), list(range(32, 48))])

    def test_contiguous_blocks_without_drop_last(self):
        # 10 samples over 3 processes: 4, 3, 3.
        shares = [rows(poptorch.DataLoader(process_options(p, 3), Numbers(10), batch_size=1, drop_last=False))
                  for p in range(3)]
        self.assertEqual(shares, [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]])

    def test_global_shuffle_from_the_seed(self):
        def epochs(pid):
            loader = poptorch.DataLoader(process_options(pid, 2, seed=7), Numbers(20), batch_size=2, shuffle=True)
            return [rows(loader) for _ in range(2)]

        first, second = epochs(0), epochs(1)
        for epoch in range(2):
            # Together the processes read 20 distinct samples, in blocks of
            # one permutation of the whole dataset drawn from the seed.
            self.assertEqual(sorted(first[epoch] + second[epoch]), list(range(20)))
        generator = torch.Generator().manual_seed(7)
        permutation = torch.randperm(20, generator=generator).tolist()
        self.assertEqual(first[0], permutation[:10])
        self.assertEqual(second[0], permutation[10:])
        self.assertNotEqual(first[0], first[1])  # a new permutation each epoch
        self.assertEqual(epochs(0), first)  # and the same in every run

    def test_shuffle_across_processes_needs_a_seed(self):
        with self.assertRaisesRegex(poptorch.Error, "randomSeed"):
            poptorch.DataLoader(process_options(0, 2), Numbers(8), shuffle=True)

    def test_iterable_datasets_are_not_partitioned(self):
        class Stream(torch.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(4))

        with self.assertRaisesRegex(poptorch.Error, "IterableDataset"):
            poptorch.DataLoader(process_options(0, 2), Stream())


class AsyncTest(unittest.TestCase):
    def _threads(self):
        return [t for t in threading.enumerate() if t.name == "poptorch-data-loader" and t.is_alive()]

    def test_async_gives_the_same_batches_every_epoch(self):
        loader = poptorch.DataLoader(options(iterations=2), Numbers(12), batch_size=3,
                                     mode=poptorch.DataLoaderMode.Async, async_options={"buffer_size": 2})
        self.assertEqual(rows(loader), list(range(12)))
        self.assertEqual(rows(loader), list(range(12)))
        loader.terminate()
        self.assertEqual(self._threads(), [])

    def test_async_rebatched_joins_small_worker_batches(self):
        loader = poptorch.DataLoader(options(iterations=2), Numbers(14), batch_size=2,
                                     mode=poptorch.DataLoaderMode.AsyncRebatched, rebatched_worker_size=1)
        batches = [b.tolist() for b in loader]
        self.assertEqual(batches, [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]])
        self.assertEqual(len(loader), 3)
        loader.terminate()

    def test_accessor_ends_cleanly(self):
        for load_indefinitely in (True, False):
            with self.subTest(load_indefinitely=load_indefinitely):
                accessor = poptorch.AsynchronousDataAccessor(Numbers(5), buffer_size=1,
                                                             load_indefinitely=load_indefinitely,
                                                             early_preload=True)
                self.assertEqual([int(v) for v in accessor], list(range(5)))
                self.assertEqual([int(v) for v in iter(accessor)], list(range(5)))
                iterator = iter(accessor)
                next(iterator)  # stop in the middle of an epoch
                deadline = time.monotonic() + 10
                accessor.terminate()
                self.assertLess(time.monotonic(), deadline)
                self.assertEqual(self._threads(), [])

    def test_accessor_raises_the_datasets_error(self):
        class Broken(Numbers):
            def __getitem__(self, index):
                if index == 2:
                    raise KeyError("bad sample")
                return super().__getitem__(index)

        accessor = poptorch.AsynchronousDataAccessor(Broken(4))
        iterator = iter(accessor)
        self.assertEqual(int(next(iterator)), 0)
        self.assertEqual(int(next(iterator)), 1)
        with self.assertRaisesRegex(KeyError, "bad sample"):
            next(iterator)
        accessor.terminate()

    def test_a_dataloader_with_an_accessor_is_not_wrapped_again(self):
        loader = poptorch.DataLoader(options(), Numbers(4), mode=poptorch.DataLoaderMode.Async)
        with self.assertRaisesRegex(poptorch.Error, "already uses an AsynchronousDataAccessor"):
            poptorch.AsynchronousDataAccessor(loader)
        loader.terminate()


if __name__ == "__main__":
    unittest.main()
