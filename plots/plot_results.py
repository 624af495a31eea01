#!/usr/bin/env python3
"""Draw the flashstages result figures, README tables and inline numbers from Google Benchmark JSON.

    python3 plots/plot_results.py --repo-docs                   (the reference run: results/REFERENCE)
    python3 plots/plot_results.py --repo-docs --no-plots --check
    python3 plots/plot_results.py --results results/<gpu> --readme results/<gpu>/README.md

Every ``*.json`` in the results folder is read (one file per stage, ``sdpa.json`` from
``plots/sdpa_bench.py``, ``ceilings.json`` from the instruction-ceiling microbenchmark). From those
rows this script

  * draws PNGs into ``--out`` (default: the results folder):
      attention_<dtype>.png       TFLOPS vs N, one line per series, a panel per (D, mask): a row per D,
                                  a column per mask (forward pass; attention_bwd_<dtype>.png backward)
      attention_memory.png        extra device memory (MiB) vs N, a panel per D (…_bwd.png: backward)
      gemm_<dtype>.png            TFLOPS vs M=N=K, one line per series
      ladder.png                  fastest version of every stage at the headline shape, with peers
      roofline.png                the headline points against the compute and DRAM roofs
  * rewrites the tables between ``<!-- results:NAME:begin -->`` / ``<!-- results:NAME:end -->``
    (NAME: attention, gemm, memory, cliff, tuner, each optionally ``:<prefix>`` or
    ``:<prefix>+<prefix>``; ladder, roofline, ceilings). tuner: a tuner's candidates, benchmarks named
    ``…/tile:<i>`` with a ``picked`` counter, the chosen one's rate over the fastest's at each point.
  * rewrites the inline numbers ``<!-- value: EXPR | FORMAT -->RENDERED<!-- /value -->``
    (EXPR: + - * / ( ), numbers, ``[NAME]``, ``[NAME].FIELD``, ``{CONTEXT_KEY}``; ``[NAME@FILE]``
    takes FILE's row where several files measured NAME, else the first file read is taken)
in each ``--readme`` file and, with ``--repo-docs``, in every markdown file of the repository that can
hold them (source files hold none). The docs quote one run, the reference: ``--results`` defaults to
the folder results/REFERENCE names, and ``--repo-docs`` refuses any other. ``--check`` writes nothing and lists what is stale (exit 1).

Row selection: for each benchmark the ``median`` aggregate when the file has one, otherwise its
iteration row (of several, the one with the median time). Never a best-of. A stage's own tables
(``:<prefix>``) take each peer from that stage's file where it measured the peer too (peers in the
same run). Captions name the GPU, CUDA version, clocks and shapes.

This file is the command line; the work is done by the package beside it, one module per role
(flashstages_plots/__init__.py lists them): results.py reads the JSON, tables.py makes each table,
figures.py draws, markers.py finds and renders the markers, files.py picks the files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from flashstages_plots.figures import draw_all, require_matplotlib
from flashstages_plots.files import REPO_ROOT, marked_files, reference_folder, render_files
from flashstages_plots.results import ResultsError, load_results


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--results", type=Path,
                   help="folder of Google Benchmark *.json files (default: the reference run's, results/REFERENCE)")
    p.add_argument("--readme", type=Path, action="append", default=[],
                   help="a file whose results:NAME blocks and value markers are rewritten (repeatable)")
    p.add_argument("--repo-docs", action="store_true",
                   help="also every markdown file of the repository that can hold markers (READMEs, docs/, "
                        "the stages' README.md and NOTES.md, ceilings/, this results folder's README.md)")
    p.add_argument("--repo-root", type=Path, default=REPO_ROOT,
                   help="the repository --repo-docs reads (default: the parent of plots/)")
    p.add_argument("--check", action="store_true",
                   help="write nothing, draw nothing: list every stale block and number, exit 1 if any")
    p.add_argument("--out", type=Path, help="folder for the PNGs (default: the results folder)")
    p.add_argument("--no-plots", action="store_true", help="only rewrite the tables and numbers")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        reference = reference_folder(args.repo_root)
        if args.results is None:
            if reference is None:
                raise ResultsError(f"no --results, and {args.repo_root}/results/REFERENCE names no reference run")
            args.results = reference
        if args.repo_docs and reference is not None and args.results.resolve() != reference.resolve():
            raise ResultsError(f"--repo-docs rewrites the docs, which quote the reference run ({reference}, "
                               f"results/REFERENCE), not {args.results}: give --readme {args.results}/README.md")
        if not args.results.is_dir():
            raise ResultsError(f"results folder {args.results} does not exist")
        for readme in args.readme:
            if not readme.is_file():
                raise ResultsError(f"--readme {readme} does not exist")
        results = load_results(args.results)
        if not results.runs:
            raise ResultsError(f"no benchmark rows with a name in {args.results}")
        files = marked_files(args.readme, args.repo_root if args.repo_docs else None, args.results)
        updates, stale = render_files(files, results)
        if args.check:
            for line in stale:
                print(line)
            if stale:
                print(f"plot_results: {len(stale)} generated block(s) or number(s) differ from "
                      f"{args.results}; the same command without --check rewrites them", file=sys.stderr)
                return 1
            print(f"every generated table and number matches {args.results}")
            return 0
        for path, shown, new in updates:
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(new)
            print(f"plot_results: updated {shown}")
        if not args.no_plots:
            require_matplotlib()
            for path in draw_all(results, args.out or args.results):
                print(f"plot_results: wrote {path}")
    except ResultsError as err:
        for line in str(err).splitlines():
            print(f"plot_results: error: {line}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
