#!/usr/bin/env python3
"""Drives Slurm's allocation cycle with C concurrent clients for N seconds.

One cycle is the Slurm equivalent of control_plane_bench's create -> ACTIVE ->
remove of a 1-IPU partition:
  salloc: `salloc -Q --gres=ipu:1 -n1 --oversubscribe true` (allocation granted,
          `true` runs inside it, allocation released when it exits).
  sbatch: `sbatch --parsable --gres=ipu:1 -n1 --oversubscribe --wrap true`,
          then poll `squeue -j ID` until the job left PENDING/RUNNING/COMPLETING
          (sacct needs slurmdbd; `sbatch --wait` sleeps >= 2 s between polls).
Each client count prints one JSON line on stdout:
  {"clients": C, "cycles": n, "cycles_per_s": x, "cycle_p50_ms": ..,
   "cycle_p99_ms": .., "errors": e, "mode": "salloc"}
SLURM_CONF must point at the cluster's slurm.conf.
"""

import argparse
import json
import subprocess
import sys
import threading
import time

ACTIVE_STATES = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED"}


def percentile(values, p):
    """Same rule as control_plane_bench: sorted[min(n-1, floor(p*n))]."""
    if not values:
        return 0.0
    v = sorted(values)
    return v[min(len(v) - 1, int(p * len(v)))]


def salloc_cycle():
    r = subprocess.run(
        ["salloc", "-Q", "--gres=ipu:1", "-n1", "--oversubscribe", "true"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, check=False)
    return r.returncode == 0, r.stderr.decode(errors="replace").strip()


def sbatch_cycle(deadline_s=120.0):
    r = subprocess.run(
        ["sbatch", "--parsable", "--gres=ipu:1", "-n1", "--oversubscribe",
         "--output=/dev/null", "--wrap", "true"],
        stdin=subprocess.DEVNULL, capture_output=True, check=False)
    if r.returncode != 0:
        return False, r.stderr.decode(errors="replace").strip()
    job = r.stdout.decode().strip().split(";")[0]
    if not job.isdigit():
        return False, f"sbatch printed no job id: {r.stdout!r}"
    # Poll like a client waiting for a state, as control_plane_bench does,
    # but from 10 ms: each poll is a process and an RPC to slurmctld.
    pause, until = 0.01, time.monotonic() + deadline_s
    while time.monotonic() < until:
        q = subprocess.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T"],
                           stdin=subprocess.DEVNULL, capture_output=True, check=False)
        state = q.stdout.decode().strip()
        if q.returncode == 0 and state not in ACTIVE_STATES:
            return state == "COMPLETED", f"job {job} ended {state or 'unknown (purged)'}"
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
    return False, f"job {job} still active after {deadline_s} s"


def run(clients, seconds, mode):
    cycle = salloc_cycle if mode == "salloc" else sbatch_cycle
    lock = threading.Lock()
    samples, errors, first_error = [], [0], [None]
    start = time.monotonic()
    until = start + seconds

    def client():
        while time.monotonic() < until:
            t0 = time.monotonic()
            ok, why = cycle()
            ms = (time.monotonic() - t0) * 1000.0
            with lock:
                if ok:
                    samples.append(ms)
                else:
                    errors[0] += 1
                    first_error[0] = first_error[0] or why

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    if first_error[0]:
        print(f"slurm {mode}: first error: {first_error[0]}", file=sys.stderr)
    return {
        "mode": mode, "clients": clients, "cycles": len(samples),
        "cycles_per_s": len(samples) / elapsed,
        "cycle_p50_ms": percentile(samples, 0.5),
        "cycle_p99_ms": percentile(samples, 0.99),
        "errors": errors[0],
    }


def positive_list(text):
    try:
        values = [int(c) for c in text.split(",")]
    except ValueError:
        values = []
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"clients: must be positive integers, got {text}")
    return values


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=positive_list, default=[1, 8, 32])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--mode", choices=["salloc", "sbatch"], default="salloc")
    args = ap.parse_args()
    if args.seconds <= 0:
        ap.error(f"seconds: must be > 0, got {args.seconds}")
    for c in args.clients:
        print(json.dumps(run(c, args.seconds, args.mode)), flush=True)


if __name__ == "__main__":
    main()
