"""The model's buffers as the IPUs hold them, for models whose forward
changes its buffers (BatchNorm's running statistics, counters).

Rules, from PopTorch:
- each replica keeps its own buffers (PopTorch never broadcasts them), so
  with several replicas every replica's running statistics see only its own
  micro-batches;
- a training model's host buffers follow the device (replica 0's) after
  every call, as PopTorch copies weights back when the host reads them;
- an inference model's buffer changes stay on the device: the host sees
  them after copyWeightsToHost();
- values the host writes into the buffers (load_state_dict, a training model
  of the same module) reach every replica before the next call, as
  copyWeightsToDevice would.

Not active (nothing copied) for a model that does not change its buffers, or
for a training model with one replica, where the host buffers are the device's.
"""
import torch

__all__ = ["DeviceBuffers"]


class DeviceBuffers:
    """Per-replica buffer values of one wrapped model. Not thread-safe: the
    wrapper's calls run one at a time."""

    def __init__(self, model, replicas, training):
        self._model = model
        self._replicas = replicas
        self._training = training
        self._device = None  # [replica][buffer] tensors
        self._loaded = None  # the replica whose values the module holds
        self._host = None  # an inference model's host values during a call
        self._synced = None  # (buffer ids, versions) when host and device last agreed
        self.active = False

    def needed(self):
        return self._replicas > 1 or not self._training

    def _buffers(self):
        return [b for _, b in self._model.named_buffers()]

    def _mark_synced(self):
        buffers = self._buffers()
        self._synced = ([id(b) for b in buffers], [b._version for b in buffers])

    def _host_changed(self):
        buffers = self._buffers()
        return self._synced != ([id(b) for b in buffers], [b._version for b in buffers])

    def activate(self):
        if self.needed() and not self.active:
            self.active = True
            self.upload()

    def upload(self):
        """Host buffers to every replica (copyWeightsToDevice)."""
        if not self.active:
            return
        with torch.no_grad():
            self._device = [[b.detach().clone() for b in self._buffers()] for _ in range(self._replicas)]
        self._mark_synced()

    def download(self):
        """Replica 0's buffers to the host (copyWeightsToHost)."""
        if not self.active or self._device is None:
            return
        with torch.no_grad():
            for host, dev in zip(self._buffers(), self._device[0]):
                host.copy_(dev)
        self._mark_synced()

    def begin_run(self):
        if not self.active:
            return
        if self._host_changed():
            self.upload()
        if not self._training:
            self._host = [b.detach().clone() for b in self._buffers()]
        self._loaded = None

    def enter(self, replica):
        """Before a micro-batch of `replica`: the module holds its buffers."""
        if not self.active or self._loaded == replica:
            return
        with torch.no_grad():
            buffers = self._buffers()
            if self._loaded is not None:
                for dev, b in zip(self._device[self._loaded], buffers):
                    dev.copy_(b)
            for b, dev in zip(buffers, self._device[replica]):
                b.copy_(dev)
        self._loaded = replica

    def end_run(self):
        if not self.active:
            return
        with torch.no_grad():
            buffers = self._buffers()
            if self._loaded is not None:
                for dev, b in zip(self._device[self._loaded], buffers):
                    dev.copy_(b)
            if self._training:
                for b, dev in zip(buffers, self._device[0]):
                    b.copy_(dev)
            elif self._host is not None:
                for b, host in zip(buffers, self._host):
                    b.copy_(host)
        self._host = None
        self._loaded = None
        self._mark_synced()
