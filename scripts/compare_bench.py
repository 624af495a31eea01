#!/usr/bin/env python3
"""Compare the benchmarks of two builds run in the same call (scripts/gpu_check.sh compare).

    python3 scripts/compare_bench.py --old a1.json a2.json --new b1.json b2.json \
        --map stage04/v3=stage04/v4,stage04/v4=stage04/v5 [--limit 0.03]

Each side's time for a benchmark is the mean of the medians of its runs (ABBA order: old, new, new,
old, so that drift in clocks or temperature falls on both sides alike). --map renames old versions
(old=new) where a change renumbered them. Prints one row per benchmark both sides have, new time over
old, and exits 1 when one is more than --limit slower.
"""
import argparse
import json
import re
import sys
from collections import defaultdict

AGGREGATE = re.compile(r"_(median)$")


def medians(paths):
    """benchmark name -> list of median real times (ms), one per file that has it."""
    out = defaultdict(list)
    for path in paths:
        with open(path) as f:
            for row in json.load(f).get("benchmarks", []):
                if row.get("aggregate_name") != "median" or row.get("error_occurred"):
                    continue
                name = AGGREGATE.sub("", row["run_name"] if "run_name" in row else row["name"])
                name = re.sub(r"/(manual_time|repeats:\d+|min_time:[0-9.]+)", "", name)
                out[name].append(float(row["real_time"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", action="extend", nargs="+", default=[], help="benchmark JSON of the earlier build")
    ap.add_argument("--new", action="extend", nargs="+", default=[], help="benchmark JSON of this build")
    ap.add_argument("--map", default="", help="old=new version renames, comma-separated")
    ap.add_argument("--limit", type=float, default=0.03, help="largest slowdown allowed (0.03: 3%%)")
    args = ap.parse_args()
    renames = dict(pair.split("=") for pair in args.map.split(",") if pair)

    def renamed(name):
        for old, new in renames.items():
            if name.startswith(old + "/"):
                return new + name[len(old):]
        return name

    old = {renamed(k): v for k, v in medians(args.old).items()}
    new = medians(args.new)
    common = sorted(set(old) & set(new))
    if not common:
        sys.exit("compare_bench: no benchmark is in both sets")
    worst = 0.0
    print(f"{'benchmark (new name)':60s} {'old ms':>9s} {'new ms':>9s} {'new/old':>8s}")
    for name in common:
        o = sum(old[name]) / len(old[name])
        n = sum(new[name]) / len(new[name])
        ratio = n / o
        worst = max(worst, ratio - 1.0)
        flag = "  SLOWER" if ratio > 1.0 + args.limit else ""
        print(f"{name:60s} {o:9.4f} {n:9.4f} {ratio:8.3f}{flag}")
    only_new = sorted(set(new) - set(old))
    if only_new:
        print("new only (no earlier counterpart): " + ", ".join(only_new))
    print(f"largest slowdown: {100 * worst:+.1f}% (limit {100 * args.limit:.0f}%) over {len(common)} benchmarks")
    return 1 if worst > args.limit else 0


if __name__ == "__main__":
    sys.exit(main())
