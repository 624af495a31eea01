#!/usr/bin/env python3
"""Tests of reference_run.py without a GPU: fake bench binaries stand in for the stages' (they write
Google Benchmark JSON for the filter they are given), so the parts, the budget, the folding of a
peer's rows and the merge into one file per stage are checked; then the real plan against the
reference folder: every committed benchmark is run by exactly one part.

    python3 scripts/test_reference_run.py
"""
from __future__ import annotations

import importlib
import json
import stat
import sys
import shutil
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import reference_run as rr  # noqa: E402

FAKE_BENCH = """#!/usr/bin/env python3
import json, re, sys, time
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
names = {names!r}
f = args.get("--benchmark_filter", "")
keep = [n for n in names if not f or (re.search(f[1:], n) is None if f.startswith("-") else re.search(f, n))]
time.sleep({sleep})
rows = []
for n in keep:
    for agg, t in (("mean", 1.1), ("median", 1.0), ("stddev", 0.1)):
        rows.append({{"name": n + "_" + agg, "run_name": n, "run_type": "aggregate", "aggregate_name": agg,
                     "real_time": t, "time_unit": "ms"}})
json.dump({{"context": {{"gpu_name": "Fake GPU"}}, "benchmarks": rows}}, open(args["--benchmark_out"], "w"))
"""

failures = 0


def check(what: str, ok: bool) -> None:
    global failures
    print(f"  {'ok' if ok else 'FAILED'}: {what}")
    failures += not ok


def fake_binary(build: Path, name: str, names: list[str], sleep: float = 0.0) -> None:
    path = build / "stages" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(FAKE_BENCH.format(names=names, sleep=sleep))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def names_in(path: Path) -> list[str]:
    return sorted({r["run_name"] for r in json.loads(path.read_text())["benchmarks"]})


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        build, work, into = Path(tmp, "build"), Path(tmp, "work"), Path(tmp, "results")
        fake_binary(build, "stage09_bench", ["stage09/v1/fp16/N:8192/", "stage09/v1/fp16/N:512/",
                                             "stage09/v1/fp16/N:512/tile:0"])
        fake_binary(build, "slow_bench", ["slow/v1/"], sleep=5)
        rr.PARTS[:] = [
            rr.Part("main", "the stage's grid", 1, [rr.Bench("stage09_bench", "stage09.json", "-(/tile:|/N:8192/)")],
                    ("stage09.json",)),
            rr.Part("headline", "the headline shape, its peer folded in", 1,
                    [rr.Bench("stage09_bench", "stage09.json", "/N:8192/"),
                     rr.Bench("stage09_bench", "peer.json", "/N:512/$")], ("stage09.json",)),
            rr.Part("tuner", "evidence: the candidates", 1, [rr.Bench("stage09_bench", "stage09_tuner.json", "/tile:")],
                    ("stage09_tuner.json",)),
            rr.Part("slow", "a part that outlasts its budget", 60, [rr.Bench("slow_bench", "slow.json")], ("slow.json",)),
        ]
        rr.BY_NAME.clear()
        rr.BY_NAME.update({p.name: p for p in rr.PARTS})
        base = ["--work", str(work), "--build", str(build)]

        print("== next: the parts that fit the budget, in order")
        rr.main(base + ["next", "--budget", "30"])
        check("the three short parts ran", all((work / n / "part.json").is_file() for n in ("main", "headline", "tuner")))
        check("the part that does not fit was not started", not (work / "slow").exists())
        check("the filter reached the binary", names_in(work / "main" / "stage09.json") == ["stage09/v1/fp16/N:512/"])
        check("the tuner's rows went to their own file",
              names_in(work / "tuner" / "stage09_tuner.json") == ["stage09/v1/fp16/N:512/tile:0"])

        print("== a part stopped by its budget leaves no record, so it runs again")
        rr.main(base + ["next", "--budget", "2", "--start-anyway"])
        check("no part.json for the stopped part", not (work / "slow" / "part.json").exists())

        print("== merge: one file per stage, median rows only, the parts' record")
        rr.main(base + ["merge", "--into", str(into), "--partial"])
        merged = json.loads((into / "stage09.json").read_text())
        check("the grid and the headline in one file",
              names_in(into / "stage09.json") == ["stage09/v1/fp16/N:512/", "stage09/v1/fp16/N:8192/"])
        check("median rows only", {r["aggregate_name"] for r in merged["benchmarks"]} == {"median"})
        record = (into / "logs" / "reference_run_parts.txt").read_text()
        check("the record names each part and what did not run", "headline" in record and "# not run: slow" in record)
        try:
            rr.main(base + ["merge", "--into", str(into)])
            check("merge without --partial refuses a missing part", False)
        except SystemExit as e:
            check("merge without --partial refuses a missing part", "slow" in str(e))

        print("== a later sitting: a part merged earlier keeps its line and rows when --work lost it")
        shutil.rmtree(work / "main")
        rr.main(base + ["merge", "--into", str(into), "--partial"])
        check("the lost part's rows stay beside the headline's",
              names_in(into / "stage09.json") == ["stage09/v1/fp16/N:512/", "stage09/v1/fp16/N:8192/"])
        record = (into / "logs" / "reference_run_parts.txt").read_text()
        check("the lost part's line stays", any(l.startswith("main ") for l in record.splitlines()))

        print("== fold: a peer's rows join the stage's file of the same part")
        peer = work / "headline" / "peer.json"
        rr.fold(work / "headline" / "stage09.json", peer)
        check("folded", "stage09/v1/fp16/N:512/" in names_in(work / "headline" / "stage09.json"))

        print("== a peer script that skips (no PyTorch) and exits 0 fails its part")
        skipping = Path(tmp, "skipping_peer.py")
        skipping.write_text("print('no PyTorch: skipped')\n")
        rr.PARTS[:] = [rr.Part("peerless", "a stage and a peer that writes nothing", 1,
                               [rr.Bench("stage09_bench", "stage09.json", "/N:512/$"),
                                rr.Script([str(skipping)], "peer.json", fold_into="stage09.json")], ("stage09.json",))]
        rr.BY_NAME.clear()
        rr.BY_NAME.update({p.name: p for p in rr.PARTS})
        rr.main(base + ["next", "--budget", "30"])
        record = json.loads((work / "peerless" / "part.json").read_text())
        check("the part without its peer is recorded as failed", record["ok"] is False)

        print("== an optional peer (one that needs a package beyond PyTorch) that skips leaves its part whole")
        failing = Path(tmp, "failing_peer.py")
        failing.write_text("import sys\nprint('no frontend: skipped')\nsys.exit(1)\n")
        rr.PARTS[:] = [rr.Part("optional", "a stage, an optional peer that skips and one that fails", 1,
                               [rr.Bench("stage09_bench", "stage09.json", "/N:512/$"),
                                rr.Script([str(skipping)], "fp8.json", fold_into="stage09.json", optional=True),
                                rr.Script([str(failing)], "fp8b.json", fold_into="stage09.json", optional=True)],
                               ("stage09.json",))]
        rr.BY_NAME.clear()
        rr.BY_NAME.update({p.name: p for p in rr.PARTS})
        rr.main(base + ["next", "--budget", "30"])
        record = json.loads((work / "optional" / "part.json").read_text())
        check("the part is whole", record["ok"] is True)
        check("the failed optional step keeps its code in the record",
              [s["rc"] for s in record["steps"]] == [0, 0, 1] and record["steps"][2].get("optional") is True)

    print("== the real plan: stage 07 attention's grid by head_dim, cuDNN's fp8 beside v9 where it can be had")
    importlib.reload(rr)
    d128, headline = rr.BY_NAME.get("stage07_attention_grid_d128"), rr.BY_NAME.get("stage07_attention_headline")
    check("one grid part per head_dim, and one for the shapes off the grid",
          all(f"stage07_attention_grid_d{d}" in rr.BY_NAME for d in (64, 128, 256))
          and "stage07_attention_shapes" in rr.BY_NAME)
    for part in (d128, headline):
        fp8 = [s for s in part.steps if isinstance(s, rr.Script) and s.args[0] == "cudnn_fp8_bench.py"] if part else []
        check(f"{part.name if part else '?'}: the fp8 peer is optional and folded into the rung's file",
              len(fp8) == 1 and fp8[0].optional and fp8[0].fold_into == "stage07_attention.json")

    print("== the real plan: stage 07's attention backward in three parts, its peers folded into its own file")
    importlib.reload(rr)
    head, grid = rr.BY_NAME.get("stage07_attention_bwd_headline"), rr.BY_NAME.get("stage07_attention_bwd_grid")
    det = rr.BY_NAME.get("stage07_attention_bwd_deterministic")
    check("the headline and grid parts keep stage07_attention_bwd.json",
          head is not None and grid is not None
          and head.keeps == grid.keeps == ("stage07_attention_bwd.json",))
    check("the deterministic series is an evidence part with a file of its own",
          det is not None and det.evidence and det.keeps == ("stage07_attention_bwd_deterministic.json",))
    if head is not None and grid is not None and det is not None:
        check("their build target", rr.part_targets([head, grid, det]) == ["stage07_attention_bwd_bench"])
        for part in (head, grid):
            peers = [s for s in part.steps if isinstance(s, rr.Script)]
            check(f"{part.name}: SDPA's flash and cuDNN backward in the same run, folded into the rung's file",
                  len(peers) >= 1 and all(s.fold_into == "stage07_attention_bwd.json"
                                          and {"--backward", "flash", "cudnn"} <= set(s.args) for s in peers))
        check("the grid part times SDPA's backward on the rung's packed batches too",
              any("--packed-defaults" in s.args for s in grid.steps if isinstance(s, rr.Script)))
        check("SDPA's grouped shapes come with both parts (N = 8192 and 2048)", "--no-gqa" not in
              [a for p in (head, grid) for s in p.steps if isinstance(s, rr.Script) for a in s.args])
        check("the rung's files are written by the rung's bench, not the forward's",
              rr.binary_of("stage07_attention_bwd.json") == "stage07_attention_bwd_bench"
              and rr.binary_of("stage07_attention_bwd_deterministic.json") == "stage07_attention_bwd_bench"
              and rr.binary_of("stage07_attention.json") == "stage07_attention_bench")
        owners = {n: rr.steps_selecting("stage07_attention_bwd_bench", n) for n in (
            "stage07/attention_bwd/v10/fp16/D:128/N:8192/causal:0", "stage05/v10/bf16/D:64/N:8192/causal:1",
            "stage07/attention_bwd/v3/bf16/D:64/N:2048/causal:1",
            "stage07/attention_bwd/v3_deterministic/fp16/D:128/N:8192/causal:0",
            "stage07/attention_bwd/v10/fp16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:1",
            "stage05/v10/fp16/D:64/B:8/H:32/KVH:1/Nq:2048/Nk:2048/causal:0",
            "stage07/attention_bwd/v10/fp16/D:128/H:16/packed:2x8192/causal:1")}
        check("each benchmark has one main part, the grouped ones with their N's part, the packed ones the grid",
              [len([o for o in v if not o.startswith("stage07_attention_bwd_deterministic")]) for v in owners.values()]
              == [1, 1, 1, 0, 1, 1, 1]
              and owners["stage07/attention_bwd/v10/fp16/D:128/H:16/packed:2x8192/causal:1"][0]
              .startswith("stage07_attention_bwd_grid")
              and owners["stage07/attention_bwd/v10/fp16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:1"][0]
              .startswith("stage07_attention_bwd_headline"))
    with tempfile.TemporaryDirectory() as tmp:
        # A fake run of the part, then merge and check-plan as a results folder will see them.
        work, into = Path(tmp, "work"), Path(tmp, "results")
        names = ["stage07/attention_bwd/v1/fp16/D:128/N:8192/causal:0",
                 "stage07/attention_bwd/v1_deterministic/bf16/D:64/N:2048/causal:1",
                 "stage05/v10/fp16/D:128/N:8192/causal:0",
                 "sdpa_cudnn_bwd/fp16/D:128/N:8192/causal:0",
                 "sdpa_flash_bwd/fp16/D:128/B:2/H:16/KVH:4/Nq:8192/Nk:8192/causal:1"]
        rows = [{"name": n + "_median", "run_name": n, "run_type": "aggregate", "aggregate_name": "median",
                 "real_time": 1.0, "time_unit": "ms"} for n in names]
        det_rows = [r for r in rows if "_deterministic/" in r["run_name"]]
        for part, file, part_rows in (("stage07_attention_bwd_headline", "stage07_attention_bwd.json",
                                       [r for r in rows if r not in det_rows]),
                                      ("stage07_attention_bwd_deterministic",
                                       "stage07_attention_bwd_deterministic.json", det_rows)):
            (work / part).mkdir(parents=True)
            (work / part / file).write_text(json.dumps({"context": {"gpu_name": "Fake GPU"}, "benchmarks": part_rows}))
            (work / part / "part.json").write_text(json.dumps(
                {"part": part, "commit": "0000000", "started": "2026-12-02T21:00:00+00:00",
                 "seconds": 1.0, "ok": True, "steps": [], "gpu": {}}))
        rr.main(["--work", str(work), "merge", "--into", str(into), "--partial"])
        check("merge writes stage07_attention_bwd.json and the deterministic evidence beside it",
              names_in(into / "stage07_attention_bwd.json") == sorted(n for n in names if "_deterministic/" not in n)
              and names_in(into / "stage07_attention_bwd_deterministic.json")
              == [n for n in names if "_deterministic/" in n])
        check("every benchmark of the merged folder is run by one part", rr.main(["check-plan", str(into)]) == 0)

    print("== the real plan against the reference folder (results/REFERENCE)")
    setting = HERE.parent / "results" / "REFERENCE"
    folder = [l.strip() for l in setting.read_text().splitlines() if l.strip() and not l.startswith("#")][0]
    check(f"every benchmark in results/{folder} is run by one part",
          rr.main(["check-plan", str(HERE.parent / "results" / folder)]) == 0)
    return 0


if __name__ == "__main__":
    status = main()
    sys.exit(1 if failures else status)
