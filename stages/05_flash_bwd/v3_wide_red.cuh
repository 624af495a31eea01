// flashstages · stage 05 · v3 — v2 with the dQ reductions issued wide: each thread adds four
// neighbouring columns of dQ_i with one red.global.add.v4.f32 instead of four red.global.add.f32.
//
// What changes from v2: only how the K/V kernel's share of dQ_i leaves the block (v2::dkv_block runs
// the same loop with a different DqAdd). Everything else is v2's: tiles, the five products, the causal
// splitting, the fp32 workspace and its rounding, and with `deterministic` the whole of v2's path (its
// K/V kernel without dQ, then its Q-outer dQ kernel), unchanged.
// How four neighbouring columns end up in one thread, with no shuffle and no trip through shared
// memory: in dQ_i += dS K_j the columns of the product are columns of K_j, and the B operand gather
// (attn::lds_b_col_of_lane) lets each lane say which column of sK it brings. In v2 lane g brings
// column 8dt + g for 8-column tile dt, so thread t holds columns 2t, 2t + 1 of each tile. v3 pairs the
// tiles 2p, 2p + 1 (16 columns of the warp's share, from 16p) and deals the columns out so that the
// two tiles' C entries of thread t are four neighbours:
//   lane g brings column 16p + ...   g =   0  1  2  3  4  5  6  7
//                         tile 2p          0  1  4  5  8  9 12 13
//                         tile 2p + 1      2  3  6  7 10 11 14 15
//   thread t then holds (c[0], c[1] of tile 2p, c[0], c[1] of tile 2p + 1) = row g,     columns 4t .. 4t + 3
//                       (c[2], c[3] of tile 2p, c[2], c[3] of tile 2p + 1) = row g + 8, columns 4t .. 4t + 3
// The gather stays free of bank conflicts (rows 2t of sK are 8 banks apart, the 8 lanes of a row read
// 4 distinct words of it, as in v2) and costs the same loads.
// Which path each architecture takes (chosen at compile time with __CUDA_ARCH__):
//   sm_90 and later (H100, H200):  red.global.add.v4.f32, 16 bytes per instruction (PTX ISA 8.1)
//   sm_80, sm_86, sm_89:           red.global.add.f32 four times, to the same four neighbours: v2's
//                                  count; no .v2 or .v4 form of red exists for f32 before sm_90
// Why it should be faster (H100, D = 128, N = 8192, B·N = 16384, H = 16, non-causal): v2 issues one
// 4-byte RED per dQ element per key block that meets it, (N / Bc) · N · D = 128 · 8192 · 128 per head,
// 4.3·10⁹ in all (16 GiB into L2), and runs at 111 TFLOPS with them against 137 with v2's
// deterministic pass, which skips them at the price of 40% more mma work: the reductions cost more
// than a whole recomputation. v3 issues a quarter of them, 1.1·10⁹, each 16 bytes; a warp's
// instruction covers 16 whole 32-byte sectors (8 rows × 2 sectors) where v2's covered 8 half-sectors
// (4 of each row's 8 floats). The bytes that reach L2 are the same.
// ptxas -v (CUDA 13.0, sm_90), no spills: 241 registers at D = 64, 249 at D = 128 (v2's K/V kernel with
// the atomic dQ: 235 and 254): the four values of a reduction are registers the fragments already hold.
// Before the loop over a group's heads both were 252 and 255; the sm_80 path then took 238 and 251.
// Result (H100, fp16, N = 8192, non-causal, measured before the loop over a group's heads; stage05.json):
//   <!-- value: [stage05/v3/fp16/D:128/N:8192/causal:0] | .0f -->164<!-- /value --> TFLOPS at D = 128,
//   <!-- value: [stage05/v3/fp16/D:128/N:8192/causal:0] / [stage05/v2/fp16/D:128/N:8192/causal:0] | .2f -->1.48<!-- /value -->× v2's atomic dQ and <!-- value: [stage05/v3/fp16/D:128/N:8192/causal:0] / [stage05/v2_deterministic/fp16/D:128/N:8192/causal:0] | .2f -->1.18<!-- /value -->× its deterministic pass;
//   <!-- value: [stage05/v3/fp16/D:128/N:8192/causal:0] / [sdpa_flash_bwd/fp16/D:128/N:8192/causal:0] | .2f -->0.56<!-- /value -->× SDPA flash (FA2).
//
// Run: build/h100/stages/05_flash_bwd/stage05_flash_bwd --dtype fp16 --seq 8192 --dim 128 [--causal] --version v3
#pragma once

#include <cuda_runtime.h>

#include "args.cuh"
#include "common/device/sm80.cuh"
#include "v2_mma.cuh"

namespace fs::bwd::v3 {

// v3's DqAdd for v2::dkv_block (v2::DqScalarRed says what the two members mean).
struct DqWideRed {
  // The column of K_j (from the warp's first dQ column) that lane g brings for tile dt: the table above.
  __device__ static int column(int dt, int g) { return 16 * (dt / 2) + 2 * (dt % 2) + 4 * (g / 2) + g % 2; }

  // Row g + 8h of the thread's fragments; dq_row is that row of dq_accum at the share's first column.
  // Aligned to 16 bytes: the workspace is (cudaMallocAsync), a row is D floats, the share starts at a
  // multiple of 64 columns, and the thread's four at 16p + 4t.
  template <int kTiles>
  __device__ static void add(float* dq_row, const float (&rdQ)[kTiles][4], int h) {
    static_assert(kTiles % 2 == 0, "the 8-column tiles pair up into 16 columns");
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int p = 0; p < kTiles / 2; ++p)
      add4(dq_row + 16 * p + 4 * t, rdQ[2 * p][2 * h], rdQ[2 * p][2 * h + 1], rdQ[2 * p + 1][2 * h],
           rdQ[2 * p + 1][2 * h + 1]);
  }

  // q[0..3] += x0..x3, 16-byte aligned: the architecture's widest reduction (the table above).
  __device__ static void add4(float* q, float x0, float x1, float x2, float x3) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    sm80::red_global_add_v4_f32(q, x0, x1, x2, x3);
#else
    sm80::red_global_add_f32(q, x0);
    sm80::red_global_add_f32(q + 1, x1);
    sm80::red_global_add_f32(q + 2, x2);
    sm80::red_global_add_f32(q + 3, x3);
#endif
  }
};

// grid: B·KVH·ceil(Nk/Bc) blocks of v2::Config<D>::kThreads — v2's K/V kernel with the atomic dQ, its
// share added wide. (The deterministic path runs v2's kernels.)
template <class T, int D, bool kVarlen>
__global__ void __launch_bounds__(v2::Config<D>::kThreads) flash_bwd_v3_dkv_kernel(const Args<T> a) {
  v2::dkv_block<T, D, kVarlen, DqWideRed>(a);
}

}  // namespace fs::bwd::v3
