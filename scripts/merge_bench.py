#!/usr/bin/env python3
"""Fold a partial re-run of a benchmark (run with --benchmark_filter) into its full results file.

    python3 scripts/merge_bench.py results/<gpu>/stage06.json rerun.json [--out merged.json]

Every benchmark the re-run has replaces all rows of the same name in the full file (iteration rows
and aggregates together), in place; benchmarks only the re-run has are appended. So a shape whose
versions and peers were all re-run is compared within one run, never half from each. The full
file's context is kept and gains ``rerun_<n>_date`` and ``rerun_<n>_benchmarks`` (how many names
came from that re-run), so the provenance travels with the numbers. Both files must come from the
same GPU (the context's ``gpu_name``), or nothing is written.
"""
import argparse
import json
import re
import sys

# Google Benchmark names one benchmark's rows alike up to the aggregate suffix.
AGGREGATE = re.compile(r"_(mean|median|stddev|cv)$")


def benchmark_of(row: dict) -> str:
    return row.get("run_name") or AGGREGATE.sub("", row["name"])


def merge(full: dict, rerun: dict) -> tuple[dict, int, int]:
    """(merged document, names replaced, names appended)."""
    gpus = {doc.get("context", {}).get("gpu_name") for doc in (full, rerun)}
    if len(gpus) != 1:
        raise SystemExit(f"merge_bench: the files come from different GPUs: {sorted(map(str, gpus))}")
    new_rows: dict[str, list[dict]] = {}
    for row in rerun["benchmarks"]:
        new_rows.setdefault(benchmark_of(row), []).append(row)
    merged, placed = [], set()
    for row in full["benchmarks"]:
        name = benchmark_of(row)
        if name not in new_rows:
            merged.append(row)
        elif name not in placed:  # the re-run's rows take the place of the first old row
            merged.extend(new_rows[name])
            placed.add(name)
    appended = [name for name in new_rows if name not in placed]
    for name in appended:
        merged.extend(new_rows[name])
    context = dict(full.get("context", {}))
    n = 1 + sum(1 for key in context if re.fullmatch(r"rerun_\d+_date", key))
    context[f"rerun_{n}_date"] = rerun.get("context", {}).get("date", "unknown")
    context[f"rerun_{n}_benchmarks"] = str(len(new_rows))
    return {**full, "context": context, "benchmarks": merged}, len(placed), len(appended)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("full", help="the complete benchmark JSON (results/<gpu>/stageNN.json)")
    ap.add_argument("rerun", help="the partial re-run's JSON (--benchmark_out of a filtered run)")
    ap.add_argument("--out", help="where to write the result (default: over FULL)")
    args = ap.parse_args()
    with open(args.full) as f:
        full = json.load(f)
    with open(args.rerun) as f:
        rerun = json.load(f)
    doc, replaced, appended = merge(full, rerun)
    with open(args.out or args.full, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    print(f"merge_bench: {replaced} benchmarks replaced, {appended} appended, from {args.rerun}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
