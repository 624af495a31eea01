// Stage 05: dQ on the atomic path of the tensor-core versions. Every key block adds its share of each
// dQ_i it meets into an fp32 workspace (dq_accum, zeroed first) with red.global.add; then one pass
// scales and rounds it into dQ (dq_convert_kernel, common/device/bwd_preprocess.cuh). Here too the two ways of adding four
// neighbouring columns with one 16-byte reduction: v3's columns dealt out by the B operand's gather
// (DqWideRed: v3 to v5) and v6's columns exchanged between neighbouring lanes (DqPairedRed: v6 to v10).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/sm80.cuh"
#include "common/device/bwd_args.cuh"
#include "common/device/bwd_preprocess.cuh"

namespace fs::bwd {

// v3's reduction (v3 to v5). In dQ_i += dS K_j the columns of the product are columns of K_j, and the
// B operand gather (attn::lds_b_col_of_lane) lets each lane say which column of sK it brings. In the
// plain order lane g brings column 8dt + g for 8-column tile dt, so thread t holds columns 2t, 2t + 1
// of each tile. DqWideRed pairs the tiles 2p, 2p + 1 (16 columns of the warp's share, from 16p) and
// deals the columns out so that the two tiles' C entries of thread t are four neighbours:
//   lane g brings column 16p + ...   g =   0  1  2  3  4  5  6  7
//                         tile 2p          0  1  4  5  8  9 12 13
//                         tile 2p + 1      2  3  6  7 10 11 14 15
//   thread t then holds (c[0], c[1] of tile 2p, c[0], c[1] of tile 2p + 1) = row g,     columns 4t .. 4t + 3
//                       (c[2], c[3] of tile 2p, c[2], c[3] of tile 2p + 1) = row g + 8, columns 4t .. 4t + 3
// The gather stays free of bank conflicts (rows 2t of sK are 8 banks apart, the 8 lanes of a row read
// 4 distinct words of it) and costs the same loads as the plain order.
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

  // q[0..3] += x0..x3, 16-byte aligned: the architecture's widest reduction, chosen at compile time —
  //   sm_90 and later (H100, H200):  red.global.add.v4.f32, 16 bytes per instruction (PTX ISA 8.1)
  //   sm_80, sm_86, sm_89:           red.global.add.f32 four times, to the same four neighbours; no .v2
  //                                  or .v4 form of red exists for f32 before sm_90
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

// v6's reduction (v6 to v10): adds row g + 8h of a warp's dQ share (C fragments of its 8-column tiles,
// natural column order, as ldmatrix.trans brings K_j) to dq_row four neighbouring columns per
// reduction. The natural order leaves thread t with columns 2t, 2t + 1 of each 8-column tile; of 16
// columns 16p .. 16p + 15 (tiles 2p and 2p + 1), threads t and t ^ 1 hold 4⌊t/2⌋ + (0 1 | 2 3) of tile
// 2p and of tile 2p + 1, and each sends the pair the other one needs (__shfl_xor_sync by 1) and keeps
// its own:
//   even t = 2u:   its tile-2p pair + the odd lane's tile-2p pair    → columns 16p + 4u .. 16p + 4u + 3
//   odd  t = 2u+1: the even lane's tile-2p+1 pair + its own pair     → columns 16p + 8 + 4u .. + 3
// Every lane of the warp must call it (the exchange is a warp shuffle); dq_row is null for a row past
// Nq, whose lanes exchange but add nothing. One reduction per 16 columns, its four values chosen by the
// lane's parity (a reduction in each branch of the parity cost v8 7%: NOTES.md). Alignment: as
// DqWideRed's (a thread's four at 16p + 8·(t % 2) + 4⌊t/2⌋).
struct DqPairedRed {
  template <int kTiles>
  __device__ static void add(float* dq_row, const float (&rdQ)[kTiles][4], int h) {
    static_assert(kTiles % 2 == 0, "the 8-column tiles pair up into 16 columns");
    const int t = threadIdx.x % 4;
    const bool odd = t % 2;
#pragma unroll
    for (int p = 0; p < kTiles / 2; ++p) {
      const float* lo = &rdQ[2 * p][2 * h];      // tile 2p:     columns 16p + 2t, 2t + 1
      const float* hi = &rdQ[2 * p + 1][2 * h];  // tile 2p + 1: columns 16p + 8 + 2t, 8 + 2t + 1
      const float r0 = __shfl_xor_sync(0xffffffffu, odd ? lo[0] : hi[0], 1);
      const float r1 = __shfl_xor_sync(0xffffffffu, odd ? lo[1] : hi[1], 1);
      if (dq_row == nullptr) continue;
      float* q = dq_row + 16 * p + 8 * odd + 4 * (t / 2);
      DqWideRed::add4(q, odd ? r0 : lo[0], odd ? r1 : lo[1], odd ? hi[0] : r0, odd ? hi[1] : r1);
    }
  }
};

}  // namespace fs::bwd
