#!/usr/bin/env python3
"""Checks that results/ is the evidence a reader can use, and no more (results/README.md):

  1. each GPU folder holds its JSON, its plots, its README.md and logs/, and nothing else;
  2. every log is cited: linked from a README or a docs/ chapter, or named (`logs/<name>`, wildcards
     and {a,b} allowed) in its GPU folder's README (a log only a NOTES.md row rests on lives in git
     history: scripts/archive_logs.py moves it there);
  3. results/ stays under MAX_FILES files and MAX_MB megabytes in all.

    python3 scripts/check_results.py            (exit 1, one line per problem)
    python3 scripts/check_results.py --list     also list every log with what cites it
"""
from __future__ import annotations

import argparse
import fnmatch
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "results"
MAX_FILES = 150
MAX_MB = 20.0
LINK = re.compile(r"\]\(([^)\s#]+)")
NAMED = re.compile(r"`(logs/[^`\s]+)`")
TOP_LEVEL = {".json", ".png"}


def readers() -> list[Path]:
    """The files whose links cite results: every README and the chapters."""
    out = [p for p in ROOT.rglob("README.md")] + list((ROOT / "docs").glob("*.md"))
    return sorted(p for p in out if not any(part.startswith((".", "build")) for part in p.relative_to(ROOT).parts))


def expand(pattern: str) -> list[str]:
    m = re.match(r"(.*?)\{([^}]*)\}(.*)", pattern)
    return [x for alt in m.group(2).split(",") for x in expand(m.group(1) + alt + m.group(3))] if m else [pattern]


def citations() -> dict[Path, list[str]]:
    cited: dict[Path, list[str]] = {}
    for doc in readers():
        text = doc.read_text(encoding="utf-8")
        for target in LINK.findall(text):
            path = (doc.parent / target).resolve()
            if RESULTS in path.parents:
                cited.setdefault(path, []).append(str(doc.relative_to(ROOT)))
        if doc.parent.parent == RESULTS:  # a GPU folder's README names its logs
            for named in NAMED.findall(text):
                for pattern in expand(named):
                    for path in doc.parent.glob(pattern):
                        cited.setdefault(path.resolve(), []).append(str(doc.relative_to(ROOT)))
    return cited


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list every log and what cites it")
    args = parser.parse_args()
    problems = []
    files = [p for p in RESULTS.rglob("*") if p.is_file()]
    cited = citations()
    for gpu in sorted(p for p in RESULTS.iterdir() if p.is_dir()):
        for path in sorted(gpu.iterdir()):
            rel = path.relative_to(ROOT)
            if path.is_dir() and path.name != "logs":
                problems.append(f"{rel}: a folder other than logs/")
            elif path.is_file() and path.suffix not in TOP_LEVEL and path.name != "README.md":
                problems.append(f"{rel}: not a JSON, a plot or the README (logs go in logs/)")
        for log in sorted((gpu / "logs").rglob("*")) if (gpu / "logs").is_dir() else []:
            if log.is_file():
                who = cited.get(log.resolve())
                if args.list:
                    print(f"{log.relative_to(ROOT)}: {', '.join(sorted(set(who))) if who else 'cited nowhere'}")
                if not who:
                    problems.append(f"{log.relative_to(ROOT)}: cited by no README or chapter "
                                    f"(scripts/archive_logs.py moves it to git history)")
    size = sum(p.stat().st_size for p in files) / 1e6
    if len(files) >= MAX_FILES:
        problems.append(f"results/: {len(files)} files (at most {MAX_FILES - 1})")
    if size >= MAX_MB:
        problems.append(f"results/: {size:.1f} MB (under {MAX_MB:.0f})")
    print("\n".join(problems) if problems else f"results/: {len(files)} files, {size:.1f} MB, every log cited")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
