#!/usr/bin/env python3
"""Writes the pick table: for every benchmark point of every GPU in results/, the library's versions
ranked by their measured median time there, fastest first. The picking entries (fs_attention_forward,
fs_attention_backward, fs_gemm; common/lib/pick.cpp) run the first of a point's versions that takes
the caller's problem on the caller's GPU, at the point nearest the problem.

    python3 scripts/make_pick_table.py            writes common/lib/pick_table.inc
    python3 scripts/make_pick_table.py --check    writes nothing; exit 1 if the file is stale
    python3 scripts/make_pick_table.py --markdown prints the table for a person (the reference GPU)

What it reads, per GPU folder (the reference, results/REFERENCE, first; then the others in name order):
  - every stage*.json, the median rows of the library's own versions: "stageNN/vN/<dtype>/<shape>"
    and "stage07/<rung>/vN/…" (rungs gemm, attention and the backward's attention_bwd, whose rows,
    in stage07_attention_bwd.json, join stage 05's in the backward's table). Peers (cuBLAS, SDPA) are not the library's and are left out; so are
    evidence rows that force a configuration (a `tile:` or `splits:` in the name) and versions the
    registry does not list (an ablation such as v9_delta_in_loop). A backward's "vN_deterministic"
    row is vN asked for a deterministic dQ.
  - the GPU's name and compute capability from the JSON's context (gpu_name, compute_capability).
A folder of the reference's compute capability enters a problem's table only where it measured every
version the reference measured for that problem (else that GPU takes the reference's ranking there).
A version with no row on a GPU is never picked there by the table (the entries fall back to a rule,
pick.cpp says which, only where no ranked version takes the problem).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plots"))
from flashstages_plots.files import reference_folder  # noqa: E402  (results/REFERENCE, read once for the project)
from flashstages_plots.series import DEFAULT_MODEL_DIM, DEFAULT_TOKENS  # noqa: E402  (the benchmarks' grid rule)
from flashstages_plots.techniques import version_techniques  # noqa: E402  (the registry's descriptors)

RESULTS = ROOT / "results"
OUT = ROOT / "common" / "lib" / "pick_table.inc"
RANKED = 4  # versions kept per point, fastest first

DTYPES = {"fp32": "FS_FP32", "fp16": "FS_FP16", "bf16": "FS_BF16", "int8": "FS_INT8", "fp8_e4m3": "FS_FP8_E4M3"}
# A benchmark's stage (its registry stage), version, deterministic suffix, dtype and point:
# "stage04/v5/…", "stage07/attention/v8/…", "stage07/attention_bwd/v1_deterministic/…". The registry
# stage is matched whole: "stage07/attention" does not take the backward rung's "stage07/attention_bwd".
VERSION = re.compile(r"^(stage0[1-5]|stage06|stage07/attention_bwd|stage07/attention|stage07/gemm)/(v\d+)"
                     r"(_deterministic)?/([a-z0-9_]+)/(.*)$")
PROBLEM = {"stage01": "fwd", "stage02": "fwd", "stage03": "fwd", "stage04": "fwd", "stage07/attention": "fwd",
           "stage05": "bwd", "stage07/attention_bwd": "bwd", "stage06": "gemm", "stage07/gemm": "gemm"}


def shape_of(problem: str, fields: dict[str, str]) -> tuple | None:
    """The point a benchmark measured. Attention: (head_dim, causal, batch, heads, kv_heads, seq_q,
    seq_k, packed); GEMM: (m, n, k). None for an evidence row."""
    if "tile" in fields or "splits" in fields:
        return None
    if problem == "gemm":
        return int(fields["M"]), int(fields["N"]), int(fields["K"])
    d, causal = int(fields["D"]), int(fields["causal"])
    if "packed" in fields:  # "16x512-8192": 16 entries of 512 to 8192 rows; "2x8192"
        entries, lengths = fields["packed"].split("x")
        longest = int(lengths.split("-")[-1])
        return d, causal, int(entries), int(fields["H"]), int(fields["H"]), longest, longest, 1
    if "N" in fields:  # the square grid: B·N = DEFAULT_TOKENS (B at least 1), H = DEFAULT_MODEL_DIM / D
        n = int(fields["N"])
        return d, causal, max(1, DEFAULT_TOKENS // n), DEFAULT_MODEL_DIM // d, DEFAULT_MODEL_DIM // d, n, n, 0
    heads = int(fields["H"])
    return d, causal, int(fields["B"]), heads, int(fields.get("KVH", heads)), int(fields["Nq"]), int(fields["Nk"]), 0


def read_gpu(folder: Path) -> tuple[str, int, dict]:
    """(GPU name, compute capability, {(problem, dtype, deterministic, shape): {version: [ms, …]}})."""
    name, cc = "", 0
    times: dict = defaultdict(lambda: defaultdict(list))
    for path in sorted(folder.glob("stage*.json")):
        doc = json.loads(path.read_text())
        ctx = doc.get("context", {})
        name = name or ctx.get("gpu_name", "")
        cc = cc or int(round(float(ctx.get("compute_capability", "0")) * 10))
        for row in doc.get("benchmarks", []):
            if row.get("aggregate_name") != "median" or row.get("error_occurred"):
                continue
            m = VERSION.match(row["name"])
            if not m:
                continue
            stage, version, deterministic, dtype, rest = m.groups()
            fields = dict(p.split(":", 1) for p in rest.split("/") if ":" in p)
            fields = {k: v.removesuffix("_median") for k, v in fields.items()}
            shape = shape_of(PROBLEM[stage], fields)
            if shape is None or dtype not in DTYPES:
                continue
            key = (PROBLEM[stage], dtype, bool(deterministic), shape)
            times[key][f"{stage}/{version}"].append(float(row["real_time"]))
    return name, cc, times


def gpu_folders() -> list[Path]:
    ref = reference_folder(ROOT)
    others = sorted(p for p in RESULTS.iterdir() if p.is_dir() and p != ref and any(p.glob("stage*.json")))
    return [ref] + others


def versions_by_problem(times: dict, known: set[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for (problem, *_), by_version in times.items():
        out[problem] |= {v for v in by_version if not known or v in known}
    return out


def tables(known: set[str]) -> list[dict]:
    """Per GPU folder (the reference first), its points with their rankings. A GPU of the reference's
    compute capability keeps a problem's points only if it measured every version the reference
    measured for that problem: an older folder that never timed the newer versions would rank
    without them (an H100 folder from before stage 07's backward would pick stage 05 there), while
    the reference, same SMs, ranks them all. Without them its calls take the reference's ranking."""
    out = []
    reference: tuple[int, dict[str, set[str]]] | None = None
    for folder in gpu_folders():
        name, cc, times = read_gpu(folder)
        mine = versions_by_problem(times, known)
        if reference is None:
            reference = (cc, mine)
        elif cc == reference[0]:
            missing = {problem: versions - mine.get(problem, set()) for problem, versions in reference[1].items()}
            behind = {problem for problem, versions in missing.items() if versions}
            for problem in sorted(behind):
                print(f"make_pick_table: {folder.name}: {problem} without {', '.join(sorted(missing[problem]))}: "
                      "its calls take the reference's ranking", file=sys.stderr)
            times = {key: by_version for key, by_version in times.items() if key[0] not in behind}
        points = []
        for (problem, dtype, det, shape), by_version in sorted(times.items()):
            ranked = sorted((statistics.median(ms), v) for v, ms in by_version.items() if not known or v in known)
            if ranked:
                points.append({"problem": problem, "dtype": dtype, "deterministic": det, "shape": shape,
                               "ranked": [(v, ms) for ms, v in ranked[:RANKED]]})
        if points:
            out.append({"folder": folder.name, "gpu": name, "cc": cc, "points": points})
    return out


def render(gpus: list[dict]) -> str:
    lines = ["// Generated by scripts/make_pick_table.py from results/*/stage*.json (the reference GPU first); do not",
             "// edit: rerun the script. Per GPU, every benchmark point with the library's versions ranked by their",
             "// median time there (ms), fastest first. common/lib/pick.cpp reads it.",
             "// Attention: {problem, dtype, deterministic, head_dim, causal, batch, heads, kv_heads, seq_q, seq_k,",
             "//             packed, {ranked}}; GEMM: {ab_dtype, m, n, k, {ranked}}.",
             ""]
    att, gemm, gpus_rows = [], [], []
    for g in gpus:
        a0, m0 = len(att), len(gemm)
        for p in g["points"]:
            ranked = ", ".join(f'{{"{v}", {ms:.4f}f}}' for v, ms in p["ranked"])
            if p["problem"] == "gemm":
                m, n, k = p["shape"]
                gemm.append(f"    {{{DTYPES[p['dtype']]}, {m}, {n}, {k}, {{{ranked}}}}},")
            else:
                d, causal, b, h, kvh, nq, nk, packed = p["shape"]
                prob = "FS_PROBLEM_ATTENTION" if p["problem"] == "fwd" else "FS_PROBLEM_ATTENTION_BWD"
                att.append(f"    {{{prob}, {DTYPES[p['dtype']]}, {int(p['deterministic'])}, {d}, {causal}, {b}, {h}, "
                           f"{kvh}, {nq}, {nk}, {packed}, {{{ranked}}}}},")
        gpus_rows.append(f'    {{"{g["gpu"]}", "{g["folder"]}", {g["cc"]}, {a0}, {len(att) - a0}, {m0}, {len(gemm) - m0}}},')
    lines.append("const PickAttentionPoint kPickAttention[] = {")
    lines += att + ["};", "", "const PickGemmPoint kPickGemm[] = {"] + gemm + ["};", ""]
    lines.append("// {GPU name, results folder, compute capability, first attention point, count, first GEMM point, count}")
    lines.append("const PickGpu kPickGpus[] = {")
    lines += gpus_rows + ["};", ""]
    return "\n".join(lines)


def markdown(gpus: list[dict]) -> str:
    g = gpus[0]
    rows = [f"Pick table of {g['gpu']} (results/{g['folder']}): at each benchmark point, the versions fastest first.", "",
            "| problem | dtype | shape | picked | then |", "|---|---|---|---|---|"]
    for p in g["points"]:
        if p["problem"] == "gemm":
            shape = "M={} N={} K={}".format(*p["shape"])
        else:
            d, causal, b, h, kvh, nq, nk, packed = p["shape"]
            shape = f"D={d} B={b} H={h}" + (f" KVH={kvh}" if kvh != h else "") + f" Nq={nq} Nk={nk}"
            shape += (" causal" if causal else "") + (" packed" if packed else "")
        name = p["problem"] + (" deterministic" if p["deterministic"] else "")
        best, rest = p["ranked"][0], p["ranked"][1:]
        then = ", ".join(f"{v} {best[1] / ms:.2f}×" for v, ms in rest)
        rows.append(f"| {name} | {p['dtype']} | {shape} | {best[0]} ({best[1]:.3f} ms) | {then} |")
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 if the committed table is stale")
    p.add_argument("--markdown", action="store_true", help="print the reference GPU's table as markdown")
    args = p.parse_args(argv)
    gpus = tables(set(version_techniques(ROOT)))  # every version the registry lists
    if args.markdown:
        sys.stdout.write(markdown(gpus))
        return 0
    text = render(gpus)
    counted = f"{sum(len(g['points']) for g in gpus)} points, {len(gpus)} GPU{'s' if len(gpus) != 1 else ''}"
    if args.check:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is stale: run python3 scripts/make_pick_table.py")
            return 1
        print(f"{OUT.relative_to(ROOT)} is up to date ({counted})")
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}: {counted}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
