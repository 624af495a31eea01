// flashstages · stage 04 · v5 — v4's kernel with the tile shape chosen per (head_dim, dtype, mask) by
// timing a few candidate shapes on the current GPU at first use, remembered for the process
//
// What changes from v4: nothing inside the kernel — v5 is v4's kernel at other settings, so this file
// only names them; the tuner is host code (v5.cu, over common/lib/tuner.h). v4 runs one shape (Br =
// 64, four warps of 16 rows) everywhere; the best shape depends on the head_dim and the GPU, through
// registers per thread (rO alone is D/2 fp32 registers per 16-row tile), shared memory per block,
// blocks per SM, and how often a K or V fragment read from shared memory is reused (once per 16-row
// tile a warp owns). So, like the autotuner the Triton tutorials lean on, v5 keeps a short list of
// shapes per head_dim (tile_shapes.cuh, v4's first) and the first time it meets a (GPU, head_dim,
// dtype, mask) times each on the benchmark grid's N = 8192 point and keeps the fastest
// (FLASHSTAGES_AUTOTUNE=0 takes v4's shape untimed, =verbose prints every timing).
// Why it is faster: the shape picked at D = 128 (Br = 128, four warps of 32 rows, Q re-read from
// shared memory) feeds each K and V fragment to two mma instead of one. (Numbers: the stage README's
// generated table and its v5 section.)
//
// Run: build/release/stages/04_flash_fwd/stage04_flash_fwd --version v5 --dtype fp16 --seq 8192 --dim 128
#pragma once

#include <type_traits>

#include "tile_shapes.cuh"
#include "v4_ldmatrix_swizzle.cuh"

namespace fs::flash::v5 {

// v5's candidate shape C runs v4's kernel, instantiated at C.
template <class T, class C>
constexpr auto kernel = v4::flash_fwd_v4_kernel<T, C::kHeadDim, C>;

// The first candidate of every head_dim is v4's own shape.
static_assert(std::is_same_v<FirstShape<32>, v4::Config<32>> && std::is_same_v<FirstShape<64>, v4::Config<64>> &&
                  std::is_same_v<FirstShape<128>, v4::Config<128>> &&
                  std::is_same_v<FirstShape<256>, v4::Config<256>>,
              "tile_shapes.cuh: each head_dim's list starts with v4's shape");

}  // namespace fs::flash::v5
