#!/usr/bin/env python3
"""Times `srun [--ipus=N] CMD` jobs: srun start -> task start, and the whole job.

Run by spank_latency.sh, which starts Slurm and vipu-server. The task is
`date +%s%N` (it does what `true` does, and prints when it started); the
same clock (CLOCK_REALTIME) is read before srun starts and after it exits.
Prints one JSON line per mode with p50/p90/mean in ms.
"""
import argparse
import json
import statistics
import subprocess
import time


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--label", required=True)
    ap.add_argument("srun_args", nargs="*")
    a = ap.parse_args()
    to_task, whole = [], []
    for _ in range(a.runs):
        t0 = time.time_ns()
        r = subprocess.run(["srun", *a.srun_args, "date", "+%s%N"], capture_output=True, text=True)
        t1 = time.time_ns()
        if r.returncode != 0:
            raise SystemExit(f"srun failed ({r.returncode}): {r.stderr.strip()}")
        started = int(r.stdout.strip().splitlines()[-1])
        to_task.append((started - t0) / 1e6)
        whole.append((t1 - t0) / 1e6)
    out = {"mode": a.label, "runs": a.runs}
    for name, xs in (("to_task_ms", to_task), ("job_ms", whole)):
        out[name] = {"p50": round(pct(xs, 0.5), 1), "p90": round(pct(xs, 0.9), 1),
                     "mean": round(statistics.mean(xs), 1)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
