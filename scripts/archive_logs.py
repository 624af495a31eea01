#!/usr/bin/env python3
"""Moves the logs that no README or chapter cites out of results/ and into git history.

results/ keeps what a reader uses (results/README.md): per GPU the JSON, the plots, the generated
README and the logs that a README or a docs/ chapter cites. A stages/*/NOTES.md row may rest on a log
that nothing else cites; this script removes such a log from the tree and rewrites the row's link into
a plain reference to the commit that still holds it:

    [v8 grid](../../results/nvidia-h100-80gb-hbm3/logs/bench_x.log)
      →  `bench_x.log` (git show 1a2b3c4:results/nvidia-h100-80gb-hbm3/logs/bench_x.log)

    python3 scripts/archive_logs.py            list what would go (nothing is changed)
    python3 scripts/archive_logs.py --apply    remove those logs (git rm) and rewrite the NOTES.md links

The commit named is HEAD at the time of --apply: run it on a clean tree, then commit.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_results import RESULTS, ROOT, citations  # noqa: E402  (what counts as cited: one definition)

LINK = re.compile(r"\[([^\]]+)\]\(([^)\s#]+)\)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apply", action="store_true", help="git rm the logs and rewrite the NOTES.md links")
    args = parser.parse_args()
    cited = citations()
    logs = sorted(p for p in RESULTS.glob("*/logs/**/*") if p.is_file() and p.resolve() not in cited)
    print(f"{len(logs)} logs cited by no README or chapter")
    if not args.apply:
        for p in logs:
            print(f"  {p.relative_to(ROOT)}")
        return 0
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    going = {p.resolve() for p in logs}
    for notes in sorted((ROOT / "stages").rglob("NOTES.md")):
        text = notes.read_text(encoding="utf-8")

        def plain(m: re.Match) -> str:
            target = (notes.parent / m.group(2)).resolve()
            if target not in going:
                return m.group(0)
            rel = target.relative_to(ROOT).as_posix()
            return f"`{target.name}` (`git show {head}:{rel}`)"
        new = LINK.sub(plain, text)
        if new != text:
            notes.write_text(new, encoding="utf-8")
            print(f"rewrote {notes.relative_to(ROOT)}")
    if logs:
        subprocess.run(["git", "-C", str(ROOT), "rm", "-q", "--"] + [str(p.relative_to(ROOT)) for p in logs], check=True)
    print(f"removed {len(logs)} logs; they stay in git at {head}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
