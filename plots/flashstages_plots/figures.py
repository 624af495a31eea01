"""The figures: matplotlib drawings of the results, written as PNGs (``draw_all``).

    attention_<dtype>.png       TFLOPS vs N, one line per series, a panel per (D, mask) that has runs:
                                a row per D, a column per mask (attention_bwd_<dtype>.png: the
                                backward pass)
    attention_memory.png        extra device memory (MiB) vs N, non-causal, a panel per D
                                (attention_memory_bwd.png: the backward pass)
    gemm_<dtype>.png            TFLOPS vs M = N = K, one line per series and file
    ladder.png                  the headline entries: TFLOPS and % of peak
    roofline.png                the headline points against the compute and DRAM roofs

The panels of a figure share their axes, one legend below them and one caption above them (GPU, CUDA,
clocks, shape rule, statistic); a series has one colour and style in every panel of a figure, and the
same in every figure unless two of a figure's series would look alike (series_colors, figure_colors,
_style). Each PNG names the JSON files it draws in its metadata (Source).

This is the only module that uses matplotlib, and it imports it only inside the functions that draw,
so the tables and numbers (``--no-plots``) need nothing beyond the standard library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from .captions import format_number, percent, setup_caption, sources_of, statistic_text
from .headline import (DRAM_CEILING, DRAM_PEAK_KEY, Headline, ceiling_of, ceiling_run, compute_roofs,
                       headline_entries, headline_shape_text, intensity, memory_roofs, peak_of, short_ceiling)
from .results import Results, ResultsError, unique
from .series import (MEMORY_BEYOND, attention_config, attention_configs, attention_lines, attention_shape_text,
                     dtype_order, gemm_lines, is_baseline, is_peer, is_power_of_two, line_key_order, line_label,
                     memory_config, memory_configs, memory_key_order, memory_label, memory_lines, memory_runs,
                     pass_text, series_order, square_size)


def require_matplotlib() -> None:
    """A ResultsError that says what to do when matplotlib is missing (checked before any drawing)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ResultsError("matplotlib is not installed (pip install matplotlib), "
                           "or pass --no-plots for tables only")


# ---------------------------------------------------------------------------------------------
# What every figure shares: the canvas, colours, line styles, the size axis
# ---------------------------------------------------------------------------------------------

def _new_figure():
    # A Figure on an Agg canvas, without pyplot: no global figure registry, no display needed.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(8.0, 4.8), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def series_colors(results: Results) -> dict[str, str]:
    """One colour per series for every figure, so a series looks the same everywhere."""
    names = sorted({r.name.series for r in results.runs if r.name.kind != "ceiling"}, key=series_order)
    return {name: f"C{i % 10}" for i, name in enumerate(names)}


# Matplotlib's tab20 colours, the ten of its default cycle (C0-C9) first, then their light partners.
PALETTE = [f"C{i}" for i in range(10)] + ["#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
                                          "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"]


def figure_colors(series: Iterable[str], colors: dict[str, str]) -> dict[str, str]:
    """The colours of one figure's series, in drawing order (a series named again, one line per dtype
    or shape family, counts once): each keeps its colour from series_colors unless an earlier series of
    the figure has it already (series_colors repeats after ten); then it takes the first palette colour
    that no series of the figure has or wants. Up to 20 series, no two series of a figure look alike."""
    series = list(dict.fromkeys(series))
    wanted = {name: colors.get(name, "C0") for name in series}
    used: set[str] = set()
    out: dict[str, str] = {}
    for name in series:
        color = wanted[name]
        if color in used:
            color = next((c for c in PALETTE if c not in used and c not in wanted.values()), color)
        out[name] = color
        used.add(color)
    return out


def _style(series: str, colors: dict[str, str], off_rule: bool = False) -> dict:
    style = {"color": colors.get(series, "C0"), "marker": "o", "markersize": 4, "linewidth": 1.6}
    if off_rule:  # a shape off the default sweep: its own marker, usually a lone point
        style.update(linestyle=":", marker="D", markersize=6)
    elif is_baseline(series):
        style.update(linestyle="--")
    elif is_peer(series):
        style.update(linestyle=":", marker="s", linewidth=2.0)
    else:
        style.update(linestyle="-")
    return style


def _log2_axis(ax, values: list[int], label: str) -> str:
    """Log2 axis: a labelled tick at each power of two in the measured range; other sizes (1000,
    4097) sit at their true place with an unlabelled minor tick, so no two labels collide. Sets the
    axis label, and returns it, with the minor ticks' sizes named."""
    from matplotlib.ticker import NullLocator
    ax.set_xscale("log", base=2)
    values = sorted(set(values))
    lo, hi = values[0], values[-1]
    powers = [2 ** e for e in range(math.ceil(math.log2(lo)), math.floor(math.log2(hi)) + 1)]
    others = [v for v in values if not is_power_of_two(v)]
    if not powers:  # no power of two in the range: label the measured sizes themselves
        powers, others = values, []
    ax.set_xticks(powers, [str(v) for v in powers])
    ax.xaxis.set_minor_locator(NullLocator())
    if others:
        ax.set_xticks(others, [""] * len(others), minor=True)
        ax.tick_params(axis="x", which="minor", length=5, width=1.0)
        label += " (minor ticks: " + ", ".join(str(v) for v in others) + ")"
    ax.set_xlabel(label)
    return label


def _caption_axes(fig, gridspec_row, subtitle: str):
    """An empty axes row that holds the caption as its title, so the layout makes room for it."""
    ax = fig.add_subplot(gridspec_row)
    ax.axis("off")
    ax.set_title(subtitle, fontsize=8.5)
    return ax


def _finish(fig, ax, title: str, subtitle: str, path: Path, sources: list[str]) -> Path:
    ax.grid(True, which="major", alpha=0.35)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=12, fontweight="bold")
    ax.set_title(subtitle, fontsize=8.5)
    fig.savefig(path, dpi=150, bbox_inches="tight",
                metadata={"Software": "plots/plot_results.py", "Source": ", ".join(sources)})
    return path


# ---------------------------------------------------------------------------------------------
# Figures of panels: attention's (D, mask) configs side by side, one legend, one caption
# ---------------------------------------------------------------------------------------------

MASK_TEXT = {0: "non-causal", 1: "causal"}
LEGEND_COLUMNS = 4  # the legend below a figure of panels


def _legend_rows(entries: int) -> int:
    return -(-entries // LEGEND_COLUMNS)


def _panel_figure(cells: list[tuple[int, int]], panel_size: tuple[float, float], legend_rows: int):
    """A figure of panels, one per (row key, column key) in cells, on a grid of the row keys that occur
    by the column keys that occur (a cell without data stays blank), under an empty row for the
    caption. The panels share both axes; tick labels only where no panel sits below (x) or to the
    left (y). Returns the figure, {cell: axes} and the caption's grid slot."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    rows = sorted({r for r, _ in cells})
    cols = sorted({c for _, c in cells})
    width, height = panel_size
    fig = Figure(figsize=(0.8 + width * len(cols), 1.2 + height * len(rows) + 0.2 * legend_rows),
                 dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(len(rows) + 1, len(cols), height_ratios=[0.001] + [1] * len(rows))
    axes: dict[tuple[int, int], object] = {}
    first = None
    for cell in sorted(cells):
        ax = fig.add_subplot(grid[rows.index(cell[0]) + 1, cols.index(cell[1])], sharex=first, sharey=first)
        first = first or ax
        axes[cell] = ax
    for cell, ax in axes.items():
        bottom, left = _outer(cell, list(axes))
        ax.tick_params(labelbottom=bottom, labelleft=left)
    return fig, axes, grid[0, :]


def _outer(cell: tuple[int, int], cells: list[tuple[int, int]]) -> tuple[bool, bool]:
    """(no panel below it, no panel to its left): where a panel of shared axes shows x and y labels."""
    r, c = cell
    return (not any(r2 > r and c2 == c for r2, c2 in cells), not any(c2 < c and r2 == r for r2, c2 in cells))


def _finish_panels(fig, axes: dict, caption_slot, title: str, subtitle: str, x_label: str, y_label: str,
                   handles: list, path: Path, sources: list[str]) -> Path:
    """Labels on the outer panels, the one legend below the grid (an entry per line), the caption
    above it, the title; the PNG with the files it draws from in its metadata."""
    for cell, ax in axes.items():
        bottom, left = _outer(cell, list(axes))
        ax.grid(True, which="major", alpha=0.35)
        ax.set_xlabel(x_label if bottom else "")
        ax.set_ylabel(y_label if left else "")
    fig.legend(handles=handles, loc="outside lower center", ncols=LEGEND_COLUMNS, fontsize=8, frameon=False)
    _caption_axes(fig, caption_slot, subtitle)
    fig.suptitle(title, fontsize=12, fontweight="bold")
    fig.savefig(path, dpi=150, bbox_inches="tight",
                metadata={"Software": "plots/plot_results.py", "Source": ", ".join(sources)})
    return path


# ---------------------------------------------------------------------------------------------
# Lines over N or size: attention, its memory, GEMM
# ---------------------------------------------------------------------------------------------

def draw_attention_throughput(results: Results, out_dir: Path, colors: dict[str, str]) -> list[Path]:
    """attention_<dtype>.png (attention_bwd_<dtype>.png: the backward pass): TFLOPS vs N, a panel per
    (D, mask) that has data, a row per D and a column per mask, one line per series."""
    from matplotlib.lines import Line2D
    written = []
    runs = [r for r in results.of_kind("attention") if r.tflops is not None]
    configs = attention_configs(runs)
    for backward, dtype in dict.fromkeys(k[:2] for k in configs):
        panels = {}  # (D, causal) → (runs, lines)
        for _, _, d, causal in (k for k in configs if k[:2] == (backward, dtype)):
            chosen = [r for r in runs if attention_config(r) == (backward, dtype, d, causal)]
            lines = attention_lines(chosen, lambda r: r.tflops)
            if lines:
                panels[(d, causal)] = (chosen, lines)
        if not panels:
            continue
        keys = sorted({key for _, lines in panels.values() for key in lines}, key=line_key_order)
        shown = figure_colors((key[0] for key in keys), colors)
        fig, axes, caption_slot = _panel_figure(list(panels), (4.6, 3.0), _legend_rows(len(keys)))
        every_n = sorted({n for _, lines in panels.values() for points in lines.values() for n in points})
        x_label = ""
        for (d, causal), (chosen, lines) in panels.items():
            ax = axes[(d, causal)]
            for key, points in lines.items():
                ns = sorted(points)
                ax.plot(ns, [points[n] for n in ns], **_style(key[0], shown, key[1] is not None))
            x_label = _log2_axis(ax, every_n, "sequence length N")
            ax.set_title(f"D = {d}, {MASK_TEXT[causal]}", fontsize=10)
        next(iter(axes.values())).set_ylim(bottom=0)  # the panels share y
        handles = [Line2D([], [], label=line_label(key), **_style(key[0], shown, key[1] is not None))
                   for key in keys]
        chosen = [r for every, _ in panels.values() for r in every]
        sources = sources_of(chosen)
        subtitle = (f"{setup_caption(results, sources)}\n"
                    f"{attention_shape_text(chosen, None)} · {statistic_text(chosen)}")
        path = out_dir / f"attention_{'bwd_' if backward else ''}{dtype}.png"
        title = f"Attention {pass_text(backward)} throughput — {dtype}"
        written.append(_finish_panels(fig, axes, caption_slot, title, subtitle, x_label, "TFLOPS", handles,
                                      path, sources))
    return written


def draw_attention_memory(results: Results, out_dir: Path, colors: dict[str, str]) -> list[Path]:
    """attention_memory.png (attention_memory_bwd.png: the backward pass): extra device memory vs N,
    non-causal, log y, a panel per D, one line per (series, dtype)."""
    from matplotlib.lines import Line2D
    written = []
    runs = memory_runs(results)
    configs = memory_configs(runs)
    for backward in dict.fromkeys(k[0] for k in configs):
        panels = {}  # D → (runs, {key: points above 0 B}, labels of the lines with 0 B only)
        for _, d in (k for k in configs if k[0] == backward):
            chosen = [r for r in runs if memory_config(r) == (backward, d)]
            drawn, zero_only = {}, []
            for key, points in memory_lines(chosen).items():
                # A log axis cannot show 0 B; a line with nothing else is named in a note instead.
                above = {n: v for n, v in points.items() if v > 0}
                if above:
                    drawn[key] = above
                else:
                    zero_only.append(memory_label(key))
            if drawn:
                panels[d] = (chosen, drawn, zero_only)
        if not panels:
            continue
        keys = sorted({key for _, drawn, _ in panels.values() for key in drawn}, key=memory_key_order)
        shown = figure_colors((key[0] for key in keys), colors)
        # Two panels a row, so that the figure stays narrow enough to read at a page's width.
        cell_of = {d: divmod(i, 2) for i, d in enumerate(panels)}
        fig, axes, caption_slot = _panel_figure(list(cell_of.values()), (4.6, 3.0), _legend_rows(len(keys)))
        every_n = sorted({r.name.get("N") for chosen, _, _ in panels.values() for r in chosen})
        x_label = ""
        for d, (chosen, drawn, zero_only) in panels.items():
            ax = axes[cell_of[d]]
            for key, points in drawn.items():
                ns = sorted(points)
                ax.plot(ns, [points[n] for n in ns], **_style(key[0], shown, key[2] is not None))
            ax.set_yscale("log")
            x_label = _log2_axis(ax, every_n, "sequence length N")
            ax.set_title(f"D = {d}", fontsize=10)
            if zero_only:
                ax.text(0.01, 0.01, "no extra memory (0 B):\n" + ", ".join(zero_only),
                        transform=ax.transAxes, fontsize=6.5, va="bottom", wrap=True)
        handles = [Line2D([], [], label=memory_label(key), **_style(key[0], shown, key[2] is not None))
                   for key in keys]
        chosen = [r for every, _, _ in panels.values() for r in every]
        sources = sources_of(chosen)
        subtitle = (f"{setup_caption(results, sources)}\n"
                    f"non-causal · {attention_shape_text(chosen, None)} · {statistic_text(chosen)}")
        path = out_dir / f"attention_memory{'_bwd' if backward else ''}.png"
        title = f"Attention {pass_text(backward)}: device memory beyond {MEMORY_BEYOND[backward]}"
        written.append(_finish_panels(fig, axes, caption_slot, title, subtitle, x_label,
                                      "extra device memory (MiB, log scale)", handles, path, sources))
    return written


def draw_gemm(results: Results, out_dir: Path, colors: dict[str, str]) -> list[Path]:
    """gemm_<dtype>.png: TFLOPS vs M = N = K, one line per series (per series and file: gemm_lines)."""
    written = []
    runs = [r for r in results.of_kind_every_file("gemm") if r.tflops is not None and square_size(r.name)]
    for dtype in sorted({r.name.dtype for r in runs}, key=dtype_order):
        chosen = [r for r in runs if r.name.dtype == dtype]
        fig, ax = _new_figure()
        lines, series_of = gemm_lines(chosen)
        order = sorted(lines, key=series_order)
        shown = figure_colors(order, colors)
        for label in order:
            sizes = sorted(lines[label])
            style = _style(series_of[label], {series_of[label]: shown[label]})
            ax.plot(sizes, [lines[label][s] for s in sizes], label=label, **style)
        _log2_axis(ax, sorted({square_size(r.name) for r in chosen}), "M = N = K")
        ax.set_ylabel("TOPS" if dtype == "int8" else "TFLOPS")
        ax.set_ylim(bottom=0)
        sources = sources_of(chosen)
        subtitle = (f"{setup_caption(results, sources)}\n"
                    f"square shapes M = N = K, FLOPs = 2·M·N·K · {statistic_text(chosen)}")
        path = out_dir / f"gemm_{dtype}.png"
        written.append(_finish(fig, ax, f"GEMM throughput — {dtype}", subtitle, path, sources))
    return written


# ---------------------------------------------------------------------------------------------
# The headline: ladder and roofline
# ---------------------------------------------------------------------------------------------

DTYPE_COLORS = {"fp32": "C0", "fp16": "C1", "bf16": "C1", "int8": "C2"}


def _plain_log_ticks(axis) -> None:
    """Label a log axis 0.1, 1, 10, 100 … instead of 10⁻¹, 10⁰ …"""
    from matplotlib.ticker import FuncFormatter
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


def draw_ladder(results: Results, out_dir: Path) -> list[Path]:
    """ladder.png: the fastest version of every stage at the headline shape, next to the peers, as
    TFLOPS (log) and as % of the GPU's peak for that arithmetic; a tick at the measured instruction
    ceiling where ceilings.json has it."""
    entries = headline_entries(results)
    if not entries:
        return []
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows: list[tuple[str, Headline | None]] = []  # a bold group header, then its bars
    previous = None
    for e in entries:
        if (e.group, e.dtype) != previous:
            title = "attention" if e.group == "attention" else "GEMM"
            rows.append((f"{title} {e.dtype} · {headline_shape_text(e.group)}", None))
            previous = (e.group, e.dtype)
        rows.append((e.label, e))

    fig = Figure(figsize=(11.0, 1.8 + 0.26 * len(rows)), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.add_gridspec(2, 2, height_ratios=[0.001, 1], width_ratios=[1.15, 1])
    ax_t = fig.add_subplot(grid[1, 0])
    ax_p = fig.add_subplot(grid[1, 1], sharey=ax_t)

    rates = [e.run.tflops for e in entries]
    low = 10 ** math.floor(math.log10(min(rates)))
    high = max(rates) * 2.5
    pct_max = 100.0
    any_ceiling = False
    ceiling_texts: list[tuple[int, str]] = []
    used = [e.run for e in entries]
    for y, (_, e) in enumerate(rows):
        if e is None:
            continue
        color = DTYPE_COLORS.get(e.dtype, "C7")
        style = {"color": color, "height": 0.7, "edgecolor": "black" if e.peer else color,
                 "linewidth": 0.6, "hatch": "///" if e.peer else None, "alpha": 0.55 if e.peer else 0.9}
        rate = e.run.tflops
        ax_t.barh(y, rate - low, left=low, **style)
        ax_t.text(rate * 1.07, y, format_number(rate), va="center", fontsize=7)
        peak, _ = peak_of(results, e.dtype, e.run.source)
        pct = percent(rate, peak)
        if pct is None:
            ax_p.text(1, y, "no peak in the context", va="center", fontsize=7, color="0.4")
            continue
        ax_p.barh(y, pct, **style)
        # "% of peak" right after the bar (after the ceiling tick when the tick would cut it);
        # "% of the ceiling" in a column at the right edge.
        text_at = pct
        ceiling = ceiling_of(results, e.dtype)
        if ceiling is not None:
            any_ceiling = True
            used.append(ceiling)
            mark = percent(ceiling.tflops, peak)
            ax_p.plot([mark, mark], [y - 0.45, y + 0.45], color="black", linewidth=1.8)
            if pct <= mark < pct + 18:
                text_at = mark
            ceiling_texts.append((y, f"{percent(rate, ceiling.tflops):.0f}% of {short_ceiling(ceiling)}"))
            pct_max = max(pct_max, mark)
        pct_max = max(pct_max, text_at + 14)
        ax_p.text(text_at + 1.5, y, f"{pct:.1f}%", va="center", fontsize=7)

    right = pct_max * 1.05 + (85 if any_ceiling else 0)
    for y, text in ceiling_texts:
        ax_p.text(right - 1.5, y, text, va="center", ha="right", fontsize=7)
    ax_t.set_xscale("log")
    ax_t.set_xlim(low, high)
    _plain_log_ticks(ax_t.xaxis)
    ax_t.set_xlabel("TFLOPS (TOPS for int8), log scale")
    ax_p.set_xlim(0, right)
    ax_p.axvline(100, color="0.5", linewidth=0.8)
    ax_p.set_xticks([t for t in range(0, int(pct_max) + 1, 25)])
    ax_p.set_xlabel("% of the GPU's peak for that arithmetic"
                    + ("\nright: % of the measured instruction ceiling (tick)" if any_ceiling else ""))
    ax_t.set_yticks(range(len(rows)), [label for label, _ in rows])
    for tick, (_, e) in zip(ax_t.get_yticklabels(), rows):
        if e is None:
            tick.set_fontweight("bold")
    ax_t.tick_params(axis="y", length=0, labelsize=8)
    ax_p.tick_params(axis="y", left=False, labelleft=False)
    ax_t.set_ylim(len(rows) - 0.5, -0.5)
    for ax in (ax_t, ax_p):
        ax.grid(True, axis="x", which="major", alpha=0.35)
        for y, (_, e) in enumerate(rows):
            if e is None and y > 0:
                ax.axhline(y - 0.5, color="0.7", linewidth=0.6)

    dtypes = unique(e.dtype for e in entries)
    handles = [Patch(color=DTYPE_COLORS.get(d, "C7"), alpha=0.9, label=d) for d in dtypes]
    handles.append(Patch(facecolor="white", edgecolor="black", hatch="///", label="peer, same shape"))
    if any_ceiling:
        handles.append(Line2D([], [], color="black", linewidth=1.8,
                              label="measured instruction ceiling (ceilings.json)"))
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False)

    sources = sources_of(used)
    peaks = []
    for dtype in dtypes:
        value, key = peak_of(results, dtype)
        if value:
            peaks.append(f"{dtype} {format_number(value)}")
    subtitle = (f"{setup_caption(results, sources)}\n"
                "fastest version of each stage, peers from the fastest stage's run where it has them"
                f" · {statistic_text(used)}"
                + (f" · peaks: {', '.join(peaks)}" if peaks else ""))
    _caption_axes(fig, grid[0, :], subtitle)
    fig.suptitle("The ladder: every stage at the headline shape", fontsize=12, fontweight="bold")
    path = out_dir / "ladder.png"
    fig.savefig(path, dpi=150, bbox_inches="tight",
                metadata={"Software": "plots/plot_results.py", "Source": ", ".join(sources)})
    return [path]


def _spread_labels(fig, texts: list, obstacles: list, gap_px: float = 3.0) -> None:
    """Move annotations (placed at an offset in points from their point) apart vertically until no
    two overlap and none overlaps a fixed artist (obstacles). Works on the text boxes in pixels,
    which an offset in points moves rigidly; the leader lines follow the text."""
    from matplotlib.text import Text
    renderer = fig.canvas.get_renderer()
    boxes = [Text.get_window_extent(t, renderer) for t in texts]  # the text alone, no leader line
    fixed = [o.get_window_extent(renderer) for o in obstacles]
    shift = [0.0] * len(texts)

    def span(i):
        return boxes[i].y0 + shift[i], boxes[i].y1 + shift[i]

    def apart(ax0, ax1, bx0, bx1):
        return ax1 <= bx0 or bx1 <= ax0

    for _ in range(2000):
        moved = False
        for i in range(len(texts)):
            for j in range(i + 1, len(texts)):
                if apart(boxes[i].x0, boxes[i].x1, boxes[j].x0, boxes[j].x1):
                    continue
                (a0, a1), (b0, b1) = span(i), span(j)
                overlap = min(a1, b1) - max(a0, b0) + gap_px
                if overlap <= 0:
                    continue
                up, down = (i, j) if (a0 + a1, j) > (b0 + b1, i) else (j, i)
                shift[up] += overlap / 2 + 0.01
                shift[down] -= overlap / 2 + 0.01
                moved = True
            for f in fixed:
                if apart(boxes[i].x0, boxes[i].x1, f.x0, f.x1):
                    continue
                a0, a1 = span(i)
                if min(a1, f.y1) - max(a0, f.y0) + gap_px <= 0:
                    continue
                shift[i] += (f.y1 - a0 + gap_px) if a0 + a1 >= f.y0 + f.y1 else -(a1 - f.y0 + gap_px)
                moved = True
        if not moved:
            break
    to_points = 72.0 / fig.dpi
    for t, dy in zip(texts, shift):
        dx, y = t.xyann
        t.xyann = (dx, y + dy * to_points)


def draw_roofline(results: Results, out_dir: Path) -> list[Path]:
    """roofline.png: log-log, x = FLOP per byte of DRAM traffic (the stage's own traffic model,
    TFLOPS·10³ / (GB/s)), y = TFLOPS; roofs from the context's peaks (solid) and ceilings.json (dashed)."""
    points = [(e, intensity(e.run)) for e in headline_entries(results)]
    points = [(e, x) for e, x in points if x]
    if not points:
        return []
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    dtypes = unique(e.dtype for e, _ in points)
    peaks, ceilings = compute_roofs(results, dtypes)
    dram_peak, dram_copy = memory_roofs(results)
    memories = [m for m in (dram_peak, dram_copy) if m is not None]

    xs = [x for _, x in points]
    ridges = [c.value * 1e3 / m.value for c in list(peaks.values()) + list(ceilings.values())
              for m in memories]
    x_lo = 2 ** math.floor(math.log2(min(xs + ridges) / 4))
    x_hi = 2 ** math.ceil(math.log2(max(xs) * 12))
    tops = [r.value for r in list(peaks.values()) + list(ceilings.values())] + [e.run.tflops for e, _ in points]
    y_lo = 10 ** math.floor(math.log10(min(e.run.tflops for e, _ in points) / 2))
    y_hi = 10 ** math.ceil(math.log10(max(tops) * 2))

    fig = Figure(figsize=(10.0, 6.6), dpi=150, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    _plain_log_ticks(ax.xaxis)
    _plain_log_ticks(ax.yaxis)

    # Each roof is a line in the legend below (what it is, its value, its ridge point); on the plot
    # only its value at the right edge and the ridge value next to the ridge marker.
    movable, obstacles, roof_handles = [], [], []
    for roof in list(peaks.values()) + list(ceilings.values()):
        memory = dram_copy if roof.measured else dram_peak
        color = DTYPE_COLORS.get(roof.dtype, "C7")
        style = "--" if roof.measured else "-"
        unit = "TOPS" if roof.dtype == "int8" else "TFLOPS"
        text = f"{roof.label}: {format_number(roof.value)} {unit} ({roof.source.strip('`')})"
        start = x_lo
        if memory is not None:
            start = roof.value * 1e3 / memory.value
            ax.plot([start], [roof.value], marker="o", markersize=4, color=color)
            movable.append(ax.annotate(f"ridge {format_number(start)}", (start, roof.value),
                                       xytext=(-4, 3), textcoords="offset points", ha="right",
                                       va="bottom", fontsize=6.5, color=color,
                                       bbox={"boxstyle": "square,pad=0.1", "facecolor": "white",
                                             "edgecolor": "none", "alpha": 0.8}))
            text += f" · ridge {format_number(start)} FLOP/B"
        roof_handles += ax.plot([start, x_hi], [roof.value, roof.value], linestyle=style, color=color,
                                linewidth=1.4, label=text)
        movable.append(ax.annotate(format_number(roof.value), (x_hi, roof.value), xytext=(3, 0),
                                   textcoords="offset points", va="center", fontsize=7, color=color,
                                   annotation_clip=False))
    for memory in memories:
        top = max([r.value for r in (ceilings if memory.measured else peaks).values()], default=y_hi)
        style = "--" if memory.measured else "-"
        roof_handles += ax.plot([x_lo, top * 1e3 / memory.value], [x_lo * memory.value / 1e3, top],
                                linestyle=style, color="0.35", linewidth=1.4,
                                label=f"{memory.label}: {format_number(memory.value)} GB/s "
                                      f"({memory.source.strip('`')})")
    if not memories:
        obstacles.append(ax.text(0.01, 0.01, f"no DRAM bandwidth in these results ({DRAM_PEAK_KEY} in a "
                                 f"context, or {DRAM_CEILING}): no memory roof, no ridge points",
                                 transform=ax.transAxes, fontsize=7, color="0.3", va="bottom"))

    labels = []
    for e, x in points:
        color = DTYPE_COLORS.get(e.dtype, "C7")
        ax.plot([x], [e.run.tflops], marker="s" if e.peer else "o", markersize=6 if e.peer else 5,
                color=color, markeredgecolor="black", markeredgewidth=0.6, linestyle="none")
        labels.append(ax.annotate(f"{e.label} {e.dtype}", (x, e.run.tflops), xytext=(7, 0),
                                  textcoords="offset points", fontsize=7, va="center",
                                  bbox={"boxstyle": "square,pad=0.1", "facecolor": "white",
                                        "edgecolor": "none", "alpha": 0.8},
                                  arrowprops={"arrowstyle": "-", "color": "0.6", "linewidth": 0.5,
                                              "shrinkA": 0, "shrinkB": 3}))
    handles = [Line2D([], [], color=DTYPE_COLORS.get(d, "C7"), marker="o", linestyle="none", label=d)
               for d in dtypes]
    handles += [Line2D([], [], color="0.3", marker="o", linestyle="none", label="stage (fastest version)"),
                Line2D([], [], color="0.3", marker="s", linestyle="none", label="peer")]
    marker_legend = ax.legend(handles=handles, loc="lower right", fontsize=7.5, frameon=True, framealpha=0.9)
    ax.add_artist(marker_legend)

    if roof_handles:
        fig.legend(handles=roof_handles, loc="outside lower center", ncols=2, fontsize=7.5, frameon=False)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_xlabel("arithmetic intensity: FLOP per byte of DRAM traffic, as each benchmark's traffic "
                  "model counts it (TFLOPS·10³ / GB/s)")
    ax.set_ylabel("TFLOPS (TOPS for int8)")
    used = [e.run for e, _ in points] + [r for r in (ceiling_of(results, d) for d in dtypes) if r]
    copy_run = ceiling_run(results, DRAM_CEILING)
    if copy_run is not None:
        used.append(copy_run)
    sources = sources_of(used)
    ax.set_title(f"{setup_caption(results, sources)}\n"
                 f"attention {headline_shape_text('attention')}; GEMM {headline_shape_text('gemm')} · "
                 f"{statistic_text(used)}", fontsize=8.5)
    fig.suptitle("Roofline: the headline points against the compute and DRAM roofs",
                 fontsize=12, fontweight="bold")
    fig.canvas.draw()  # lays the figure out; then freeze it, so the spread labels keep their places
    fig.set_layout_engine("none")
    _spread_labels(fig, labels + movable, obstacles + [marker_legend])
    path = out_dir / "roofline.png"
    fig.savefig(path, dpi=150, bbox_inches="tight",
                metadata={"Software": "plots/plot_results.py", "Source": ", ".join(sources)})
    return [path]


# ---------------------------------------------------------------------------------------------
# Every figure
# ---------------------------------------------------------------------------------------------

def draw_all(results: Results, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    colors = series_colors(results)
    return (draw_attention_throughput(results, out_dir, colors)
            + draw_attention_memory(results, out_dir, colors)
            + draw_gemm(results, out_dir, colors)
            + draw_ladder(results, out_dir)
            + draw_roofline(results, out_dir))
