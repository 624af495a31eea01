// flashstages · stage 06 · v11 — v9's kernel with the block tile, the k-tile depth and the pipeline
// depth chosen per problem by timing a few candidates on the current GPU at first use (fp16, bf16)
//
// What changes from v9: nothing inside the kernel. This file lists the configurations v11 chooses
// among, and v11.cu is the tuner (host code), as stage 04's v5 is to v4. v9 runs one configuration
// everywhere (128×256 tiles of C, 8 warps, 32-deep k-tiles, 4 stages, one block per SM), where shared
// memory is busy most of the time the tensor pipe needs and a __syncthreads every second step stops
// all 8 warps of the SM's only block (NOTES.md: the budget). Which configuration wins depends on the
// shape (how many waves of tiles fill the SMs) and the GPU, so v11 times them (common/lib/tuner.h):
// the first call for a (GPU, dtype, transposes, M, N, K) runs each usable candidate on a problem of
// the caller's sizes and leading dimensions and remembers the fastest for the process.
// FLASHSTAGES_AUTOTUNE=0 takes v9's configuration without timing, =verbose prints every timing. Only
// 16-byte-aligned operands are tuned: narrower rows take v9 itself, as does a call inside a CUDA graph
// capture or one whose tuning problem does not fit in memory.
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp16 --version v11
//      FLASHSTAGES_AUTOTUNE=verbose build/h100/stages/06_tensorcore_gemm/stage06_bench --benchmark_filter='stage06/v11/'
#pragma once

#include "stages/06_tensorcore_gemm/v9_mma_sync.cuh"

namespace fs::gemm_v11 {

using gemm_v9::Tiles;

template <class... Ts>
struct TileList {};

// v9's configuration first (the untuned choice, v9 itself), then those that move the terms of its
// budget, each compiled in its own file (instances/v11_<tiles>.cu):
//   128×256, 64 deep, 3 stages:      one barrier per four steps instead of two (144 KB of shared memory)
//   256×128, 32 deep, 4 stages:      v9 turned on its side: the grouped order walks C differently
//   128×128, 4 warps, 2 blocks/SM:   a block waiting at its barrier leaves the other block's 4 warps
//                                    running (64 KB each, or 96 KB at 64 deep with 3 stages); more
//                                    copies per FLOP (16 KB per SM-step instead of 12)
using CandidateTiles = TileList<gemm_v9::V9Tiles, Tiles<128, 256, 64, 3>, Tiles<256, 128, 32, 4>,
                                Tiles<128, 128, 32, 4>, Tiles<128, 128, 64, 3>>;

}  // namespace fs::gemm_v11
