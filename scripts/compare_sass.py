#!/usr/bin/env python3
"""Compares the machine code (SASS) of every kernel in two builds: did a change that should only move
code (a refactor, a header split, a renamed file) leave every kernel as it was? No GPU needed.

    python3 scripts/compare_sass.py OLD_BUILD NEW_BUILD [--stage stage05 ...] [--show N]

OLD_BUILD and NEW_BUILD are CMake build trees of the two commits, configured alike (the same CUDA
architectures and flags); only the stages' object libraries need to be built, e.g.
    cmake -S . -B build/sass -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 \\
          -DFLASHSTAGES_BUILD_TESTS=OFF -DFLASHSTAGES_BUILD_BENCHMARKS=OFF
    ninja -C build/sass stage05_kernels
Every function of every `<stage>_kernels` object is disassembled with `cuobjdump -sass` (addresses and
encodings dropped) and its register, stack and shared-memory use read with `cuobjdump -res-usage`.
A function of the old build is then
    same       the new build has it under the same name, with the same instructions and resources
    renamed    a new function of another name has the same instructions and resources (each new
               function stands in for one old one)
    merged     its code is in the new build under a name that stands in for another old function of
               the same code
    CHANGED    the new build has it, with other instructions or resources (the first difference shown)
    MISSING    nothing in the new build matches it
and a function only the new build has is a `copy` when it has the instructions and resources of an old
function (a version that ran an earlier version's kernel now has its own, the same), else `new`. Exit 0
when every old function is `same`, `renamed` or `merged` and every new one a `copy`, 1 otherwise: a kernel whose
code changed needs its benchmark run on a GPU (scripts/gpu_check.sh compare), not this check.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

FUNCTION = re.compile(r"^\s*Function : (\S+)")
INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;?\s*(?:/\*.*\*/)?\s*$")
RESOURCES = re.compile(r"^\s*Function (\S+):\s*$")
ARCH = re.compile(r"^\s*arch = (\S+)")


def tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        sys.exit(f"compare_sass: {name} not found on PATH (it comes with the CUDA Toolkit; on PyPI as "
                 f"nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm)")
    return path


def objects(build: Path, stages: list[str]) -> dict[str, list[Path]]:
    """The object files of each stage's kernels: {prefix: [objects]}."""
    found: dict[str, list[Path]] = defaultdict(list)
    for obj in sorted(build.glob("stages/**/CMakeFiles/*_kernels.dir/**/*.o")):
        prefix = next(p for p in obj.parts if p.endswith("_kernels.dir"))[: -len("_kernels.dir")]
        if not stages or prefix in stages:
            found[prefix].append(obj)
    return found


def disassemble(obj: Path) -> dict[tuple[str, str], list[str]]:
    """{(arch, mangled name): instructions} of one object file."""
    out = subprocess.run([tool("cuobjdump"), "-sass", str(obj)], capture_output=True, text=True, check=True).stdout
    functions: dict[tuple[str, str], list[str]] = {}
    arch, current = "?", None
    for line in out.splitlines():
        if m := ARCH.match(line):
            arch = m.group(1)
        elif m := FUNCTION.match(line):
            current = functions.setdefault((arch, m.group(1)), [])
        elif current is not None and (m := INSTRUCTION.match(line)) and m.group(1):
            current.append(" ".join(m.group(1).split()))
    return functions


def resources(obj: Path) -> dict[str, str]:
    """{mangled name: its resource line (registers, stack, shared, constant banks)} of one object file."""
    out = subprocess.run([tool("cuobjdump"), "-res-usage", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    usage, name = {}, None
    for line in out.splitlines():
        if m := RESOURCES.match(line):
            name = m.group(1)
        elif name and "REG:" in line:
            usage[name] = " ".join(line.split())
            name = None
    return usage


def collect(objs: list[Path]) -> dict[tuple[str, str], tuple[list[str], str]]:
    code: dict[tuple[str, str], tuple[list[str], str]] = {}
    for obj in objs:
        usage = resources(obj)
        for key, instructions in disassemble(obj).items():
            code.setdefault(key, (instructions, usage.get(key[1], "")))
    return code


def digest(entry: tuple[list[str], str]) -> str:
    return hashlib.sha1(("\n".join(entry[0]) + "\n#" + entry[1]).encode()).hexdigest()


def demangle(names: list[str]) -> dict[str, str]:
    filt = shutil.which("c++filt")
    if not filt or not names:
        return {n: n for n in names}
    out = subprocess.run([filt], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def first_difference(old: tuple[list[str], str], new: tuple[list[str], str]) -> str:
    if old[1] != new[1]:
        return f"resources: {old[1]}  ->  {new[1]}"
    a, b = old[0], new[0]
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"instruction {i} of {len(a)} -> {len(b)}: {x}  ->  {y}"
    return f"{len(a)} -> {len(b)} instructions"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path, help="build tree of the earlier commit")
    parser.add_argument("new", type=Path, help="build tree of the change")
    parser.add_argument("--stage", action="append", default=[], help="a stage prefix (stage05, stage07_gemm); default all")
    parser.add_argument("--show", type=int, default=40, help="at most this many lines per verdict (default 40)")
    args = parser.parse_args()
    for build in (args.old, args.new):
        if not build.is_dir():
            parser.error(f"{build} is not a folder")
    old_objs, new_objs = objects(args.old, args.stage), objects(args.new, args.stage)
    if not old_objs:
        parser.error(f"no stage kernel objects under {args.old} (build the <stage>_kernels targets first)")
    bad = 0
    for prefix in sorted(set(old_objs) | set(new_objs)):
        old, new = collect(old_objs.get(prefix, [])), collect(new_objs.get(prefix, []))
        names = demangle(sorted({n for _, n in old} | {n for _, n in new}))
        verdicts: dict[str, list[str]] = defaultdict(list)
        # 1. Under the same name: the same code, or changed.
        for key in sorted(set(old) & set(new)):
            label = f"{key[0]} {names[key[1]]}"
            if digest(old[key]) == digest(new[key]):
                verdicts["same"].append(label)
            else:
                verdicts["CHANGED"].append(f"{label}\n      {first_difference(old[key], new[key])}")
        # 2. The rest, paired by their code: each new function stands in for one old one.
        old_rest: dict[tuple[str, str], list[str]] = defaultdict(list)
        new_rest: dict[tuple[str, str], list[str]] = defaultdict(list)
        for (arch, name) in sorted(set(old) - set(new)):
            old_rest[(arch, digest(old[(arch, name)]))].append(name)
        for (arch, name) in sorted(set(new) - set(old)):
            new_rest[(arch, digest(new[(arch, name)]))].append(name)
        old_codes = {(arch, digest(e)) for (arch, _), e in old.items()}
        new_codes = {(arch, digest(e)) for (arch, _), e in new.items()}
        for code in sorted(set(old_rest) | set(new_rest)):
            arch = code[0]
            olds, news = old_rest.get(code, []), new_rest.get(code, [])
            for o, n in zip(olds, news):
                verdicts["renamed"].append(f"{arch} {names[o]}\n      -> {names[n]}")
            for o in olds[len(news):]:  # its code is still there, under a name another old function also had
                verdicts["merged" if code in new_codes else "MISSING"].append(f"{arch} {names[o]}")
            for n in news[len(olds):]:  # a second function with the code of an old one
                verdicts["copy" if code in old_codes else "new"].append(f"{arch} {names[n]}")
        counts = ", ".join(f"{len(verdicts[v])} {v}" for v in ("same", "renamed", "merged", "copy", "CHANGED", "MISSING", "new")
                           if verdicts[v])
        print(f"{prefix}: {len(old)} functions before, {len(new)} after: {counts or 'none'}")
        for verdict in ("renamed", "merged", "copy", "CHANGED", "MISSING", "new"):
            for line in verdicts[verdict][: args.show]:
                print(f"  {verdict:8} {line}")
            if len(verdicts[verdict]) > args.show:
                print(f"  {verdict:8} … and {len(verdicts[verdict]) - args.show} more")
        bad += len(verdicts["CHANGED"]) + len(verdicts["MISSING"]) + len(verdicts["new"])
    print("every kernel's machine code is unchanged" if not bad else f"{bad} function(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
