#!/usr/bin/env python3
"""The reference run, in parts: every benchmark, peer, test and sanitizer the docs quote, on one GPU.

A complete run takes some two hours of GPU time (`list` sums the estimates), more than one sitting on a
lent GPU allows, so it is cut into parts that each take minutes. A part is what has to be measured together: a rung's versions
and its peers at the headline shapes are one part (the same call, the same clocks); a rung's remaining
grid, or an evidence run (stage 04's tuner candidates, stage 05's deterministic repeats and its delta
ablation), is a part of its own. Each part writes its files into its own folder under --work, and a
part.json beside them (when, how long, which GPU and clocks, the exit codes), so a sitting that ends
mid-part loses that part alone, and the next sitting goes on where it stopped.

    python3 scripts/reference_run.py list                      the parts, in order, with their estimates
    python3 scripts/reference_run.py targets [PART...]         the build targets the parts need
    python3 scripts/reference_run.py run PART...               run these parts (again, if done)
    python3 scripts/reference_run.py next --budget SECONDS     run the parts not done yet, in order, while
                                                               their estimates fit the budget
    python3 scripts/reference_run.py merge --into results/<gpu>
                                                               fold the parts' JSON into one file per
                                                               stage (median rows only) and write the
                                                               parts' record, logs/reference_run_parts.txt
    python3 scripts/reference_run.py check-plan results/<gpu>  every benchmark in that folder's JSON
                                                               belongs to exactly one part (no GPU)

The estimates are from the committed H100 run (rows × repetitions × 50 ms, plus the checks and the
peers' scripts), or, for the backward rung, from its parts' first runs on the H200; `list` shows a
part's measured time once it has run. The build is the caller's:
cmake --preset h100 && cmake --build --preset h100 --target $(python3 scripts/reference_run.py targets).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from merge_bench import benchmark_of, merge  # noqa: E402  (the same folding the docs describe)

# The headline shapes: attention at N = 8192 (D = 64, 128 and stage 07's D = 256), GEMM at 4096³.
HEADLINE_ATTENTION = "/N:8192/"
# Stage 07 attention's grid off the headline (N = 8192), split by head_dim over parts; and its shapes off
# the grid, named with B and H (underfilled) or H and packed lengths (packed batches).
GRID_SEQS = "512|1024|2048|4096|16384"
SHAPE_ATTENTION = "/(B|H):[0-9]+/"
# The backward's headline: its versions (not their deterministic series) and stage 05's v10 at N = 8192,
# on the grid and at grouped K/V.
HEADLINE_BACKWARD = "/v[0-9]+/[a-z0-9]+/D:[0-9]+/(N:8192|B:[0-9]+/H:[0-9]+/KVH:[0-9]+/Nq:8192/Nk:8192)/"


@dataclass
class Bench:
    """One stage benchmark binary, filtered (Google Benchmark's regex; a leading '-' excludes)."""
    binary: str  # the build target, e.g. stage07_attention_bench
    out: str  # the results file it writes, e.g. stage07_attention.json
    filter: str = ""

    def command(self, build: Path, work: Path) -> list[str]:
        path = next(build.glob(f"**/{self.binary}"), build / self.binary)
        cmd = [str(path), f"--benchmark_out={work / self.out}", "--benchmark_out_format=json"]
        return cmd + ([f"--benchmark_filter={self.filter}"] if self.filter else [])


@dataclass
class Script:
    """A peer's Python script (PyTorch's SDPA or matmul), its rows written to `out`."""
    args: list[str]
    out: str
    fold_into: str = ""  # also folded into this file of the part (a stage's peers in its own file)
    # A peer that needs a package beyond PyTorch (cuDNN's fp8 attention: the cuDNN frontend): where it
    # skips or fails, the part records that and goes on, and its versions have no such peer this run.
    optional: bool = False

    def command(self, build: Path, work: Path) -> list[str]:
        return [sys.executable, str(ROOT / "plots" / self.args[0]), *self.args[1:], "--out", str(work / self.out)]


@dataclass
class Check:
    """The GPU tests (ctest) or a compute-sanitizer pass (scripts/gpu_check.sh's sanitize step)."""
    step: str  # test or sanitize
    env: dict[str, str] = field(default_factory=dict)

    def command(self, build: Path, work: Path) -> list[str]:
        if self.step == "test":
            return ["ctest", "--test-dir", str(build), "-L", "gpu", "-j", "8", "--output-on-failure"]
        return ["bash", str(ROOT / "scripts" / "gpu_check.sh"), build.name, self.step]


@dataclass
class Part:
    name: str
    what: str
    estimate_s: int
    steps: list
    # Which of its files the results folder keeps (the rest are the part's logs).
    keeps: tuple[str, ...] = ()
    log: str = ""  # a check's record in the results folder's logs/, named by what it holds

    @property
    def evidence(self) -> bool:
        """An evidence run: it may time again, as same-run anchors, benchmarks a stage's part owns."""
        return self.what.startswith("evidence:")


def sdpa(out: str, *args: str, fold_into: str = "") -> Script:
    return Script(["sdpa_bench.py", *args], out, fold_into)


def cudnn_fp8(out: str, *args: str) -> Script:
    """cuDNN's fp8 attention forward, v9's peer, in stage07_attention.json: optional, for it needs the
    cuDNN frontend's Python package (plots/cudnn_fp8_bench.py)."""
    return Script(["cudnn_fp8_bench.py", *args], out, "stage07_attention.json", optional=True)


PARTS: list[Part] = [
    # Estimates: the parts' times on the H200 where measured (2026-12-02: naive 281 s, stage 01's
    # quadratic memory traffic 234 s of it; ceilings 7 s; 2026-12-03: stage04_tuner 296 s), else the
    # committed runs' sums.
    Part("naive", "stages 01-03 (the naive stage is every later stage's floor)", 290,
         [Bench("stage01_bench", "stage01.json"), Bench("stage02_bench", "stage02.json"),
          Bench("stage03_bench", "stage03.json")], ("stage01.json", "stage02.json", "stage03.json")),
    Part("ceilings", "the instruction and bandwidth ceilings", 30,
         [Bench("ceilings_bench", "ceilings.json")], ("ceilings.json",)),
    Part("stage04", "stage 04 v1-v6 on the grid and the underfilled shapes; SDPA's forward on the same shapes",
         420, [Bench("stage04_bench", "stage04.json", "-/tile:"), sdpa("sdpa.json")],
         ("stage04.json", "sdpa.json")),
    Part("stage04_tuner", "evidence: every tile shape v5 and every plan v6 choose among, with the pick", 300,
         [Bench("stage04_bench", "stage04_tuner.json", "/tile:")], ("stage04_tuner.json",)),
    Part("stage05", "stage 05 v0-v10 (dQ by atomics) on its grid; SDPA's backward on the same grid", 480,
         [Bench("stage05_bench", "stage05.json", "-(_deterministic|_delta_in_loop)/"),
          sdpa("sdpa_bwd.json", "--backward", "--no-gqa")], ("stage05.json", "sdpa_bwd.json")),
    Part("stage05_deterministic", "evidence: every deterministic dQ path beside v2's and v10's atomics", 300,
         [Bench("stage05_bench", "stage05_deterministic.json", "_deterministic/|^stage05/v(2|10)/")],
         ("stage05_deterministic.json",)),
    Part("stage05_delta_ablation", "evidence: v9 with delta computed once against in every key block", 90,
         [Bench("stage05_bench", "stage05_delta_ablation.json", "^stage05/v9(_delta_in_loop)?/")],
         ("stage05_delta_ablation.json",)),
    Part("stage06", "stage 06 v1-v16 with cuBLAS and cuBLASLt; PyTorch's matmul and int_mm", 240,
         [Bench("stage06_bench", "stage06.json"), Script(["matmul_bench.py"], "torch_matmul.json")],
         ("stage06.json", "torch_matmul.json")),
    Part("stage07_gemm", "stage 07 gemm v1-v12 with cuBLAS and cuBLASLt", 220,
         [Bench("stage07_gemm_bench", "stage07_gemm.json")], ("stage07_gemm.json",)),
    Part("stage07_attention_headline",
         "stage 07 attention at N = 8192 (D = 64, 128, 256), stage 04's v5; SDPA flash and cuDNN there, cuDNN's "
         "fp8 beside v9 where the cuDNN frontend is installed", 220,
         [Bench("stage07_attention_bench", "stage07_attention.json", HEADLINE_ATTENTION),
          sdpa("sdpa_headline.json", "--seq", "8192", "--dim", "64", "128", "256", "--backend", "flash", "cudnn",
               "--no-qk", "--no-gqa", fold_into="stage07_attention.json"),
          cudnn_fp8("cudnn_fp8_headline.json", "--seq", "8192")],
         ("stage07_attention.json",)),
    # The rest of the grid, one part per head_dim, each with SDPA's flash and cuDNN on its own points in
    # the same part (its one part of 2026-12-02, D = 64 and 128 with the shapes below, took 445 s on the
    # H200; D = 256 on the whole grid and v11 made it too long for one 10-minute command). Estimates
    # from that part's time per benchmark, ~0.5 s, and sdpa_bench.py's ~1 s per point and backend.
    *[Part(f"stage07_attention_grid_d{d}",
           f"stage 07 attention at D = {d} on the rest of the grid; SDPA flash and cuDNN there"
           + (", cuDNN's fp8 beside v9" if d == 128 else ""), estimate,
           [Bench("stage07_attention_bench", "stage07_attention.json", f"/D:{d}/N:({GRID_SEQS})/"),
            sdpa(f"sdpa_grid_d{d}.json", "--seq", *GRID_SEQS.split("|"), "--dim", str(d), "--backend", "flash",
                 "cudnn", "--no-qk", "--no-gqa", fold_into="stage07_attention.json"),
            *([cudnn_fp8("cudnn_fp8_grid.json", "--seq", *GRID_SEQS.split("|"))] if d == 128 else [])],
           ("stage07_attention.json",))
      for d, estimate in ((64, 200), (128, 280), (256, 220))],
    Part("stage07_attention_shapes",
         "stage 07 attention on packed batches and underfilled shapes; SDPA there", 300,
         [Bench("stage07_attention_bench", "stage07_attention.json", SHAPE_ATTENTION),
          sdpa("sdpa_shapes.json", "--no-grid", "--backend", "flash", "cudnn", fold_into="stage07_attention.json"),
          sdpa("sdpa_packed.json", "--packed-defaults", "--dtype", "fp16", "--backend", "flash")],
         ("stage07_attention.json", "sdpa_packed.json")),
    # The backward rung in three parts (its one part of 2026-12-03, v1 … v10 with their deterministic
    # series on 40 points, ran out of a 450 s budget at 687 of 808 benchmarks, ~0.6 s each): the headline
    # N = 8192 with its peers, the rest of the grid with its peers and the grouped shapes, and the
    # deterministic series as evidence beside same-run anchors. Estimates from their first runs on the H200
    # (2026-12-03): the headline 165 s, the grid 296 s; the deterministic part stopped at 462 of its 480
    # benchmarks at a 300 s budget.
    Part("stage07_attention_bwd_headline",
         "stage 07 attention backward at N = 8192 (D = 64, 128; grouped K/V too), stage 05's v10; SDPA flash and "
         "cuDNN there", 180,
         [Bench("stage07_attention_bwd_bench", "stage07_attention_bwd.json", HEADLINE_BACKWARD),
          sdpa("sdpa_bwd_headline.json", "--backward", "--seq", "8192", "--backend", "flash", "cudnn",
               fold_into="stage07_attention_bwd.json")],
         ("stage07_attention_bwd.json",)),
    # The grid part: 296 s on the H200 (2026-12-03) before the packed batches (8 per version, about 0.6 s
    # each, and their SDPA peers) were added: estimated 420 s since.
    Part("stage07_attention_bwd_grid",
         "stage 07 attention backward on the rest of its grid, grouped K/V at N = 2048, packed batches; SDPA "
         "flash and cuDNN there",
         420, [Bench("stage07_attention_bwd_bench", "stage07_attention_bwd.json", "-(_deterministic/|/N:8192/|/Nq:8192/)"),
          sdpa("sdpa_bwd_grid.json", "--backward", "--seq", "512", "1024", "2048", "4096", "--backend", "flash",
               "cudnn", fold_into="stage07_attention_bwd.json"),
          sdpa("sdpa_bwd_packed.json", "--packed-defaults", "--backward", "--dtype", "fp16", "--backend", "flash",
               "cudnn", fold_into="stage07_attention_bwd.json")],
         ("stage07_attention_bwd.json",)),
    Part("stage07_attention_bwd_deterministic",
         "evidence: every backward version's deterministic dQ beside v9's and v10's atomics", 340,
         [Bench("stage07_attention_bwd_bench", "stage07_attention_bwd_deterministic.json",
                "_deterministic/|^stage07/attention_bwd/v(9|10)/[a-z0-9]+/D:[0-9]+/N:")],
         ("stage07_attention_bwd_deterministic.json",)),
    Part("tests", "every GPU test (FLASHSTAGES_REQUIRE_GPU=1 ctest -L gpu)", 480, [Check("test")],
         log="tests_reference_run.txt"),
    Part("sanitize", "compute-sanitizer memcheck, initcheck and synccheck over every test binary", 300,
         [Check("sanitize", {"TOOLS": "memcheck initcheck synccheck"})], log="sanitizers_reference_run.txt"),
    # The slowest racecheck processes on the H200 (2026-12-02): stage05 v1 case 2 1,192 s, stage06 case 1
    # (every version) 819 s, stage05 v1 case 1 782 s. Stages 05 and 06 go per case and version, the rest
    # per case, all in one pool of 16 processes (the machine's cores), so no core idles behind a slow one.
    Part("racecheck", "compute-sanitizer racecheck, one process per case (stages 05 and 06: per case and version)",
         1800,
         [Check("sanitize", {"TOOLS": "racecheck", "SANITIZE": "stage07 stage06 stage05 stage04 stage01 stage02 "
                             "stage03 common ceilings", "SANITIZE_TIMEOUT": "1500", "SANITIZE_JOBS": "16",
                             "SANITIZE_ONLY": " ".join([f"stage05/v{v}" for v in range(11)] +
                                                       [f"stage06/v{v}" for v in range(1, 17)])})],
         log="racecheck_reference_run.txt"),
]
BY_NAME = {p.name: p for p in PARTS}


def part_targets(parts: list[Part]) -> list[str]:
    targets: list[str] = []
    for part in parts:
        for step in part.steps:
            names = [step.binary] if isinstance(step, Bench) else []
            if isinstance(step, Check):  # the test binaries and the library the Python tests load
                names = ["all"]
            targets += [n for n in names if n not in targets]
    return ["all"] if "all" in targets else targets


def gpu_state() -> dict[str, str]:
    query = "name,driver_version,clocks.sm,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.splitlines()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return dict(zip(query.split(","), (v.strip() for v in out[0].split(",")))) if out else {}


def commit() -> str:
    """The commit the part runs: FLASHSTAGES_COMMIT where the caller names it (a copied work tree's git
    metadata can lag behind its files), else git's HEAD."""
    if os.environ.get("FLASHSTAGES_COMMIT"):
        return os.environ["FLASHSTAGES_COMMIT"]
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or "unknown"


def fold(into: Path, extra: Path) -> None:
    """The peer's rows into the stage's file: same run, so the stage's own tables take them."""
    doc, _, _ = merge(json.loads(into.read_text()), json.loads(extra.read_text()))
    into.write_text(json.dumps(doc, indent=1))


def run_part(part: Part, build: Path, work: Path, timeout: float | None) -> bool:
    """Runs the part's steps one after the other; False if one failed or the budget ran out. A part
    whose budget ran out writes no part.json and runs again next time; a failed step still writes it,
    marked FAILED (`list` shows it, and `run PART` runs the part again)."""
    folder = work / part.name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "part.json").unlink(missing_ok=True)
    record = {"part": part.name, "what": part.what, "commit": commit(), "gpu": gpu_state(),
              "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "steps": []}
    start = time.monotonic()
    for i, step in enumerate(part.steps):
        cmd = step.command(build, folder)
        env = dict(os.environ, FLASHSTAGES_REQUIRE_GPU="1", PYTHONUNBUFFERED="1")
        if isinstance(step, Bench):  # the tuners print every candidate and their pick: the evidence
            env.setdefault("FLASHSTAGES_AUTOTUNE", "verbose")
        if isinstance(step, Check):
            env.update(step.env, LOGS=str(folder / f"logs{i}"))
        print(f"[{part.name}] {' '.join(cmd)}", flush=True)
        t0 = time.monotonic()
        with (folder / f"step{i}.log").open("w") as log:
            proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            left = None if timeout is None else max(1.0, timeout - (time.monotonic() - start))
            try:
                rc = proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                proc.kill()
                print(f"[{part.name}] stopped: the budget ran out", flush=True)
                return False
        optional = isinstance(step, Script) and step.optional
        if isinstance(step, Script) and step.fold_into and (rc == 0 or optional):
            if (folder / step.out).is_file():
                fold(folder / step.fold_into, folder / step.out)
            elif optional:
                print(f"[{part.name}] step {i} wrote no {step.out}: an optional peer, left out of this run "
                      f"(step{i}.log says why)", flush=True)
            else:  # a peer script that skips (no PyTorch) exits 0: the reference run needs its rows
                print(f"[{part.name}] step {i} wrote no {step.out}: the part has no peers, it fails", flush=True)
                rc = 1
        record["steps"].append({"command": " ".join(cmd), "rc": rc, "seconds": round(time.monotonic() - t0, 1),
                                **({"optional": True} if optional else {})})
        print(f"[{part.name}] step {i}: rc={rc} in {time.monotonic() - t0:.0f} s", flush=True)
    record["seconds"] = round(time.monotonic() - start, 1)
    record["ok"] = all(step["rc"] == 0 for step in record["steps"] if not step.get("optional"))
    (folder / "part.json").write_text(json.dumps(record, indent=1))
    return record["ok"]


def done(work: Path, part: Part) -> dict | None:
    path = work / part.name / "part.json"
    return json.loads(path.read_text()) if path.is_file() else None


def cmd_list(args: argparse.Namespace) -> int:
    total = 0
    for part in PARTS:
        rec = done(args.work, part)
        state = f"done in {rec['seconds']:.0f} s ({'ok' if rec['ok'] else 'FAILED'})" if rec else "not run"
        total += part.estimate_s
        print(f"{part.name:36s} ~{part.estimate_s:5d} s  {state:24s} {part.what}")
    print(f"{'':36s} ~{total:5d} s in all")
    return 0


def cmd_next(args: argparse.Namespace) -> int:
    deadline = time.monotonic() + args.budget
    for part in PARTS:
        if done(args.work, part) or (args.only and part.name not in args.only):
            continue
        left = deadline - time.monotonic()
        if part.estimate_s > left and not args.start_anyway:
            print(f"[next] {part.name}: ~{part.estimate_s} s does not fit the {left:.0f} s left; stopping")
            return 0
        run_part(part, args.build, args.work, left)
    print("[next] every part has run" if all(done(args.work, p) for p in PARTS) else "[next] budget used")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    unknown = [n for n in args.parts if n not in BY_NAME]
    if unknown:
        raise SystemExit(f"reference_run: no part named {', '.join(unknown)} (list shows them)")
    return 0 if all([run_part(BY_NAME[n], args.build, args.work, None) for n in args.parts]) else 1


def medians_only(doc: dict) -> dict:
    """The median rows (the rows the tables read), or the row itself where a file has no aggregates."""
    names_with_median = {benchmark_of(r) for r in doc["benchmarks"] if r.get("aggregate_name") == "median"}
    doc["benchmarks"] = [r for r in doc["benchmarks"] if r.get("aggregate_name") == "median"
                         or (benchmark_of(r) not in names_with_median and r.get("run_type") != "aggregate")]
    return doc


def cmd_merge(args: argparse.Namespace) -> int:
    files: dict[str, dict] = {}
    lines = [f"# The reference run's parts (scripts/reference_run.py), folded into {args.into}",
             "# part, commit, started (UTC), seconds, GPU, SM clock max, memory clock max, power limit; what"]
    missing = []
    # A lent GPU machine keeps nothing between sittings: a part folded into this folder by an earlier
    # merge keeps its line, its log and its rows here when --work no longer holds its record.
    record_file = args.into / "logs" / "reference_run_parts.txt"
    earlier = {line.split()[0]: line for line in (record_file.read_text().splitlines() if record_file.is_file()
                                                   else []) if line.strip() and not line.startswith("#")}
    for name in sorted(set(earlier) - set(BY_NAME)):  # a part the plan no longer has (split or renamed)
        print(f"reference_run: warning: part {name} of an earlier merge is not in the plan; its line goes, and "
              "rows only it measured stay without a record until the parts that replace it run", file=sys.stderr)
    for part in PARTS:  # a file such a part shares with a part merged now starts from its rows here
        if not done(args.work, part) and part.name in earlier:
            for name in part.keeps:
                if (args.into / name).is_file():
                    files[name] = json.loads((args.into / name).read_text())
    for part in PARTS:
        rec = done(args.work, part)
        if not rec and part.name in earlier:
            lines.append(earlier[part.name])
            continue
        if not rec:
            missing.append(part.name)
            continue
        gpu = rec.get("gpu", {})
        lines.append(f"{part.name}  {rec['commit']}  {rec['started']}  {rec['seconds']:.0f} s  "
                     f"{gpu.get('name', '?')} {gpu.get('clocks.max.sm', '?')} {gpu.get('clocks.max.mem', '?')} "
                     f"{gpu.get('power.limit', '?')}  {'ok' if rec['ok'] else 'FAILED'}; {part.what}")
        for name in part.keeps:
            path = args.work / part.name / name
            if not path.is_file():
                raise SystemExit(f"reference_run: part {part.name} has no {name}")
            doc = json.loads(path.read_text())
            files[name] = merge(files[name], doc)[0] if name in files else doc
    if missing and not args.partial:
        raise SystemExit(f"reference_run: not run yet: {', '.join(missing)} (--partial merges what there is)")
    args.into.mkdir(parents=True, exist_ok=True)
    for name, doc in files.items():
        (args.into / name).write_text(json.dumps(medians_only(doc), indent=1) + "\n")
    (args.into / "logs").mkdir(exist_ok=True)
    logs = args.into / "logs"
    for part in PARTS:
        rec = done(args.work, part)
        if rec and part.log:  # a check's verdicts: ctest's summary, or gpu_check.sh's one line per process
            text = [f"# {part.what}: {part.name} of the reference run, {rec['started']}, {rec['seconds']:.0f} s, "
                    f"commit {rec['commit']}, {rec.get('gpu', {}).get('name', '?')}"]
            for i, step in enumerate(rec["steps"]):
                text.append(f"## {step['command']}: rc={step['rc']} in {step['seconds']:.0f} s")
                summary = args.work / part.name / f"logs{i}" / "summary.txt"
                ctest = args.work / part.name / f"step{i}.log"
                source = summary if summary.is_file() else ctest
                text += source.read_text(errors="replace").splitlines() if source.is_file() else ["(no log)"]
                # Then one line per sanitizer process, in the form SANITIZE_DONE reads.
                for verdict in sorted((args.work / part.name / f"logs{i}").glob("*.log.summary")):
                    text.append(f"{verdict.name.removesuffix('.log.summary')}: {verdict.read_text().strip()}")
            logs.mkdir(parents=True, exist_ok=True)
            (logs / part.log).write_text("\n".join(text) + "\n")
    (args.into / "logs" / "reference_run_parts.txt").write_text("\n".join(lines + [f"# not run: {m}" for m in missing]) + "\n")
    print(f"wrote {len(files)} files into {args.into}" + (f"; not run: {', '.join(missing)}" if missing else ""))
    return 0


def binary_of(results_file: str) -> str:
    """The bench binary that writes a results file: stage07_attention.json, stage07_attention_bwd.json
    and the evidence files (stage04_tuner.json, stage05_delta_ablation.json,
    stage07_attention_bwd_deterministic.json) come from stage07_attention_bench,
    stage07_attention_bwd_bench, stage04_bench, stage05_bench, stage07_attention_bwd_bench."""
    words = results_file.removesuffix(".json").split("_")
    binaries = {s.binary for p in PARTS for s in p.steps if isinstance(s, Bench)}
    for n in range(len(words), 0, -1):  # the longest name first: stage07_attention_bwd_deterministic's
        if f"{'_'.join(words[:n])}_bench" in binaries:  # is stage07_attention_bwd_bench, not the forward's
            return f"{'_'.join(words[:n])}_bench"
    return ""


def steps_selecting(binary: str, name: str) -> list[str]:
    """The parts whose run of `binary` selects benchmark `name` (Google Benchmark's filter: a regex
    searched in the name; a leading '-' selects what it does not match)."""
    owners = []
    for part in PARTS:
        for step in part.steps:
            if isinstance(step, Bench) and step.binary == binary:
                f = step.filter
                if not f or (re.search(f[1:], name) is None if f.startswith("-") else re.search(f, name)):
                    owners.append(f"{part.name} ({step.out})")
    return owners


def cmd_check_plan(args: argparse.Namespace) -> int:
    """Every benchmark that a bench binary wrote into the folder is run by exactly one part (evidence
    parts aside, which may time a stage's benchmark again beside their own)."""
    problems, count = [], 0
    for path in sorted(args.results.glob("*.json")):
        binary = binary_of(path.name)
        if not binary:
            continue  # a peer's file (sdpa.json, torch_matmul.json): the parts' peer steps write it
        for name in sorted({benchmark_of(r) for r in json.loads(path.read_text())["benchmarks"]}):
            if not name.startswith(("stage", "ceiling", "cublas")):
                continue  # a peer's row folded into the stage's file
            count += 1
            owners = steps_selecting(binary, name)
            main = [o for o in owners if not BY_NAME[o.split()[0]].evidence]
            if len(main) != 1 and not (not main and len(owners) == 1):
                problems.append(f"{path.name}: {name}: run by {', '.join(owners) or 'no part'}")
    print("\n".join(problems) if problems else f"each of the {count} benchmarks in {args.results} is run by one part")
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--work", type=Path, default=ROOT / "build" / "reference", help="the parts' folders")
    p.add_argument("--build", type=Path, default=ROOT / "build" / "h100", help="the build tree (a preset's)")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("list")
    t = sub.add_parser("targets")
    t.add_argument("parts", nargs="*")
    r = sub.add_parser("run")
    r.add_argument("parts", nargs="+")
    n = sub.add_parser("next")
    n.add_argument("--budget", type=float, required=True, help="seconds this sitting may spend")
    n.add_argument("--only", nargs="+", help="only these parts")
    n.add_argument("--start-anyway", action="store_true", help="start a part that may not fit (it resumes)")
    m = sub.add_parser("merge")
    m.add_argument("--into", type=Path, required=True)
    m.add_argument("--partial", action="store_true", help="merge the parts that have run")
    c = sub.add_parser("check-plan")
    c.add_argument("results", type=Path)
    args = p.parse_args(argv)
    if args.command == "targets":
        unknown = [n for n in args.parts if n not in BY_NAME]
        if unknown:
            raise SystemExit(f"reference_run: no part named {', '.join(unknown)}")
        print(" ".join(part_targets([BY_NAME[n] for n in args.parts] or PARTS)))
        return 0
    return {"list": cmd_list, "run": cmd_run, "next": cmd_next, "merge": cmd_merge,
            "check-plan": cmd_check_plan}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
