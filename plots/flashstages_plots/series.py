"""Which series a run belongs to, and how runs are grouped into the lines and rows that the tables and
the figures both draw.

A series is the name before the dtype (``stage04/v5``, ``cublas``): the naive baseline (``stage01``),
a stage's version, or a peer (``sdpa_*``, ``cublas*``, ``torch_*``), of the forward or the backward
pass; ``series_order`` puts the baseline first and the peers last. Attention runs follow the project's
shape rule (B·N = 16384, H = 2048/D) or form a family of their own (``attention_family``); they are
grouped by config (pass, dtype, D, mask) into lines over N (``attention_lines``, ``memory_lines``).
GEMM runs at M = N = K are lines over that size (``gemm_lines``), one per file where several files
timed a series (``label_by_file``).
"""

from __future__ import annotations

import sys

from .results import BenchName, Results, Run, natural

# The project's attention benchmarks keep the token count fixed, B·N = 16384 and H·D = 2048
# (so H = 2048/D): every N reads and writes the same bytes of Q, K, V, O; only N·N work grows.
DEFAULT_TOKENS = 16384
DEFAULT_MODEL_DIM = 2048

PEER_PREFIXES = ("sdpa_", "cublas", "torch_")
BASELINE_PREFIX = "stage01"
DTYPE_ORDER = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "e4m3", "e5m2", "int8")

# Bytes in a MiB: extra_bytes counters are shown in MiB.
MIB = 1024.0 * 1024.0

# Stages and rungs that time the backward pass: a stage by its first name segment, a rung by its first two
# (stage07/attention_bwd, whose JSON is stage07_attention_bwd.json, is not stage07/attention's forward).
STAGE_NOTES = {"stage05": "backward", "stage07/attention_bwd": "backward"}
# Peers that time a backward pass end in this (sdpa_bench.py --backward: sdpa_flash_bwd, ...); a stage's
# tables put them beside the stages STAGE_NOTES calls backward, and the forward peers beside the others.
BACKWARD_PEER_SUFFIX = "_bwd"
# The backward rung's name continues the forward rung's (stage07/attention → stage07/attention_bwd): a
# prefix naming a rung does not take the rung named with this after it.
BACKWARD_RUNG_SUFFIX = "_bwd/"


# ---------------------------------------------------------------------------------------------
# Series: baseline, stages, peers; forward and backward
# ---------------------------------------------------------------------------------------------

def is_peer(series: str) -> bool:
    return series.startswith(PEER_PREFIXES)


def is_backward(series: str) -> bool:
    """A backward-pass series: a stage or rung STAGE_NOTES calls backward, or a peer named with _bwd."""
    parts = series.split("/")
    stage, rung = parts[0], "/".join(parts[:2])
    return "backward" in (STAGE_NOTES.get(stage), STAGE_NOTES.get(rung)) or stage.endswith(BACKWARD_PEER_SUFFIX)


def under(series: str, prefix) -> bool:
    """series.startswith(prefix) (a string or a tuple of them), except that a prefix naming the forward
    rung (stage07/attention) does not take the backward rung's series (stage07/attention_bwd/v1/...)."""
    prefixes = (prefix,) if isinstance(prefix, str) else tuple(prefix)
    return any(series.startswith(p) and not series[len(p):].startswith(BACKWARD_RUNG_SUFFIX) for p in prefixes)


def sdpa_peer_of(prefix: tuple[str, ...], series: str) -> bool:
    """An sdpa_* peer of the same pass (forward or backward) as the stages the prefix names."""
    return series.startswith("sdpa_") and any(is_backward(p) == is_backward(series) for p in prefix)


def is_baseline(series: str) -> bool:
    return series == BASELINE_PREFIX or series.startswith(BASELINE_PREFIX + "/")


def series_order(series: str) -> tuple:
    """Naive baseline first, then the stages in ladder order, peers last."""
    group = 0 if is_baseline(series) else 2 if is_peer(series) else 1
    return (group, natural(series))


def dtype_order(dtype: str) -> tuple:
    return (DTYPE_ORDER.index(dtype) if dtype in DTYPE_ORDER else len(DTYPE_ORDER), dtype)


# ---------------------------------------------------------------------------------------------
# Attention shapes
# ---------------------------------------------------------------------------------------------

def default_batch_heads(n: int, d: int) -> tuple[int, int]:
    return max(1, DEFAULT_TOKENS // n), max(1, DEFAULT_MODEL_DIM // d)


def attention_family(name: BenchName) -> tuple[int, int] | None:
    """None when the run follows the default shape rule; else its own (B, H).

    Names without B:/H: params follow the project rule by construction, and so does an explicit
    B, H equal to it (sdpa_bench names only shapes off the rule). Runs off the rule with the same
    B and H form their own line, e.g. several --shape points at B = 2, H = 16.
    """
    n, d = name.get("N"), name.get("D")
    b_default, h_default = default_batch_heads(n, d)
    b, h = name.get("B", b_default), name.get("H", h_default)
    if (b, h) == (b_default, h_default):
        return None
    return (b, h)


def family_label(family: tuple[int, int] | None) -> str:
    return "" if family is None else f"B = {family[0]}, H = {family[1]}"


def attention_shape_text(runs: list[Run], d: int | None) -> str:
    """Say which B and H the default-rule runs used, and whether the names recorded them. With d None
    (a figure with a panel per D) H is left as the rule, 2048/D."""
    default_rule = [r for r in runs if attention_family(r.name) is None]
    if not default_rule:
        return "B, H as labelled"
    recorded = any(r.name.get("B") is not None for r in default_rule)
    text = f"B·N = {DEFAULT_TOKENS}, H = {DEFAULT_MODEL_DIM}/D"
    if d is not None:
        text += f" = {max(1, DEFAULT_MODEL_DIM // d)}"
    if any(r.name.get("N") > DEFAULT_TOKENS for r in default_rule):
        text += f" (B = 1 for N > {DEFAULT_TOKENS})"
    if not recorded:
        text += " (project default; B, H not in the names)"
    return text


def causal_of(name: BenchName) -> int:
    return int(name.get("causal", 0))


def attention_config(run: Run) -> tuple[bool, str, int, int]:
    """(backward, dtype, D, causal): one table per config, and one panel of the figure of its pass and
    dtype; the passes never share a table or a figure."""
    return (is_backward(run.name.series), run.name.dtype, run.name.get("D"), causal_of(run.name))


def attention_configs(runs: list[Run]) -> list[tuple[bool, str, int, int]]:
    return sorted({attention_config(r) for r in runs}, key=lambda k: (k[0], dtype_order(k[1]), k[2], k[3]))


def pass_text(backward: bool) -> str:
    return "backward" if backward else "forward"


def line_key_order(key: tuple[str, tuple[int, int] | None]) -> tuple:
    """The order of attention_lines' keys: series_order, then the default shape before any family."""
    series, family = key
    return (series_order(series), family is not None, family or (0, 0))


def attention_lines(runs: list[Run], value) -> dict[tuple[str, tuple | None], dict[int, float]]:
    """Group runs into lines: (series, shape family) → {N: value(run)}; None values left out."""
    lines: dict[tuple[str, tuple | None], dict[int, float]] = {}
    for r in runs:
        v = value(r)
        if v is None:
            continue
        points = lines.setdefault((r.name.series, attention_family(r.name)), {})
        n = r.name.get("N")
        if n in points:  # the same shape named with and without B:/H:; keep the first read
            print(f"plot_results: warning: {r.source}: {r.name.series} N={n} measured twice; "
                  "keeping the first", file=sys.stderr)
            continue
        points[n] = v
    return dict(sorted(lines.items(), key=lambda kv: line_key_order(kv[0])))


def line_label(key: tuple[str, tuple | None]) -> str:
    series, family = key
    return series if family is None else f"{series} ({family_label(family)})"


def memory_runs(results: Results) -> list[Run]:
    """Non-causal attention runs that report extra_bytes."""
    return [r for r in results.of_kind("attention") if r.extra_bytes is not None and causal_of(r.name) == 0]


# What the extra_bytes counter leaves out: the tensors the caller passes in and gets back.
MEMORY_BEYOND = {False: "Q, K, V, O", True: "Q, K, V, O, dO, LSE, dQ, dK, dV"}


def memory_config(run: Run) -> tuple[bool, int]:
    return (is_backward(run.name.series), run.name.get("D"))


def memory_configs(runs: list[Run]) -> list[tuple[bool, int]]:
    return sorted({memory_config(r) for r in runs})


def memory_lines(runs: list[Run]) -> dict[tuple[str, str, tuple | None], dict[int, float]]:
    """(series, dtype, shape family) → {N: extra MiB}; dtypes differ in bytes, so each is a line."""
    lines: dict[tuple[str, str, tuple | None], dict[int, float]] = {}
    for r in runs:
        lines.setdefault((r.name.series, r.name.dtype, attention_family(r.name)), {})[r.name.get("N")] = \
            r.extra_bytes / MIB
    return {key: lines[key] for key in sorted(lines, key=memory_key_order)}


def memory_key_order(key: tuple[str, str, tuple | None]) -> tuple:
    """The order of memory_lines' keys: series_order, then dtype, then the default shape first."""
    series, dtype, family = key
    return (series_order(series), dtype_order(dtype), family is not None, family or (0, 0))


def memory_label(key: tuple[str, str, tuple | None]) -> str:
    series, dtype, family = key
    return f"{series} ({dtype}" + (f", {family_label(family)})" if family else ")")


# ---------------------------------------------------------------------------------------------
# GEMM sizes
# ---------------------------------------------------------------------------------------------

def square_size(name: BenchName) -> int | None:
    m, n, k = name.get("M"), name.get("N"), name.get("K")
    return m if m == n == k else None


def label_by_file(runs: list[Run]) -> list[str]:
    """Each run's series, or, for a series several of these files timed (cuBLAS, in both GEMM stages'
    runs), the series with its file: "cublas (stage06)". One line or table row through two runs'
    points would set each stage beside the other run's peer."""
    files: dict[str, set[str]] = {}
    for r in runs:
        files.setdefault(r.name.series, set()).add(r.source)
    return [r.name.series if len(files[r.name.series]) == 1 else f"{r.name.series} ({r.source.removesuffix('.json')})"
            for r in runs]


def gemm_lines(runs: list[Run]) -> tuple[dict[str, dict[int, float]], dict[str, str]]:
    """One dtype's square GEMM runs as lines (label_by_file): label → {M = N = K: TFLOPS}, and label →
    series."""
    lines: dict[str, dict[int, float]] = {}
    series_of: dict[str, str] = {}
    for r, label in zip(runs, label_by_file(runs)):
        series_of[label] = r.name.series
        lines.setdefault(label, {})[square_size(r.name)] = r.tflops
    return lines, series_of


def is_power_of_two(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0
