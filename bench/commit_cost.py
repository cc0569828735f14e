"""The CPU one durable SQLite commit costs on this machine's disk, with the
settings vipu-server's store uses (WAL, synchronous=FULL): one row of about
the size of a partition's written per transaction, as many transactions as
--commits, in a fresh file in --dir (default: the temporary directory, where
the bench scripts put the server's database).

Prints the wall time, the CPU (user and system) and the context switches
per commit, measured by this process around the loop (getrusage). Python's
own cost per statement is part of "user"; the commit's fsync and WAL write
are "system".
"""
import argparse
import os
import resource
import sqlite3
import tempfile
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args()
    if args.commits <= 0:
        parser.error("--commits: must be > 0")
    if not os.path.isdir(args.dir):
        parser.error(f"--dir: {args.dir} is not a directory")
    with tempfile.TemporaryDirectory(dir=args.dir) as work:
        db = sqlite3.connect(os.path.join(work, "commit_cost.db"), isolation_level=None)
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT)")
        before = resource.getrusage(resource.RUSAGE_SELF)
        started = time.monotonic()
        for i in range(args.commits):
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t VALUES (?, ?)", (f"p{i}", "x" * 300))
            db.execute("COMMIT")
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_SELF)
        db.close()
    n = args.commits
    user = (after.ru_utime - before.ru_utime) / n * 1000
    system = (after.ru_stime - before.ru_stime) / n * 1000
    switches = (after.ru_nvcsw - before.ru_nvcsw + after.ru_nivcsw - before.ru_nivcsw) / n
    print(f"{n} commits in {args.dir}: wall {wall / n * 1000:.3f} ms, "
          f"CPU {user + system:.3f} ms (user {user:.3f}, system {system:.3f}), "
          f"context switches {switches:.2f} per commit")


if __name__ == "__main__":
    main()
