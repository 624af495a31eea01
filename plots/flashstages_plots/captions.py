"""The words and numbers that every table and figure prints: the caption naming the GPU, CUDA version
and clocks of the files a table or figure reads (``setup_caption``), which statistic the rows are
(``statistic_text``), the files themselves (``sources_of``), and how a rate or a percentage is
written (``format_number``, ``format_percent``).
"""

from __future__ import annotations

from .results import Results, Run, natural, unique


def setup_caption(results: Results, sources: list[str]) -> str:
    """'NVIDIA H100 80GB HBM3 · CUDA 13.0 · SM 1980 MHz · memory 2619 MHz' for these files.

    Files written by sdpa_bench.py carry torch_version; their CUDA is PyTorch's, so it is named
    apart from the project's own toolkit.
    """
    contexts = [results.contexts[s] for s in sources if s in results.contexts]
    own = [c for c in contexts if "torch_version" not in c]
    torch_ctx = [c for c in contexts if "torch_version" in c]
    main = own or torch_ctx
    gpus = unique(c.get("gpu_name", "") for c in contexts)
    parts = [" / ".join(gpus) or "unknown GPU"]
    cuda = unique(c.get("cuda_runtime", "") for c in main)
    parts.append("CUDA " + " / ".join(cuda) if cuda else "CUDA version not recorded")
    sm = unique(c.get("sm_clock_mhz", "") for c in main if c.get("sm_clock_mhz") not in ("", "0"))
    if sm:
        parts.append("SM " + " / ".join(sm) + " MHz")
    mem = unique(c.get("mem_clock_mhz", "") for c in main if c.get("mem_clock_mhz") not in ("", "0"))
    if mem:
        parts.append("memory " + " / ".join(mem) + " MHz")
    if torch_ctx:
        tv = " / ".join(unique(c.get("torch_version", "") for c in torch_ctx))
        tc = " / ".join(unique(c.get("cuda_runtime", "") for c in torch_ctx))
        parts.append(f"sdpa_*: PyTorch {tv}" + (f", CUDA {tc}" if tc and own else ""))
    return " · ".join(parts)


def sources_of(runs: list[Run]) -> list[str]:
    return sorted({r.source for r in runs}, key=natural)


def statistic_text(runs: list[Run]) -> str:
    picked = {r.picked for r in runs}
    if picked == {"median"}:
        return "median of repetitions"
    if picked == {"iteration"}:
        return "one run each (no repetitions)"
    return "median of repetitions where repeated, else one run"


def format_number(value: float | None) -> str:
    if value is None:
        return "—"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.01:
        return f"{value:.2f}"
    return f"{value:.2g}"


def percent(part: float | None, whole: float | None) -> float | None:
    return 100.0 * part / whole if part is not None and whole else None


def format_percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}%"
