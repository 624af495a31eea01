"""The GPU's limits and the points judged against them: what the ladder and the roofline show.

Peaks: the datasheet-style peak of each arithmetic, from the context keys (``peak_of``). Instruction
ceilings: the rates ``ceilings.json`` measured (``ceiling_of``, ``describe_ceiling``, ``ceiling_rate``).
The headline entries: the fastest version of every stage at the headline shape (attention D = 128,
N = 8192, non-causal; GEMM 4096³), then the peers measured there (``headline_entries``). Roofs: the
compute and DRAM roofs and the bound each headline point meets (``compute_roofs``, ``memory_roofs``,
``bound_by``). tables.py and figures.py draw these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .results import BenchName, Results, Run, context_number, natural, parse_name
from .series import BACKWARD_PEER_SUFFIX, STAGE_NOTES, attention_family, causal_of, dtype_order, square_size

# The datasheet-style peak of each arithmetic, by the context key that holds it (clock × units).
PEAK_KEYS = {"fp32": "peak_fp32_tflops", "fp16": "peak_fp16_tflops", "bf16": "peak_fp16_tflops",
             "int8": "peak_int8_tops"}
DRAM_PEAK_KEY = "peak_dram_gbps"
# The measured instruction ceiling of each arithmetic: the instruction the stages use for it.
CEILING_OF_DTYPE = {"fp32": "ceiling/ffma/fp32", "fp16": "ceiling/mma_m16n8k16/fp16",
                    "bf16": "ceiling/mma_m16n8k16/bf16", "int8": "ceiling/mma_m16n8k32/int8"}
DRAM_CEILING = "ceiling/dram_copy/fp32"

# The headline shape of the ladder and the roofline (issue 10): attention at D = 128, N = 8192,
# non-causal, B and H by the project rule; GEMM at M = N = K = 4096. One bar per (stage, dtype) for
# these dtypes (bf16 runs at the fp16 rate and would repeat it), next to these peers.
HEADLINE_ATTENTION = {"D": 128, "N": 8192, "causal": 0}
HEADLINE_GEMM_SIZE = 4096
HEADLINE_DTYPES = ("fp32", "fp16", "int8")
HEADLINE_PEERS = ("cublas", "cublaslt", "sdpa_flash", "sdpa_cudnn", "sdpa_flash_bwd", "sdpa_cudnn_bwd")


# ---------------------------------------------------------------------------------------------
# Peaks and instruction ceilings
# ---------------------------------------------------------------------------------------------

# Arithmetics without a context key of their own, as a multiple of one that has it: Hopper's dense fp8
# tensor rate is twice its fp16 rate (wgmma's k32 against k16, in the same time).
DERIVED_PEAKS = {"fp8_e4m3": ("peak_fp16_tflops", 2)}


def peak_of(results: Results, dtype: str, source: str | None = None) -> tuple[float | None, str | None]:
    """(the datasheet-style peak of this arithmetic, its context key, "2 × key" where derived);
    (None, key) when no file has it."""
    key, scale = PEAK_KEYS.get(dtype), 1
    if key is None and dtype in DERIVED_PEAKS:
        key, scale = DERIVED_PEAKS[dtype]
    if key is None:
        return None, None
    value = context_number(results, key, source)
    return (scale * value if value else None), (key if scale == 1 else f"{scale} × {key}")


def ceiling_run(results: Results, name: str) -> Run | None:
    return results.find(parse_name(name))


def ceiling_of(results: Results, dtype: str) -> Run | None:
    """The measured ceiling of the instruction this arithmetic runs on (ffma, mma.sync), if measured."""
    name = CEILING_OF_DTYPE.get(dtype)
    run = ceiling_run(results, name) if name else None
    return run if run is not None and run.tflops else None


def ceiling_instruction(run: Run) -> str:
    """ceiling/mma_m16n8k16/fp16 → "mma_m16n8k16"."""
    return run.name.series.partition("/")[2]


CEILING_TEXT = {
    "ffma": "FFMA (fp32 fused multiply-add)",
    "ex2": "ex2.approx (MUFU)",
    "lds32": "ld.shared, 32 bits per thread",
    "lds128": "ld.shared, 128 bits per thread",
    "dram_copy": "DRAM copy (read + write)",
}


def describe_ceiling(run: Run) -> str:
    """What a ceiling row measures; a row run at a set occupancy (warps_per_scheduler) says so."""
    instruction = ceiling_instruction(run)
    mma = re.fullmatch(r"mma_(m\d+n\d+k\d+)", instruction)
    text = f"mma.sync {mma.group(1)}, {run.name.dtype} inputs" if mma else CEILING_TEXT.get(instruction, instruction)
    warps = run.name.get("warps_per_scheduler")
    return text if warps is None else f"{text}, {warps} warps per scheduler"


def short_ceiling(run: Run) -> str:
    """A few words for a plot label: "mma.sync m16n8k16", "ffma"."""
    instruction = ceiling_instruction(run)
    mma = re.fullmatch(r"mma_(m\d+n\d+k\d+)", instruction)
    return f"mma.sync {mma.group(1)}" if mma else instruction


def ceiling_rate(run: Run) -> tuple[float | None, str, str]:
    """(measured rate, its unit, the unit per SM per clock) of a ceiling row."""
    if run.tflops is not None:
        return (run.tflops, "TOPS", "op/clk/SM") if run.name.dtype == "int8" else \
            (run.tflops, "TFLOPS", "FLOP/clk/SM")
    if run.gops is not None:
        return run.gops, "Gop/s", "op/clk/SM"
    if run.gbps is not None:
        return run.gbps, "GB/s", "B/clk/SM"
    return None, "", ""


def ceiling_peak_key(run: Run) -> str | None:
    """The context key of the datasheet-style peak of the same arithmetic, where there is one."""
    instruction = ceiling_instruction(run)
    if instruction == "ffma":
        return PEAK_KEYS["fp32"]
    if instruction.startswith("mma_"):
        return PEAK_KEYS.get(run.name.dtype)
    if instruction == "dram_copy":
        return DRAM_PEAK_KEY
    return None


# ---------------------------------------------------------------------------------------------
# The headline entries: one bar of the ladder, one point of the roofline each
# ---------------------------------------------------------------------------------------------

STAGE_SERIES = re.compile(r"(stage\d+)(?:/(.+))?$")
PLAIN_VERSION = re.compile(r"(^|/)v\d+$")
GROUPS = ("attention", "gemm")


def headline_group(name: BenchName) -> str | None:
    """"attention" or "gemm" when the run is at the headline shape, else None."""
    if name.kind == "attention":
        if all(name.get(k) == v for k, v in HEADLINE_ATTENTION.items() if k != "causal") \
                and causal_of(name) == HEADLINE_ATTENTION["causal"] and attention_family(name) is None:
            return "attention"
    elif name.kind == "gemm" and square_size(name) == HEADLINE_GEMM_SIZE:
        return "gemm"
    return None


def headline_shape_text(group: str) -> str:
    if group == "attention":
        mask = "causal" if HEADLINE_ATTENTION["causal"] else "non-causal"
        return f"D = {HEADLINE_ATTENTION['D']}, N = {HEADLINE_ATTENTION['N']}, {mask}"
    return f"M = N = K = {HEADLINE_GEMM_SIZE}"


@dataclass
class Headline:
    """One bar of the ladder, one point of the roofline."""

    group: str  # "attention" or "gemm"
    run: Run
    stage: str  # "stage04"; a backward rung of a stage's own, "stage07/attention_bwd"; or a peer's series ("cublas")
    version: str  # "v5", "attention/v8"; "" for a peer
    peer: bool

    @property
    def dtype(self) -> str:
        return self.run.name.dtype

    @property
    def stage_name(self) -> str:
        """The stage, without its rung: "stage07" for "stage07/attention_bwd"."""
        return self.stage.split("/")[0]

    @property
    def label(self) -> str:
        if self.peer:
            return self.stage
        text = f"{self.stage_name} {self.version}".strip()
        note = STAGE_NOTES.get(self.stage)
        return f"{text} ({note})" if note else text


def headline_entries(results: Results) -> list[Headline]:
    """The fastest version of every stage, per dtype in HEADLINE_DTYPES, at the headline shape, then
    the peers at the same shape; attention before GEMM, fp32 before fp16 before int8.

    A peer is taken from the run of the fastest stage it stands beside (same group and dtype, forward
    or backward) where that run measured it too: the ratio a reader takes from the ladder is then one
    of a single run (cuDNN in stage 07 attention's call, not in stage 04's); elsewhere, the first read."""
    best: dict[tuple[str, str, str], Run] = {}
    peers: list[tuple[str, Run]] = []
    for r in results.runs:
        group = headline_group(r.name)
        if group is None or r.tflops is None or r.name.dtype not in HEADLINE_DTYPES:
            continue
        stage = STAGE_SERIES.match(r.name.series)
        if stage and PLAIN_VERSION.search(r.name.series):  # vN itself, not a variant (v10_deterministic)
            # A backward rung within a forward stage (stage07/attention_bwd) is a stage of its own here:
            # its fastest version stands beside the forward's, not behind it.
            rung = r.name.series.rsplit("/", 1)[0]
            key = (group, r.name.dtype, rung if STAGE_NOTES.get(rung) == "backward" else stage.group(1))
            if key not in best or r.tflops > best[key].tflops:
                best[key] = r
        elif r.name.series in HEADLINE_PEERS:
            peers.append((group, r))
    fastest: dict[tuple[str, str, bool], Run] = {}
    for (group, dtype, stage), r in best.items():
        key = (group, dtype, STAGE_NOTES.get(stage) == "backward")
        if key not in fastest or r.tflops > fastest[key].tflops:
            fastest[key] = r
    entries = [Headline(group, r, stage, STAGE_SERIES.match(r.name.series).group(2) or "", False)
               for (group, _, stage), r in best.items()]
    for group, r in peers:
        beside = fastest.get((group, r.name.dtype, r.name.series.endswith(BACKWARD_PEER_SUFFIX)))
        run = results.same_run(r, {beside.source}) if beside is not None else r
        entries.append(Headline(group, run, r.name.series, "", True))

    def order(e: Headline) -> tuple:
        within = (HEADLINE_PEERS.index(e.stage),) if e.peer else tuple(natural(e.stage))
        return (GROUPS.index(e.group), dtype_order(e.dtype), e.peer, within)
    return sorted(entries, key=order)


# ---------------------------------------------------------------------------------------------
# Roofs
# ---------------------------------------------------------------------------------------------

@dataclass
class Roof:
    """A compute roof (TFLOPS) or a memory roof (GB/s), from a peak in the context or a ceiling."""

    label: str  # "fp16 tensor-core peak", "mma.sync m16n8k16 fp16, measured"
    value: float
    source: str  # "`peak_fp16_tflops`" or "`ceiling/mma_m16n8k16/fp16`"
    measured: bool
    dtype: str = ""  # compute roofs: the arithmetic


ROOF_NAMES = {"fp32": "fp32 FFMA", "fp16": "fp16 tensor-core", "bf16": "bf16 tensor-core",
              "int8": "int8 tensor-core"}


def compute_roofs(results: Results, dtypes: list[str]) -> tuple[dict[str, Roof], dict[str, Roof]]:
    """(datasheet-style peak, measured ceiling) per dtype, where known."""
    peaks, ceilings = {}, {}
    for dtype in dtypes:
        value, key = peak_of(results, dtype)
        if value:
            peaks[dtype] = Roof(f"{ROOF_NAMES.get(dtype, dtype)} peak", value, f"`{key}`", False, dtype)
        ceiling = ceiling_of(results, dtype)
        if ceiling is not None:
            ceilings[dtype] = Roof(f"{short_ceiling(ceiling)} {dtype}, measured", ceiling.tflops,
                                   f"`{ceiling.plain}`", True, dtype)
    return peaks, ceilings


def memory_roofs(results: Results) -> tuple[Roof | None, Roof | None]:
    """(DRAM peak from the context, measured DRAM copy rate from ceilings.json), where known."""
    peak = context_number(results, DRAM_PEAK_KEY)
    copy = ceiling_run(results, DRAM_CEILING)
    return (Roof("DRAM peak", peak, f"`{DRAM_PEAK_KEY}`", False) if peak else None,
            Roof("DRAM copy, measured", copy.gbps, f"`{copy.plain}`", True)
            if copy is not None and copy.gbps else None)


def intensity(run: Run) -> float | None:
    """FLOP per byte of DRAM traffic as the benchmark's own traffic model counts it."""
    return run.tflops * 1e3 / run.gbps if run.tflops is not None and run.gbps else None


def bound_by(x: float, compute: Roof | None, memory: Roof | None) -> tuple[float | None, str]:
    """min(compute roof, x × bandwidth) in TFLOPS, and the name of the roof that gives it."""
    slope = x * memory.value / 1e3 if memory is not None else None
    if compute is None and slope is None:
        return None, "—"
    if compute is None:
        return slope, f"{memory.label} (no compute roof known)"
    if slope is None:
        return compute.value, f"{compute.label} (no bandwidth known)"
    return (slope, memory.label) if slope < compute.value else (compute.value, compute.label)
