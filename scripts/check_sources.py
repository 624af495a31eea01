#!/usr/bin/env python3
"""Checks the ladder convention (docs/architecture.md, "The shape of a stage") over every stage:

  1. each stage (or rung of stage 07) holds the same kinds of files: CMakeLists.txt, README.md,
     NOTES.md, versions.h, versions.cu (the registry), main.cu, test.cu, bench.cu, and for every
     version its CMakeLists.txt lists (VERSIONS v1 v2 …) one launch file vN.cu and one kernel file
     vN_<technique>.cuh;
  2. no version file over 60 lines includes another version's file (a short file that only
     configures an earlier version may), and vN.cu includes no other version's kernel file;
  3. a version's header, the comment that opens vN_<technique>.cuh, is at most 20 lines;
  3a. a stage's instances/ folder (the files that compile a version's kernel instances, a group each)
     holds vN.cuh (the launch they instantiate) and vN_<group>.cu for versions its CMakeLists.txt lists,
     each .cu compiled (named in CMakeLists.txt), none including another version's files;
  4. no source file (stages/, common/, ceilings/) holds a generated-value marker (<!-- value … -->)
     or an internal run id (s183): numbers live in the generated tables, measurements in NOTES.md;
  5. no README or chapter a learner reads (README.md files, docs/) carries an internal run id either:
     a log is named by what it holds;
  6. no doctest case name holds a comma or a semicolon: doctest_discover_tests runs each case by
     -tc=<name>, where a comma separates filters, so the case would lose its cpu/gpu label and
     `ctest -L gpu` would never run it (CMake splits lists at a semicolon).

    python3 scripts/check_sources.py [--stage stages/05_flash_bwd ...]     (exit 1, one line per problem)
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAGE_FILES = ("CMakeLists.txt", "README.md", "NOTES.md", "versions.h", "versions.cu", "main.cu", "test.cu",
               "bench.cu")
SOURCE_SUFFIXES = {".cu", ".cuh", ".h", ".hpp", ".cpp", ".c"}
VALUE_MARKER = re.compile(r"<!--\s*/?\s*value")
# An internal run id: s followed by two or three digits, but not a PTX integer type (s8 … s64).
RUN_ID = re.compile(r"\bs(?!(?:16|32|64)\b)\d{2,3}\b")
VERSIONS = re.compile(r"\bVERSIONS\s+((?:v\d+\s*)+)")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
VERSION_FILE = re.compile(r"^v(\d+)(?:_\w+\.cuh|\.cu)$")
INSTANCE_FILE = re.compile(r"^v(\d+)(?:\.cuh|_\w+\.cu)$")
TEST_NAME = re.compile(r'\b(?:FS_GPU_|FS_CPU_)?TEST_CASE\(\s*"([^"]*)"')
MAX_HEADER_LINES = 20
SHORT_FILE_LINES = 60


def stage_dirs() -> list[Path]:
    """Every folder that adds a stage: its CMakeLists.txt calls flashstages_add_stage."""
    return sorted(p.parent for p in (ROOT / "stages").glob("**/CMakeLists.txt")
                  if "flashstages_add_stage" in p.read_text())


def header_lines(text: str) -> int:
    """How many lines the comment that opens a file takes (// lines, blank lines inside it included)."""
    count = 0
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            count += 1
        elif stripped == "" and count:
            count += 1
        else:
            break
    lines = text.splitlines()[:count]
    while lines and not lines[-1].strip():  # trailing blank lines are not the header's
        lines.pop()
    return len(lines)


def check_stage(stage: Path) -> list[str]:
    problems = []
    rel = stage.relative_to(ROOT)
    for name in STAGE_FILES:
        if not (stage / name).exists():
            problems.append(f"{rel}: no {name}")
    match = VERSIONS.search((stage / "CMakeLists.txt").read_text())
    versions = match.group(1).split() if match else []
    if not versions:
        problems.append(f"{rel}/CMakeLists.txt: no VERSIONS list")
    for version in versions:
        if not (stage / f"{version}.cu").exists():
            problems.append(f"{rel}: {version} has no launch file {version}.cu")
        kernels = sorted(stage.glob(f"{version}_*.cuh"))
        if len(kernels) != 1:
            problems.append(f"{rel}: {version} has {len(kernels)} kernel files ({version}_<technique>.cuh), not one")
    for path in sorted(stage.iterdir()):
        m = VERSION_FILE.match(path.name)
        if not m:
            continue
        own = f"v{m.group(1)}"
        if own not in versions:
            problems.append(f"{rel}/{path.name}: {own} is not in CMakeLists.txt's VERSIONS")
        text = path.read_text()
        length = len(text.splitlines())
        for include in INCLUDE.findall(text):
            other = VERSION_FILE.match(Path(include).name)
            if not other or f"v{other.group(1)}" == own:
                continue
            if path.suffix == ".cu":
                problems.append(f"{rel}/{path.name}: includes another version's file, {include}")
            elif length > SHORT_FILE_LINES:
                problems.append(f"{rel}/{path.name}: {length} lines, and includes another version's file, "
                                f"{include} (only a file of at most {SHORT_FILE_LINES} lines that configures "
                                f"an earlier version may)")
        if path.suffix == ".cuh" and (n := header_lines(text)) > MAX_HEADER_LINES:
            problems.append(f"{rel}/{path.name}: its header is {n} lines (at most {MAX_HEADER_LINES}: what changes "
                            f"from its parent, why it is faster, Run:)")
    problems += check_instances(stage, versions)
    return problems


def check_instances(stage: Path, versions: list[str]) -> list[str]:
    """Rule 3a: stage/instances/, where a version's kernel instances compile in groups, a file each."""
    folder = stage / "instances"
    if not folder.is_dir():
        return []
    problems = []
    rel = folder.relative_to(ROOT)
    cmake = (stage / "CMakeLists.txt").read_text()
    for path in sorted(folder.iterdir()):
        m = INSTANCE_FILE.match(path.name)
        if not m or f"v{m.group(1)}" not in versions:
            problems.append(f"{rel}/{path.name}: not named after a version of the stage whose instances it compiles "
                            f"(vN.cuh, vN_<group>.cu)")
            continue
        own = f"v{m.group(1)}"
        if path.suffix == ".cu" and f"instances/{path.name}" not in cmake:
            problems.append(f"{rel}/{path.name}: not in CMakeLists.txt (SOURCES), so never compiled")
        for include in INCLUDE.findall(path.read_text()):
            other = VERSION_FILE.match(Path(include).name) or INSTANCE_FILE.match(Path(include).name)
            if other and f"v{other.group(1)}" != own:
                problems.append(f"{rel}/{path.name}: includes another version's file, {include}")
    return problems


def check_markers() -> list[str]:
    problems = []
    for top in ("stages", "common", "ceilings"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                where = f"{path.relative_to(ROOT)}:{n}"
                if VALUE_MARKER.search(line):
                    problems.append(f"{where}: a generated-value marker in a source file (numbers live in the "
                                    f"generated tables)")
                if (m := TEST_NAME.search(line)) and re.search(r"[,;]", m.group(1)):
                    problems.append(f"{where}: a test case name with a comma or semicolon (ctest would lose "
                                    f"its cpu/gpu label): {m.group(1)!r}")
                if m := RUN_ID.search(line):
                    problems.append(f"{where}: an internal run id, {m.group(0)} (name the log by what it holds, "
                                    f"in NOTES.md)")
    return problems


# What a learner reads: every README and chapter. The results/ READMEs join once their provenance
# names logs by what they hold (issue 51).
PROSE = ("README.md", "docs/*.md", "stages/**/README.md", "ceilings/**/*.md", "python/**/*.md", "plots/README.md")


def check_prose() -> list[str]:
    problems = []
    for pattern in PROSE:
        for path in sorted(ROOT.glob(pattern)):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if m := RUN_ID.search(line):
                    problems.append(f"{path.relative_to(ROOT)}:{n}: an internal run id, {m.group(0)} (a learner "
                                    f"reads this: name the log by what it holds)")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stage", action="append", type=Path, default=[],
                        help="a stage folder (stages/05_flash_bwd); default every stage, and the markers check")
    args = parser.parse_args()
    stages = [p.resolve() for p in args.stage] or stage_dirs()
    problems = [p for stage in stages for p in check_stage(stage)]
    if not args.stage:
        problems += check_markers() + check_prose()
    else:
        problems += [p for p in check_markers() if any(p.startswith(str(s.relative_to(ROOT)) + "/") for s in stages)]
    print("\n".join(problems) if problems else f"{len(stages)} stage(s) follow the ladder convention")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
