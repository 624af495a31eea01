#!/usr/bin/env python3
"""Checks that every test CTest knows carries exactly one of the labels cpu and gpu: `ctest -L cpu`
is what runs without a GPU and `ctest -L gpu` what needs one, so a test with neither label runs in
neither (the fate of four doctest cases whose names held a comma: doctest_discover_tests split them
and their label was lost), and a test with both runs twice and is counted as both.

The labels come from `ctest --show-only=json-v1`, which lists every test with its properties: a doctest
case's from its suite (FS_CPU_TEST_CASE, FS_GPU_TEST_CASE), the scripts' from CMakeLists.txt. A test
binary not built yet stands in the list as <binary>_NOT_BUILT[-hash] (doctest's placeholder), which has no
case to label: it is named, not counted as a failure (ctest fails it when it runs).

    python3 scripts/check_labels.py [--ctest CTEST] BUILD_DIR      (exit 1, one line per test at fault)
    python3 scripts/check_labels.py --listing FILE                  (a saved --show-only=json-v1 listing)
"""
import argparse
import json
import re
import subprocess
import sys

LABELS = ("cpu", "gpu")
NOT_BUILT = re.compile(r"_NOT_BUILT(-[0-9a-f]+)?$")  # doctest's placeholder, suffixed in newer doctests


def labels_of(test):
    for prop in test.get("properties", []):
        if prop.get("name") == "LABELS":
            return list(prop.get("value", []))
    return []


def check(listing):
    """(problems, counts, not_built) of a --show-only=json-v1 listing: a line per test that carries
    neither or both labels; how many tests carry each; the placeholders of binaries not built."""
    problems, counts, not_built = [], {label: 0 for label in LABELS}, []
    for test in listing.get("tests", []):
        name = test.get("name", "")
        if NOT_BUILT.search(name):
            not_built.append(name)
            continue
        mine = [label for label in labels_of(test) if label in LABELS]
        if len(mine) != 1:
            problems.append(f"{name!r}: labels {labels_of(test)}, not exactly one of {' or '.join(LABELS)}")
        for label in mine:
            counts[label] += 1
    return problems, counts, not_built


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir", nargs="?", help="the build tree whose tests are checked")
    parser.add_argument("--ctest", default="ctest", help="the ctest to ask (default: ctest on PATH)")
    parser.add_argument("--listing", help="read a saved `ctest --show-only=json-v1` listing instead")
    args = parser.parse_args()
    if args.listing:
        with open(args.listing, encoding="utf-8") as f:
            listing = json.load(f)
    elif args.build_dir:
        shown = subprocess.run([args.ctest, "--test-dir", args.build_dir, "--show-only=json-v1"],
                               capture_output=True, text=True)
        if shown.returncode != 0:
            sys.exit(f"check_labels: {args.ctest} --show-only=json-v1 failed: {shown.stderr.strip()}")
        listing = json.loads(shown.stdout)
    else:
        parser.error("give the build tree, or --listing")
    problems, counts, not_built = check(listing)
    total = len(listing.get("tests", [])) - len(not_built)
    print(f"{total} tests: {counts['cpu']} labelled cpu, {counts['gpu']} labelled gpu")
    if not_built:
        print(f"not built, so not listed case by case: {', '.join(not_built)}")
    for problem in problems:
        print(problem)
    return 1 if problems or total == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
