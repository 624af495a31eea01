#!/usr/bin/env bash
# Walks docs/architecture.md's "Adding a version" on stage 01, in a copy of the repository: a v2 made
# from v1 (its kernel file, its launch file, the registry, the VERSIONS list), then checks that
#   - the change touches stages/01_naive/ alone,
#   - the stage's kernels build, v2.cu among them (its C entry compiles against the generated declaration),
#   - the generated public header declares fs_naive_v2, and the registry lists the version,
#   - scripts/check_sources.py finds the stage in the ladder convention.
# Compiles stage 01's three small translation units for one architecture: about a minute, no GPU.
#   usage: scripts/test_add_version.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "test_add_version: FAILED: $*" >&2; exit 1; }

# The copy: the files git knows of (tracked, or new and not ignored), as a fresh repository.
copy=$work/repo
mkdir -p "$copy"
(cd "$root" && git ls-files -co --exclude-standard -z -- . ':!results' | tar --null -T - -cf -) | tar -xf - -C "$copy"
cd "$copy"
git init -q . && git add -A && git -c user.name=t -c user.email=t@t commit -qm base

stage=stages/01_naive
[ -f $stage/v1.cu ] && [ -f $stage/versions.cu ] && [ -f $stage/versions.h ] || fail "stage 01 is not in the ladder shape"
kernel=$(ls $stage/v1_*.cuh)

# 1. The kernel: v1's file copied, its namespace and kernels renamed, its header rewritten.
{
  echo "// flashstages · stage 01 · v2 — a copy of v1, made by scripts/test_add_version.sh"
  echo "//"
  echo "// What changes from v1: nothing; the test checks the steps of adding a version, not a kernel."
  echo "//"
  echo "// Run: build/release/stages/01_naive/stage01_naive --version v2"
  sed -n '/^#pragma once/,$p' "$kernel" | sed 's/naive::v1\b/naive::v2/g; s/_v1_kernel/_v2_kernel/g'
} >$stage/v2_copy.cuh
# 2. The launch: v1.cu copied, pointed at the new kernel, its names changed.
sed "s#$(basename "$kernel")#v2_copy.cuh#; s/naive::v1::/naive::v2::/g; s/_v1_kernel/_v2_kernel/g; s/kNaiveV1/kNaiveV2/g;
     s/fs_naive_v1/fs_naive_v2/g; s/\"v1\"/\"v2\"/g; s/Stage 01 v1/Stage 01 v2/g" $stage/v1.cu >$stage/v2.cu
grep -q 'fs_naive_v2' $stage/v2.cu && grep -q 'v2_copy.cuh' $stage/v2.cu || fail "v2.cu was not made from v1.cu"
# 3. The registry.
sed -i 's/extern const KernelDesc kNaiveV1;/extern const KernelDesc kNaiveV1, kNaiveV2;/' $stage/versions.h
sed -i 's/&kNaiveV1}/\&kNaiveV1, \&kNaiveV2}/; s/&kNaiveV1,$/\&kNaiveV1, \&kNaiveV2,/' $stage/versions.cu
grep -q 'kNaiveV2' $stage/versions.h && grep -q '&kNaiveV2' $stage/versions.cu || fail "the registry does not list v2"
# 4. The build.
sed -i 's/VERSIONS v1\b/VERSIONS v1 v2/' $stage/CMakeLists.txt
grep -q 'VERSIONS v1 v2' $stage/CMakeLists.txt || fail "CMakeLists.txt does not list v2"

changed=$(git status --porcelain | awk '{print $2}' | grep -v "^$stage/" || true)
[ -z "$changed" ] || fail "adding v2 touched files outside $stage: $changed"
echo "test_add_version: v2 added; every change is in $stage/:"
git status --porcelain | sed 's/^/  /'

# 5. Check: the lint, the build of the stage's kernels, the generated declaration.
python3 scripts/check_sources.py --stage $stage || fail "check_sources.py"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=80 \
  -DFLASHSTAGES_BUILD_TESTS=OFF -DFLASHSTAGES_BUILD_BENCHMARKS=OFF >configure.log 2>&1 ||
  { tail -20 configure.log; fail "configure"; }
grep -q 'FS_API int fs_naive_v2(const fs_attention_params\* params, void\* stream);' \
  build/generated/include/flashstages_entries.h || fail "flashstages_entries.h does not declare fs_naive_v2"
cmake --build build --target stage01_kernels >build.log 2>&1 || { tail -30 build.log; fail "stage 01's kernels did not build"; }
ls build/stages/01_naive/CMakeFiles/stage01_kernels.dir/v2.cu.o >/dev/null || fail "v2.cu was not compiled"
echo "test_add_version: stage 01's kernels build with v2, and flashstages_entries.h declares fs_naive_v2"
