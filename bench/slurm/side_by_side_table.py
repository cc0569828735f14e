#!/usr/bin/env python3
"""Joins control_plane_bench's markdown table and slurm_cycle_driver.py's JSON
lines on the client count and prints one markdown table with the ratios.

Throughput ratio = ours cycles/s / Slurm cycles/s; latency ratio = Slurm cycle
ms / ours cycle ms (p50 and p99): both read "how many times better ours is".
control_plane_bench's columns are found by header name. It has no "cycle p50 ms"
column today; then ours p50 is the sum of the create, active and remove p50s,
marked "~" (an estimate: the median of a sum is not the sum of medians).
"""

import argparse
import json
import sys


def parse_ours(path):
    rows, header = {}, None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("|") or line.startswith("|---"):
                continue
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells
                continue
            row = dict(zip(header, cells))
            rows[int(row["clients"])] = row
    if header is None:
        sys.exit(f"{path}: no markdown table from control_plane_bench")
    for need in ("clients", "cycles/s", "cycle p99 ms", "errors"):
        if need not in header:
            sys.exit(f"{path}: column '{need}' missing from control_plane_bench output")
    out = {}
    for c, row in rows.items():
        if "cycle p50 ms" in row:
            p50, exact = float(row["cycle p50 ms"]), True
        else:
            p50 = sum(float(row[f"{p} p50 ms"]) for p in ("create", "active", "remove"))
            exact = False
        out[c] = {"cps": float(row["cycles/s"]), "p50": p50, "p50_exact": exact,
                  "p99": float(row["cycle p99 ms"]), "errors": int(row["errors"])}
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


def ms(v):
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ours", required=True, help="control_plane_bench stdout")
    ap.add_argument("--slurm", required=True, help="slurm_cycle_driver.py stdout")
    args = ap.parse_args()
    ours, slurm = parse_ours(args.ours), parse_slurm(args.slurm)
    print("| clients | ours cycles/s | slurm cycles/s | ratio | ours p50/p99 cycle ms "
          "| slurm p50/p99 cycle ms | latency ratio p50/p99 | errors ours/slurm |")
    print("|---|---|---|---|---|---|---|---|")
    for c in sorted(set(ours) | set(slurm)):
        o, s = ours.get(c), slurm.get(c)
        if o is None or s is None:
            print(f"| {c} | {'missing' if o is None else o['cps']} | "
                  f"{'missing' if s is None else s['cycles_per_s']} | n/a | | | | |")
            continue
        approx = "" if o["p50_exact"] else "~"
        print(f"| {c} | {o['cps']:.0f} | {s['cycles_per_s']:.1f} | {ratio(o['cps'], s['cycles_per_s'])} "
              f"| {approx}{ms(o['p50'])} / {ms(o['p99'])} "
              f"| {ms(s['cycle_p50_ms'])} / {ms(s['cycle_p99_ms'])} "
              f"| {approx}{ratio(s['cycle_p50_ms'], o['p50'])} / {ratio(s['cycle_p99_ms'], o['p99'])} "
              f"| {o['errors']} / {s['errors']} |")
    if any(not o["p50_exact"] for o in ours.values()):
        print("\n~ ours p50 = create p50 + active p50 + remove p50 (control_plane_bench prints no "
              "cycle p50)")


if __name__ == "__main__":
    main()
