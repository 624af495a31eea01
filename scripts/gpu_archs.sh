#!/usr/bin/env bash
# Prints the CUDA architectures of this machine's GPUs as CMake lists them ("90"; "86;90" for two kinds),
# for a build of those GPUs alone: the gpu preset reads them from FLASHSTAGES_GPU_ARCHS, and
# scripts/test.sh and run_all.sh set it from this script on a GPU:
#   FLASHSTAGES_GPU_ARCHS=$(scripts/gpu_archs.sh) cmake --preset gpu
# The compute capabilities come from `nvidia-smi --query-gpu=compute_cap` ("9.0" is 90). Exit 1, printing
# nothing on stdout and the reason on stderr, where there is no GPU to read, or where nvcc cannot compile
# for one of them (a GPU newer than the CUDA Toolkit): the release preset's PTX runs there instead.
#   usage: scripts/gpu_archs.sh
set -euo pipefail

caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null) || caps=""
archs=()
for cap in $caps; do
  if [[ ! $cap =~ ^([0-9]+)\.([0-9])$ ]]; then
    echo "gpu_archs: nvidia-smi gave '$cap' as a compute capability, not MAJOR.MINOR" >&2
    exit 1
  fi
  arch=${BASH_REMATCH[1]}${BASH_REMATCH[2]}
  [[ " ${archs[*]} " == *" $arch "* ]] || archs+=("$arch")
done
if [ ${#archs[@]} -eq 0 ]; then
  echo "gpu_archs: no NVIDIA GPU found (nvidia-smi --query-gpu=compute_cap listed none)" >&2
  exit 1
fi

nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
known=$("$nvcc" --list-gpu-arch 2>/dev/null) || known=""
for arch in "${archs[@]}"; do
  if [ -n "$known" ] && ! grep -qx "compute_$arch" <<<"$known"; then
    echo "gpu_archs: this nvcc cannot compile for sm_$arch (its --list-gpu-arch lacks compute_$arch): take the" \
         "release preset, whose PTX the driver compiles for this GPU, or a newer CUDA Toolkit" >&2
    exit 1
  fi
done
(IFS=';'; echo "${archs[*]}")
