"""What a wrapped model's runs cost: modelled IPU time from the pod and
CPU wall time, per call and in total, and the summary logged when the model
is destroyed or the program ends.

A step is one device iteration: on each replica, `accumulation`
micro-batches and, in training, one weight update. Samples are this
process's: micro-batch × accumulation × local replicas per step.
- IPU time: the pod's modelled seconds per step (none with the IPU Model);
- samples/s on the IPUs: samples ÷ modelled IPU time;
- CPU wall time: what computing the steps on this machine's CPU took (the
  maths is real; its speed says nothing about IPUs).
"""
import atexit
import threading
import weakref

from ._device import IPU_MODEL_NOTE

__all__ = ["RunStats", "RunSummary"]


class RunSummary:
    """A wrapped model's runs so far. str() is the report line; the
    attributes are its numbers (None when not modelled)."""

    def __init__(self, name, device, modelled, steps, samples, ipu_time_s, wall_time_s):
        self.name = name
        self.device = device
        self.modelled = modelled
        self.steps = steps
        self.samples = samples
        self.ipu_time_s = ipu_time_s if modelled else None
        self.wall_time_s = wall_time_s
        self.ipu_time_per_step_s = ipu_time_s / steps if modelled and steps else None
        self.ipu_samples_per_s = samples / ipu_time_s if modelled and ipu_time_s > 0 else None
        self.wall_time_per_step_s = wall_time_s / steps if steps else None

    def asDict(self):
        return dict(vars(self))

    def __str__(self):
        head = f"{self.name}: {self.steps} steps, {self.samples} samples on {self.device}"
        if not self.steps:
            return head + "; not run"
        if self.modelled:
            rate = f"{self.ipu_samples_per_s:.1f}" if self.ipu_samples_per_s is not None else "n/a"
            ipu = (f"IPU time {self.ipu_time_per_step_s * 1e3:.3f} ms/step (modelled, "
                   f"{self.ipu_time_s:.4f} s in all), {rate} samples/s on the IPUs")
        else:
            ipu = IPU_MODEL_NOTE
        return f"{head}; {ipu}; CPU wall time {self.wall_time_per_step_s * 1e3:.3f} ms/step (computed on the CPU)"


class RunStats:
    """Counters of one wrapped model. Not thread-safe (one call at a time)."""

    def __init__(self):
        self.steps = 0
        self.samples = 0
        self.ipu_time_s = 0.0
        self.wall_time_s = 0.0
        self.last_step_times = []
        self.reported = False

    def record(self, steps, samples, step_times, wall_time_s):
        self.steps += steps
        self.samples += samples
        self.ipu_time_s += sum(step_times)
        self.wall_time_s += wall_time_s
        self.last_step_times = list(step_times)
        self.reported = False

    def latency(self):
        """(min, max, mean) modelled seconds per step of the last call;
        zeros when nothing was modelled."""
        times = self.last_step_times
        if not times:
            return (0.0, 0.0, 0.0)
        return (min(times), max(times), sum(times) / len(times))

    def summary(self, name, device, modelled):
        return RunSummary(name, device, modelled, self.steps, self.samples, self.ipu_time_s, self.wall_time_s)


_live = weakref.WeakSet()
_live_lock = threading.Lock()


def track(executor):
    """Reports the executor's summary at exit unless destroy() did."""
    with _live_lock:
        _live.add(executor)


def _report_at_exit():
    with _live_lock:
        executors = list(_live)
    for executor in executors:
        try:
            executor._report_summary()
        except Exception:  # noqa: BLE001 (the program is ending; a report must not mask its exit)
            pass


atexit.register(_report_at_exit)
