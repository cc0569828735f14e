#!/usr/bin/env python3
"""Joins control_plane_bench's JSON lines (--json) and slurm_cycle_driver.py's
JSON lines on the client count and prints one markdown table with the ratios.

Throughput ratio = ours cycles/s / Slurm cycles/s; latency ratio = Slurm cycle
ms / ours cycle ms (p50 and p99): both read "how many times better ours is".
"""

import argparse
import json
import sys


def parse_ours(path):
    """control_plane_bench --json: one {"mode":"cycles",...} object per client count."""
    out = {}
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            if r.get("mode") != "cycles":
                continue
            out[r["clients"]] = {"cps": r["cycles_per_s"], "p50": r["cycle"]["p50_ms"],
                                 "p99": r["cycle"]["p99_ms"],
                                 "errors": r["errors"],
                                 "per_floor": r.get("cycles_per_floor_call"),
                                 "cpu": r.get("server_cpu_ms_per_cycle"),
                                 "status": r.get("status_calls_per_cycle")}
    if not out:
        sys.exit(f"{path}: no JSON lines from control_plane_bench --json")
    return out


def parse_slurm(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                out[r["clients"]] = r
    return out


def ratio(a, b):
    return f"{a / b:.1f}x" if b > 0 else "n/a"


def opt(v, digits):
    """A figure the bench printed only when asked for it."""
    return "-" if v is None else f"{v:.{digits}f}"


def ms(v):
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ours", required=True, help="control_plane_bench stdout")
    ap.add_argument("--slurm", required=True, help="slurm_cycle_driver.py stdout")
    args = ap.parse_args()
    ours, slurm = parse_ours(args.ours), parse_slurm(args.slurm)
    print("| clients | ours cycles/s | slurm cycles/s | ratio | ours p50/p99 cycle ms "
          "| slurm p50/p99 cycle ms | latency ratio p50/p99 | errors ours/slurm "
          "| ours cycles/s / RPC floor | ours server CPU ms / cycle | ours status calls / cycle |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in sorted(set(ours) | set(slurm)):
        o, s = ours.get(c), slurm.get(c)
        if o is None or s is None:
            print(f"| {c} | {'missing' if o is None else o['cps']} | "
                  f"{'missing' if s is None else s['cycles_per_s']} | n/a | | | | | | | |")
            continue
        print(f"| {c} | {o['cps']:.0f} | {s['cycles_per_s']:.1f} | {ratio(o['cps'], s['cycles_per_s'])} "
              f"| {ms(o['p50'])} / {ms(o['p99'])} "
              f"| {ms(s['cycle_p50_ms'])} / {ms(s['cycle_p99_ms'])} "
              f"| {ratio(s['cycle_p50_ms'], o['p50'])} / {ratio(s['cycle_p99_ms'], o['p99'])} "
              f"| {o['errors']} / {s['errors']} "
              f"| {opt(o['per_floor'], 3)} | {opt(o['cpu'], 3)} | {opt(o['status'], 2)} |")


if __name__ == "__main__":
    main()
