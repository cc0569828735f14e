"""poptorch.DataLoader and poptorch.AsynchronousDataAccessor.

DataLoader is a torch.utils.data.DataLoader whose batches are whole runs:
    combined batch = batch_size × device_iterations
                     × (local replicas ÷ input group size) × accumulation,
so each batch it yields is what one call of the wrapped model takes. With
several processes (Distributed.numProcesses P > 1, as under poprun) and
auto_distributed_partitioning, each process reads its own contiguous block
of a map-style dataset of N samples:
- drop_last=True (default): C·⌊N/(C·P)⌋ samples at offset pid × that;
- drop_last=False: N/P each, the first N mod P processes one more;
- shuffle=True needs Options.randomSeed: the indices of the whole dataset
  are permuted by a torch.Generator seeded with it, continuing from one
  epoch to the next, so every process draws the same permutation and takes
  its block of it; samples a drop_last epoch left out come first next epoch.
The DataLoader freezes the options it is given, as PopTorch's does.

AsynchronousDataAccessor loads in a background thread of this process into a
queue of buffer_size items (PopTorch uses a process and shared memory; a
thread keeps the dataset as it is, so sharing_strategy has nothing to do).
load_indefinitely: the thread goes on to the next epoch while this one is
consumed; each epoch still ends with StopIteration. early_preload: loading
starts at construction rather than at the first iter(). A new iter() in the
middle of an epoch starts again from the beginning. terminate() (also at
exit and when the accessor is collected) stops the thread and waits for it.
"""
import atexit
import queue
import threading

import torch

from . import enums
from ._batching import flatten, rebuild
from ._errors import Error, not_provided
from ._logging import logger
from .options import Options

__all__ = ["DataLoader", "AsynchronousDataAccessor"]


class _SubDataset:
    """This process's contiguous block of a dataset, through an optional
    global permutation."""

    def __init__(self, dataset, options, combined, drop_last):
        total = len(dataset)
        processes, pid = options.Distributed.numProcesses, options.Distributed.processId
        if drop_last:
            per_process = combined * (total // (combined * processes))
            self._offset = pid * per_process
            self._length = min(per_process, total - self._offset)
            self._leftovers = total % per_process if per_process else 0
        else:
            shares = [total // processes + (1 if total % processes > p else 0) for p in range(processes)]
            self._offset = sum(shares[:pid])
            self._length = shares[pid]
            self._leftovers = 0
        self._base_offset = self._offset
        self._dataset = dataset
        self._seed = options.random_seed if options.exists("random_seed") else None
        self._generator_state = None
        self._order = None

    def shuffle_global_indices(self):
        generator = torch.Generator()
        if self._generator_state is None:
            generator.manual_seed(self._seed)
        else:
            generator.set_state(self._generator_state)
        order = torch.randperm(len(self._dataset), generator=generator)
        if self._order is None:
            # Shared, so that persistent workers see each epoch's order.
            self._order = order.share_memory_()
        else:
            self._order.copy_(order)
        self._generator_state = generator.get_state()

    def swap_range(self):
        """Alternates the block between the first and the last samples, so
        that what drop_last left out is read next epoch."""
        if self._offset == self._base_offset:
            self._offset += self._leftovers
        else:
            self._offset = self._base_offset

    def __len__(self):
        return self._length

    def __getitem__(self, index):
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(f"index {index} out of range for this process's {self._length} samples")
        position = index + self._offset
        if self._order is not None:
            position = int(self._order[position])
        return self._dataset[position]


class DataLoader(torch.utils.data.DataLoader):
    """A DataLoader of combined batches, one per call of the wrapped model."""

    def __init__(self, options, dataset, batch_size=1, shuffle=False, num_workers=0, drop_last=True,
                 persistent_workers=None, auto_distributed_partitioning=True, mode=enums.DataLoaderMode.Sync,
                 async_options=None, rebatched_worker_size=None, **kwargs):
        if not isinstance(options, Options):
            raise Error(f"poptorch.DataLoader takes a poptorch.Options, not {type(options)}")
        if "batch_sampler" in kwargs:
            raise not_provided("DataLoader(batch_sampler=...)", "combines sampled batches in a way not "
                               "reproduced here; use batch_size and a sampler")
        self._accessor = None
        options._freeze()
        self._options = options
        if persistent_workers is None:
            persistent_workers = num_workers > 0
        shuffle = bool(shuffle)
        processes = options.Distributed.numProcesses
        if batch_size is None:
            self._combined_batch_size = None
        else:
            groups = options.replication_factor // options.input_group_size
            self._combined_batch_size = batch_size * options.device_iterations * groups * \
                options.Training.gradient_accumulation
        self._is_iterable = isinstance(dataset, torch.utils.data.IterableDataset)
        self._global_shuffle = False
        if self._is_iterable:
            if auto_distributed_partitioning and processes > 1:
                raise Error("auto_distributed_partitioning not supported for IterableDataset")
        else:
            total = len(dataset)
            step = (self._combined_batch_size or 1) * processes
            if not drop_last and total % step:
                logger.warning("The number of elements in the dataset (%d) is not divisible by the number of "
                               "elements processed per step (%d) and drop_last=False. The last tensor will have a "
                               "batch size of %d. To avoid having to handle this special case switch to "
                               "drop_last=True", total, step, total % step)
            if processes > 1 and auto_distributed_partitioning:
                if shuffle and not options.exists("random_seed"):
                    raise Error("When using auto_distributed_partitioning you must set "
                                "poptorch.Options.randomSeed() to ensure that tensors are in the same order in "
                                "all processes.")
                if self._combined_batch_size is None:
                    raise Error("batch_size=None not allowed when using auto_distributed_partitioning.")
                dataset = _SubDataset(dataset, options, self._combined_batch_size, drop_last)
                # The permutation is global (_SubDataset), not per process.
                self._global_shuffle = shuffle
                shuffle = False
        mode = enums.DataLoaderMode(mode)
        rebatched_size = None
        loader_batch = self._combined_batch_size
        self._rebatched_drop_last = drop_last
        cbs_above_one = self._combined_batch_size is not None and self._combined_batch_size > 1
        if mode == enums.DataLoaderMode.AsyncRebatched or \
                (mode == enums.DataLoaderMode.Async and not drop_last and cbs_above_one):
            mode = enums.DataLoaderMode.Async
            rebatched_size = self._combined_batch_size
            # The accessor deals with the leftovers, not the loader.
            drop_last = False
            if rebatched_worker_size is not None:
                if rebatched_worker_size > self._combined_batch_size:
                    raise Error(f"The rebatched_worker_size ({rebatched_worker_size}) must be <= to the combined "
                                f"batch size ({self._combined_batch_size})")
                loader_batch = rebatched_worker_size
        super().__init__(dataset, batch_size=loader_batch, shuffle=shuffle, num_workers=num_workers,
                         drop_last=drop_last, persistent_workers=persistent_workers, **kwargs)
        if mode == enums.DataLoaderMode.Async:
            async_options = dict(async_options or {})
            if "rebatched_size" in async_options:
                raise Error("You cannot use DataLoaderMode.AsyncRebatched and manually specify the rebatched_size "
                            "in async_options")
            self._accessor = AsynchronousDataAccessor(self, rebatched_size=rebatched_size, **async_options)

    @property
    def combinedBatchSize(self):
        """Samples one call of the model takes from the dataset."""
        return self._combined_batch_size

    @property
    def options(self):
        return self._options

    def __len__(self):
        accessor = self.__dict__.get("_accessor")
        if accessor is not None and accessor.rebatched_size:
            total = len(self.dataset)
            length = total // accessor.rebatched_size
            if not self._rebatched_drop_last and total % accessor.rebatched_size:
                length += 1
            return length
        return super().__len__()

    def _epoch_iterator(self):
        """An iterator over one epoch, bypassing the accessor."""
        if self._global_shuffle:
            self.dataset.shuffle_global_indices()
            self.dataset.swap_range()
        return torch.utils.data.DataLoader.__iter__(self)

    def __iter__(self):
        if self._accessor is not None:
            return iter(self._accessor)
        return self._epoch_iterator()

    def terminate(self):
        """Stops the background loader of an Async DataLoader."""
        accessor = self.__dict__.get("_accessor")
        if accessor is not None:
            accessor.terminate()

    def __del__(self):
        self.terminate()


class _Worker:
    """The background thread of an AsynchronousDataAccessor."""

    def __init__(self, epoch, buffer_size, load_indefinitely, rebatch):
        self._epoch = epoch
        self._rebatch = rebatch
        self._load_indefinitely = load_indefinitely
        self.queue = queue.Queue(maxsize=max(buffer_size, 1))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="poptorch-data-loader", daemon=True)
        self._thread.start()

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self.queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _loop(self):
        try:
            while not self._stop.is_set():
                for item in self._rebatch(self._epoch()):
                    if not self._put(("data", item)):
                        return
                if not self._put(("end", None)):
                    return
                if not self._load_indefinitely:
                    return
        except BaseException as e:  # noqa: BLE001 (handed to the consumer, which raises it)
            self._put(("error", e))

    def alive(self):
        return self._thread.is_alive()

    def stop(self, timeout=10.0):
        self._stop.set()
        # Unblock a put() waiting for room.
        try:
            while True:
                self.queue.get_nowait()
        except queue.Empty:
            pass
        self._thread.join(timeout)
        if self._thread.is_alive():
            logger.warning("The AsynchronousDataAccessor's loading thread did not stop within %.0f s "
                           "(blocked in the dataset?); it is left to end with the program", timeout)


class AsynchronousDataAccessor:
    """Loads a dataset (any iterable, or a DataLoader) ahead in a background
    thread."""

    def __init__(self, dataset, buffer_size=3, miss_sleep_time_in_ms=0.1, load_indefinitely=True,
                 early_preload=False, sharing_strategy=enums.SharingStrategy.ForkServer, rebatched_size=None):
        self._worker = None
        if isinstance(dataset, DataLoader) and dataset.__dict__.get("_accessor") is not None:
            raise Error("The DataLoader already uses an AsynchronousDataAccessor internally. Either use the "
                        "existing one or set mode='poptorch.DataLoaderMode.Sync' in the DataLoader.")
        if rebatched_size is not None and rebatched_size <= 1:
            raise Error("rebatched_size must be None or greater than 1")
        self._dataset = dataset
        self.rebatched_size = rebatched_size
        self._buffer_size = buffer_size
        self._load_indefinitely = load_indefinitely
        self._sharing_strategy = enums.SharingStrategy(sharing_strategy)
        self._epoch_started = False
        self._epoch_over = False
        atexit.register(self.terminate)
        if early_preload:
            self._start()

    # --- the source --------------------------------------------------------------------------------------------
    def _epoch(self):
        if isinstance(self._dataset, DataLoader):
            return self._dataset._epoch_iterator()
        return iter(self._dataset)

    def _drop_last(self):
        if isinstance(self._dataset, DataLoader):
            return self._dataset._rebatched_drop_last
        return getattr(self._dataset, "drop_last", True)

    def _rebatch(self, items):
        if not self.rebatched_size:
            yield from items
            return
        size = self.rebatched_size
        batched = isinstance(self._dataset, torch.utils.data.DataLoader)
        pending, spec = None, None
        for item in items:
            leaves = []
            spec = flatten(item, leaves)
            if not batched:
                leaves = [t.unsqueeze(0) for t in leaves]
            pending = leaves if pending is None else [torch.cat([p, t]) for p, t in zip(pending, leaves)]
            while pending and pending[0].shape[0] >= size:
                yield rebuild(spec, iter([p[:size] for p in pending]))
                pending = [p[size:] for p in pending]
        if pending and pending[0].shape[0] and not self._drop_last():
            yield rebuild(spec, iter(pending))

    # --- the worker --------------------------------------------------------------------------------------------
    def _start(self):
        self._worker = _Worker(self._epoch, self._buffer_size, self._load_indefinitely, self._rebatch)
        self._epoch_started = False
        self._epoch_over = False

    def terminate(self):
        """Stops the loading thread (and waits for it)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()

    def __del__(self):
        try:
            self.terminate()
        except Exception:  # noqa: BLE001 (collection must not raise)
            pass

    def __len__(self):
        length = len(self._dataset)
        if self.rebatched_size and getattr(self._dataset, "_accessor", None) is not self:
            batch = getattr(self._dataset, "batch_size", 1) or 1
            length = length * batch // self.rebatched_size
        return length

    def __iter__(self):
        worker = self._worker
        restart = worker is None or (self._epoch_started and not self._epoch_over) or \
            (self._epoch_over and not self._load_indefinitely) or \
            (not worker.alive() and worker.queue.empty())
        if restart:
            self.terminate()
            self._start()
        self._epoch_started = False
        self._epoch_over = False
        return self

    def __next__(self):
        if self._worker is None:
            raise StopIteration
        self._epoch_started = True
        while True:
            try:
                kind, value = self._worker.queue.get(timeout=0.1)
                break
            except queue.Empty:
                if not self._worker.alive():
                    self._epoch_over = True
                    raise StopIteration from None
        if kind == "data":
            return value
        self._epoch_over = True
        if kind == "error":
            raise value
        raise StopIteration
