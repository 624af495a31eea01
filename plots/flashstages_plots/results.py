"""Reading the benchmark JSON: names, runs, Results.

A results folder holds Google Benchmark files (one per stage, ``sdpa.json``, ``ceilings.json``, ...).
``load_results`` reads every one of them into a ``Results``: for each benchmark one ``Run``, the row
``select_runs`` picks (its ``median`` aggregate, else its iteration row; never a best-of), named by a
``BenchName`` (``parse_name``: series, dtype and key:value params), and each file's context, from
which ``context_number`` reads the peaks and clocks. ``ResultsError`` is a problem the user must fix.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Google Benchmark decorates names with run options; they say how a run was made, not what it
# measured, so they are dropped before the name is split into series, dtype and params.
RUN_OPTION_FIELDS = {"manual_time", "real_time", "process_time"}
RUN_OPTION_KEYS = {"repeats", "iterations", "min_time", "min_warmup_time", "threads"}
AGGREGATE_SUFFIX = re.compile(r"_(mean|median|stddev|cv)$")

TIME_UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}

# Instruction ceilings (ceilings.json): names ceiling/<instruction>/<dtype>, e.g. ceiling/ffma/fp32.
CEILING_PREFIX = "ceiling"

# A tuner's candidates carry their index in this name field (tables.py's tuner table reads them).
TUNER_TILE = "tile"


class ResultsError(Exception):
    """A problem with the inputs that the user must fix; main() prints it and exits 1."""


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BenchName:
    """``stage03/v1/fp32/D:64/N:4096/causal:1`` → series "stage03/v1", dtype "fp32", params."""

    series: str
    dtype: str
    params: tuple[tuple[str, int | float | str], ...]  # sorted by key, so equal names compare equal

    def get(self, key: str, default=None):
        for k, v in self.params:
            if k == key:
                return v
        return default

    @property
    def kind(self) -> str:
        """"ceiling" (ceiling/<instruction>/<dtype>), "candidate" (a tuner's candidate: tile given),
        "gemm" (M, N, K given), "attention" (N, D given), else "other"; sizes must be integers."""
        if self.series.split("/")[0] == CEILING_PREFIX:
            return "ceiling"
        sizes = {k for k, v in self.params if isinstance(v, int)}
        if TUNER_TILE in sizes:  # one of a tuner's candidates: only the "tuner" table reads it
            return "candidate"
        if {"M", "N", "K"} <= sizes:
            return "gemm"
        if {"N", "D"} <= sizes:
            return "attention"
        return "other"


def _param_value(text: str) -> int | float | str:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def plain_name(raw: str, aggregate_name: str | None = None) -> str:
    """The name as written, without run options and aggregate suffix: what value markers quote."""
    name = raw.strip()
    if aggregate_name and name.endswith("_" + aggregate_name):
        name = name[: -len(aggregate_name) - 1]
    name = AGGREGATE_SUFFIX.sub("", name)
    return "/".join(part for part in name.split("/") if part and part not in RUN_OPTION_FIELDS
                    and part.partition(":")[0] not in RUN_OPTION_KEYS)


def parse_name(raw: str, aggregate_name: str | None = None) -> BenchName:
    """Split a Google Benchmark name into series, dtype and key:value params.

    Fields with ':' are params; the last other field is the dtype and the ones before it,
    joined by '/', the series. Run options (manual_time, repeats:5, ...) and an aggregate
    suffix (``_median``) are removed first.
    """
    name = raw.strip()
    if aggregate_name and name.endswith("_" + aggregate_name):
        name = name[: -len(aggregate_name) - 1]
    name = AGGREGATE_SUFFIX.sub("", name)

    plain: list[str] = []
    params: dict[str, int | float | str] = {}
    for part in name.split("/"):
        if not part or part in RUN_OPTION_FIELDS:
            continue
        if ":" in part:
            key, _, value = part.partition(":")
            if key in RUN_OPTION_KEYS:
                continue
            params[key] = _param_value(value)
        else:
            plain.append(part)
    if not plain:
        raise ValueError(f"benchmark name {raw!r} has no series/dtype fields")
    if len(plain) == 1:  # nothing to call a dtype: keep the field as the series
        series, dtype = plain[0], ""
    else:
        series, dtype = "/".join(plain[:-1]), plain[-1]
    return BenchName(series, dtype, tuple(sorted(params.items())))


# ---------------------------------------------------------------------------------------------
# Loading and selecting rows
# ---------------------------------------------------------------------------------------------

@dataclass
class Run:
    """One benchmark's chosen row (median aggregate, or its iteration row)."""

    name: BenchName
    time_us: float
    tflops: float | None
    gbps: float | None
    extra_bytes: float | None
    source: str  # file name, e.g. "stage03.json"
    picked: str  # "median" or "iteration"
    plain: str = ""  # the name without run options, e.g. "stage03/v1/fp32/D:64/N:4096/causal:1"
    per_sm_clk: float | None = None  # ceilings: ops, FLOPs or bytes per SM per clock
    gops: float | None = None  # ceilings: the Gop/s counter (ex2)
    chosen: float | None = None  # a tuner's candidate: its `picked` counter, 1 where the tuner chose it


@dataclass
class Results:
    contexts: dict[str, dict[str, str]] = field(default_factory=dict)  # file name → context
    runs: list[Run] = field(default_factory=list)
    folder: Path | None = None
    # A benchmark a later file measured again (cuBLAS in both GEMM stages' runs): runs keeps the first
    # read, here are the others, for the tables and markers that want a peer from the same run.
    shadowed: list[Run] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[Run]:
        return [r for r in self.runs if r.name.kind == kind]

    def of_kind_every_file(self, kind: str) -> list[Run]:
        """of_kind with the re-measurements by later files too (label_by_file tells them apart)."""
        return [r for r in self.runs + self.shadowed if r.name.kind == kind]

    def find(self, name: BenchName, source: str | None = None) -> Run | None:
        """The run of that name: from the file SOURCE when given, else the first read."""
        for r in self.runs if source is None else self.runs + self.shadowed:
            if r.name == name and (source is None or r.source == source):
                return r
        return None

    def same_run(self, run: Run, sources: set[str]) -> Run:
        """RUN, or its re-measurement from one of SOURCES: a peer from the run of the rows beside it."""
        if run.source in sources:
            return run
        return next((r for r in self.shadowed if r.name == run.name and r.source in sources), run)

    def where(self) -> str:
        return str(self.folder) if self.folder is not None else "the results"


def _counter(row: dict, key: str) -> float | None:
    value = row.get(key)
    return float(value) if isinstance(value, (int, float)) else None


def _to_run(row: dict, name: BenchName, source: str, picked: str) -> Run:
    unit = row.get("time_unit", "ns")
    if unit not in TIME_UNIT_TO_US:
        raise ResultsError(f"{source}: {row.get('name')!r} has unknown time_unit {unit!r}")
    tflops = _counter(row, "TFLOPS")
    return Run(
        name=name,
        time_us=float(row["real_time"]) * TIME_UNIT_TO_US[unit],
        tflops=tflops if tflops is not None else _counter(row, "TOPS"),
        gbps=_counter(row, "GB/s"),
        extra_bytes=_counter(row, "extra_bytes"),
        source=source,
        picked=picked,
        plain=plain_name(row.get("run_name") or row.get("name") or "", row.get("aggregate_name")),
        per_sm_clk=_counter(row, "per_sm_clk"),
        gops=_counter(row, "Gop/s"),
        chosen=_counter(row, "picked"),
    )


def select_runs(rows: list[dict], source: str) -> list[Run]:
    """Pick one row per benchmark: its ``median`` aggregate, else its iteration row.

    Rows that errored or were skipped are dropped. If a benchmark has several iteration rows but
    no median aggregate (repetitions without aggregates), the row with the median real_time is
    taken — the same statistic the aggregates would have given, never the fastest.
    """
    groups: dict[BenchName, dict[str, list[dict]]] = {}
    order: list[BenchName] = []
    for row in rows:
        if row.get("error_occurred") or row.get("skipped"):
            continue
        raw = row.get("run_name") or row.get("name")
        if not raw:
            continue
        try:
            name = parse_name(raw, row.get("aggregate_name"))
        except ValueError as err:
            print(f"plot_results: {source}: skipping row: {err}", file=sys.stderr)
            continue
        if name not in groups:
            groups[name] = {"median": [], "iteration": []}
            order.append(name)
        if row.get("run_type") == "aggregate":
            if row.get("aggregate_name") == "median":
                groups[name]["median"].append(row)
        else:
            groups[name]["iteration"].append(row)

    runs = []
    for name in order:
        medians, iterations = groups[name]["median"], groups[name]["iteration"]
        if medians:
            runs.append(_to_run(medians[-1], name, source, "median"))
        elif iterations:
            times = [float(r["real_time"]) for r in iterations]
            row = iterations[times.index(statistics.median_low(times))]
            runs.append(_to_run(row, name, source, "iteration"))
    return runs


def load_results(results_dir: Path) -> Results:
    files = sorted(results_dir.glob("*.json"))
    if not files:
        raise ResultsError(f"no *.json benchmark files in {results_dir}")
    results = Results(folder=results_dir)
    seen: dict[BenchName, str] = {}
    for path in files:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ResultsError(f"{path}: not valid JSON ({err}); was the benchmark interrupted?")
        if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
            print(f"plot_results: {path.name}: no 'benchmarks' list, not a Google Benchmark file;"
                  " skipped", file=sys.stderr)
            continue
        context = {k: str(v) for k, v in (doc.get("context") or {}).items()}
        results.contexts[path.name] = context
        for run in select_runs(doc["benchmarks"], path.name):
            if run.name in seen:  # e.g. a baseline re-run inside a later stage's benchmark
                print(f"plot_results: {path.name}: {run.name.series}/{run.name.dtype} "
                      f"{dict(run.name.params)} already read from {seen[run.name]}; keeping that one "
                      f"(this file's own tables take its own)", file=sys.stderr)
                results.shadowed.append(run)
                continue
            seen[run.name] = path.name
            results.runs.append(run)
    if not results.contexts:
        raise ResultsError(f"no Google Benchmark JSON in {results_dir}")
    gpus = unique(c.get("gpu_name", "") for c in results.contexts.values())
    if len(gpus) > 1:
        print(f"plot_results: warning: {results_dir} mixes results from several GPUs: {gpus}",
              file=sys.stderr)
    return results


# ---------------------------------------------------------------------------------------------
# Contexts, and the order of names
# ---------------------------------------------------------------------------------------------

def context_number(results: Results, key: str, source: str | None = None) -> float | None:
    """A number from the JSON contexts: file ``source``'s own value when it has ``key``, else the
    value that every file holding the key gives; None when no file has it.

    Files that disagree (say, two runs at different clocks) are an error: which of them a generated
    number should use is for the user to decide, not for this script."""
    def number(file_name: str, text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise ResultsError(f"{file_name}: context key {key!r} is {text!r}, not a number") from None

    if source is not None and key in results.contexts.get(source, {}):
        return number(source, results.contexts[source][key])
    values = {f: number(f, c[key]) for f, c in sorted(results.contexts.items(), key=lambda kv: natural(kv[0]))
              if key in c}
    if not values:
        return None
    if len(set(values.values())) > 1:
        listed = ", ".join(f"{f} says {results.contexts[f][key]}" for f in values)
        raise ResultsError(f"context key {key!r} differs between the files of {results.where()}: {listed}")
    return next(iter(values.values()))


def natural(text: str) -> list:
    """A sort key that puts "stage2" before "stage10"."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]


def unique(values) -> list[str]:
    """The non-empty values, each once, in the order first seen."""
    out: list[str] = []
    for v in values:
        if v and v not in out:
            out.append(v)
    return out
