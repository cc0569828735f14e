"""The link to the pod: poptorch-pod, the C++ program that attaches to the
partition's IPUs through IPUoF and runs each step on the pod's machines
(poptorch/pod_session.h says what it answers). One program a process runs,
one attachment each; the IPUs are freed when it is told to detach, when it
reads the end of its input, or when this process dies (its pipe closes).

The program is found as $POPTORCH_POD_BIN, beside a build tree's python/
(<build>/bin/poptorch-pod), or on PATH (the package installs it in
/usr/bin). Without it this module does not import, and poptorch says the
pod cannot be reached.
"""
import glob
import json
import os
import shutil
import socket
import subprocess

__all__ = ["configured", "Attachment", "program"]


def program():
    """The poptorch-pod program, or None."""
    named = os.environ.get("POPTORCH_POD_BIN", "")
    if named:
        return named if os.access(named, os.X_OK) else None
    here = os.path.dirname(os.path.abspath(__file__))
    beside = os.path.normpath(os.path.join(here, "..", "..", "bin", "poptorch-pod"))
    if os.access(beside, os.X_OK):
        return beside
    return shutil.which("poptorch-pod")


if program() is None:
    raise ImportError("poptorch-pod is not installed or built (set POPTORCH_POD_BIN to it)")


def configured():
    """Whether the environment names a GCD to attach to, as the IPUoF client
    looks for one: the V-IPU server's variables, a config file, or
    ~/.ipuof.conf.d/."""
    if os.environ.get("IPUOF_VIPU_API_PARTITION_ID") or os.environ.get("IPUOF_CONFIG_PATH"):
        return True
    return bool(glob.glob(os.path.join(os.path.expanduser("~"), ".ipuof.conf.d", "*_ipuof.conf")))


def _device_ipus(device_id, gcd_ipus):
    """The first IPU and the count of device `device_id` of a GCD of
    `gcd_ipus` IPUs, numbered as gc-info lists them: the single IPUs, then
    the pairs, the fours, ..., the whole GCD."""
    base, size = 0, 1
    while size <= gcd_ipus:
        count = gcd_ipus // size
        if device_id < base + count:
            return (device_id - base) * size, size
        base += count
        size *= 2
    raise RuntimeError(f"device {device_id}: the GCD of {gcd_ipus} IPUs has devices 0..{base - 1}")


def _layers(workload):
    """The pod's layer-by-layer form of poptorch's description (_describe.py):
    each matrix product is a layer with its parameters; the other ops' bytes
    and count are shared among the layers. Per sample, as the pod scales
    them by the micro-batch."""
    micro_batch = max(1, int(workload.get("micro_batch", 1)))
    gemms = workload.get("gemms") or []
    n = max(1, len(gemms))
    elementwise = float(workload.get("elementwise_bytes", 0)) / micro_batch / n
    ops = float(workload.get("ops", 0)) / n
    layers = []
    for i, (m, k, n_out, *count) in enumerate(gemms):
        times = count[0] if count else 1
        layers.append({"name": f"product {i}", "products": [[m / micro_batch, k, n_out, times]],
                       "params": k * n_out * times, "param_tensors": 2 * times,
                       "output_bytes": 2.0 * m / micro_batch * n_out * times,
                       "elementwise_bytes": elementwise, "ops": ops})
    if not layers:
        layers.append({"name": "ops", "elementwise_bytes": elementwise, "ops": ops,
                       "params": float(workload.get("params", 0))})
    return layers


def _pod_workload(workload):
    return {
        "name": str(workload.get("name", "model")),
        "layers": _layers(workload),
        "input_bytes_per_sample": float(workload.get("input_bytes_per_sample", 0)),
        "micro_batch": max(1, int(workload.get("micro_batch", 1))),
        "grad_accum": max(1, int(workload.get("grad_accum", 1))),
        "device_iterations": max(1, int(workload.get("device_iterations", 1))),
        "replicas": max(1, int(workload.get("total_replicas", workload.get("replicas", 1)))),
        "ipus_per_replica": max(1, int(workload.get("ipus_per_replica", 1))),
        "optimizer": str(workload.get("optimizer", "sgd")),
        "training": bool(workload.get("training", True)),
    }


class Attachment:
    """IPUs of the configured GCD, held until detach()."""

    def __init__(self, num_ipus, device_id=-1):
        self._process = subprocess.Popen([program()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, bufsize=1)
        self._converted = None
        owner = f"pid {os.getpid()} on {socket.gethostname()}"
        try:
            first = 0
            if device_id is not None and device_id >= 0:
                # The GCD's size decides what a device id means: ask once
                # for one IPU, then attach the device's own IPUs.
                probe = self._ask({"op": "attach", "first_ipu": 0, "ipus": 1, "owner": owner})
                self._ask({"op": "detach"})
                first, count = _device_ipus(device_id, int(probe["gcd_ipus"]))
                if count < num_ipus:
                    raise RuntimeError(f"device {device_id} has {count} IPU(s); the program needs {num_ipus}")
            answer = self._ask({"op": "attach", "first_ipu": first, "ipus": num_ipus, "owner": owner})
        except Exception:
            self._stop()
            raise
        last = first + num_ipus - 1
        ipus = f"IPU {first}" if num_ipus == 1 else f"IPUs {first}-{last}"
        self.description = (f"partition {answer['partition']}, GCD {answer['gcd']}, {ipus} of "
                            f"{answer['gcd_ipus']} (machine {answer['machine']})")
        self.partition = answer["partition"]

    def _ask(self, request):
        if self._process is None:
            raise RuntimeError("detached from the pod")
        try:
            self._process.stdin.write(json.dumps(request) + "\n")
            self._process.stdin.flush()
            line = self._process.stdout.readline()
        except (BrokenPipeError, OSError) as e:
            raise RuntimeError(f"the pod link (poptorch-pod) ended: {e}") from e
        if not line:
            code = self._process.poll()
            raise RuntimeError(f"the pod link (poptorch-pod) ended (exit status {code})")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError(answer.get("message", "refused"))
        return answer

    def run(self, workload, steps=1):
        """The modelled seconds of each of `steps` steps of `workload`."""
        if self._converted is None or self._converted[0] is not workload:
            self._converted = (workload, _pod_workload(workload))
        answer = self._ask({"op": "run", "steps": int(steps), "workload": self._converted[1]})
        return [float(t) for t in answer["step_time_s"]]

    def detach(self):
        if self._process is None:
            return
        try:
            self._ask({"op": "detach"})
        except RuntimeError:
            pass
        self._stop()

    def _stop(self):
        process, self._process = self._process, None
        if process is None:
            return
        try:
            process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __del__(self):
        self._stop()
