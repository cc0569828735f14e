"""The attachment of one wrapped model to the partition's IPUs, and the one
place where the pod's answers become poptorch.Error.

The pod is reached through the native module poptorch._pod (C++, built with
the IPUoF client), whose contract is:

    _pod.configured() -> bool
        an IPUoF attachment is configured for this process (the
        IPUOF_VIPU_API_* variables, IPUOF_CONFIG_PATH, or ~/.ipuof.conf.d/);
    _pod.Attachment(num_ipus: int, device_id: int = -1)
        attaches num_ipus IPUs of the partition's GCD; device_id, when not
        -1, is the device the program chose (Options.useIpuId, or
        popdist.getDeviceId() under popdist.poptorch.Options), as gc-info
        numbers them; raises RuntimeError with the pod's words when
        refused. device_id is only passed when chosen, so a module without
        the argument still works for programs that choose none;
    Attachment.description: str
        e.g. "partition p1, GCD 0, 4 IPUs on 1 machine";
    Attachment.run(workload: dict, steps: int) -> list[float]
        runs `steps` steps of the workload (see _describe.py) on the IPUs'
        compute and link model; the modelled IPU seconds of each step;
        raises RuntimeError naming the machine, IPU or link on a fault;
    Attachment.detach() -> None
        frees the IPUs (idempotent).
  Optional: _pod.available_ipus() -> int, the IPUs the configured GCD has.

Without the native module there is no pod: a model with useIpuModel(True)
(or POPTORCH_IPU_MODEL=1) computes on the CPU and no IPU time is modelled;
any other model is refused when it attaches, saying how to get a device.
What is modelled: each step's time on the IPUs as the pod's compute and link
model gives it for the workload described. Not modelled: compilation, and
the host's time (the CPU computing the maths is measured apart).
"""
import glob
import importlib
import os

from ._errors import Error

__all__ = ["Device", "native", "attachment_configured", "hardware_available", "IPU_MODEL_NOTE"]

IPU_MODEL_NOTE = "IPU time not modelled (IPU Model: CPU only)"

_UNSET = object()
_native = _UNSET


def native():
    """The native pod module, or None when it is not built."""
    global _native
    if _native is _UNSET:
        try:
            _native = importlib.import_module("poptorch._pod")
        except ImportError:
            _native = None
    return _native


def attachment_configured():
    """Whether the environment names an IPUoF attachment (the variables
    poprun and `vipu create partition` provide)."""
    if os.environ.get("IPUOF_VIPU_API_PARTITION_ID") or os.environ.get("IPUOF_CONFIG_PATH"):
        return True
    return bool(glob.glob(os.path.join(os.path.expanduser("~"), ".ipuof.conf.d", "*.conf")))


def hardware_available(num_ipus=1):
    """Whether an attachment is configured: the pod module's configured()
    (and, when it says, a GCD of at least num_ipus IPUs), or without the
    module the same environment check, so that a program learns at attach
    time, in words, that the module is missing."""
    pod = native()
    if pod is None:
        return attachment_configured()
    try:
        if not pod.configured():
            return False
        count = getattr(pod, "available_ipus", None)
        return count is None or count() >= num_ipus
    except RuntimeError:
        return False


def _no_device(num_ipus):
    if native() is None and attachment_configured():
        reason = ("an IPUoF attachment is configured, but this PopTorch was built without its pod module "
                  "(poptorch._pod), so it cannot reach the pod")
    else:
        reason = "no IPUoF attachment is configured"
    return Error(f"No IPU device is available to attach {num_ipus} IPU(s): {reason}. Run under poprun "
                 "(poprun --vipu-partition=... python3 train.py), or set IPUOF_VIPU_API_PARTITION_ID (with "
                 "IPUOF_VIPU_API_HOST) to a partition created with `vipu create partition`, or compute on the "
                 "CPU without a pod with opts.useIpuModel(True) or POPTORCH_IPU_MODEL=1.",
                 type="pod")


class Device:
    """One attachment to the partition's IPUs (or the IPU Model) for one
    wrapped model. Not thread-safe; the wrapper owns it."""

    def __init__(self, num_ipus, use_ipu_model, device_id=None):
        self.num_ipus = num_ipus
        self.ipu_model = use_ipu_model
        self.device_id = device_id
        self.description = (f"IPU Model ({num_ipus} IPU(s) computed on the CPU, no pod)" if use_ipu_model
                            else f"{num_ipus} IPU(s), not attached")
        self._handle = None
        self._attached = False

    @property
    def modelled(self):
        """Whether run() gives modelled IPU times."""
        return not self.ipu_model

    def attach(self):
        """Attaches; Error with the pod's words when refused."""
        if self._attached:
            return
        if self.ipu_model:
            self._attached = True
            return
        pod = native()
        try:
            if pod is None or not pod.configured():
                raise _no_device(self.num_ipus)
            if self.device_id is None:
                self._handle = pod.Attachment(self.num_ipus)
            else:
                self._handle = pod.Attachment(self.num_ipus, device_id=self.device_id)
        except RuntimeError as e:
            if isinstance(e, Error):
                raise
            raise Error(f"Could not attach to {self.num_ipus} IPU(s): {e}", type="pod") from e
        self.description = str(getattr(self._handle, "description", f"{self.num_ipus} IPU(s)"))
        self._attached = True

    def detach(self):
        if self._handle is not None:
            handle, self._handle = self._handle, None
            try:
                handle.detach()
            except RuntimeError:
                # The IPUs are being given up; a pod that cannot hear it
                # frees them when the connection goes.
                pass
        self._attached = False

    def attached(self):
        return self._attached

    def run(self, workload, steps=1):
        """Modelled IPU seconds of each of `steps` steps ([] for the IPU
        Model); Error naming the machine, IPU or link on a fault."""
        if not self._attached:
            raise Error("Device is not attached")
        if self.ipu_model:
            return []
        try:
            times = [float(t) for t in self._handle.run(workload, steps)]
        except RuntimeError as e:
            raise Error(f"The pod failed the run on {self.description}: {e}", type="pod") from e
        if len(times) != steps or any(t < 0 for t in times):
            raise Error(f"The pod answered {len(times)} step times for {steps} steps: {times[:4]}", type="pod")
        return times
