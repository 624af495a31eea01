// flashstages · stage 04 · v4 — v3 with fragments read by ldmatrix from XOR-swizzled shared tiles.
//
// What changes from v3, all in how tiles go from shared memory to the tensor cores:
//   - ldmatrix.x4 hands a warp four 8×8 fragments in one instruction (v3 needed 4 loads for an A
//     fragment, 2 per B fragment of K and 4 per B fragment of V); .trans transposes V on the way, so the
//     B operand of P·V needs no element-by-element gathering.
//   - the tiles are unpadded [rows][D] with each row's 16-byte chunks XOR-swizzled by the row index:
//     the 8 rows one ldmatrix phase reads land in 8 different bank groups (the sketch is in
//     docs/04_flash_fwd.md), and cp.async's 16-byte writes stay aligned.
//   - every thread works out its copy and ldmatrix addresses once, before the key loop (TileCopy,
//     LaneOffsets), so the key loop does not recompute 64-bit addresses at every block: what changes
//     per block or step is a base address plus an immediate offset in the instruction.
// Why it is faster, measured (H100, fp16, D = 128, N = 8192, B = 2, H = 16; stage04.json), over v3:
//   non-causal <!-- value: [stage04/v4/fp16/D:128/N:8192/causal:0] | .1f -->301.4<!-- /value --> TFLOPS, <!-- value: [stage04/v4/fp16/D:128/N:8192/causal:0] / [stage04/v3/fp16/D:128/N:8192/causal:0] | .2f -->1.66<!-- /value -->× v3
//   causal     <!-- value: [stage04/v4/fp16/D:128/N:8192/causal:1] | .1f -->288.5<!-- /value --> TFLOPS, <!-- value: [stage04/v4/fp16/D:128/N:8192/causal:1] / [stage04/v3/fp16/D:128/N:8192/causal:1] | .2f -->1.61<!-- /value -->× v3
// Both halves cut the instructions that feed each mma, and gain more than v3's double buffer, which
// only hid the copies' latency (<!-- value: [stage04/v3/fp16/D:128/N:8192/causal:0] / [stage04/v2/fp16/D:128/N:8192/causal:0] | .2f -->1.15<!-- /value -->× over v2, non-causal); no profile of v3 is committed.
// The pipeline (K and V double-buffered with cp.async, one barrier per block) and the tile shape
// (Br = 64, four warps of 16 rows; Bc = 32 at D = 256) are v3's. The kernel takes the shape as a
// template parameter: v5 picks other shapes for it.
//
// Run: build/h100/stages/04_flash_fwd/stage04_flash_fwd --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 --version v4
#pragma once

#include <cstddef>
#include <type_traits>

#include "flash_common.cuh"

namespace fs::flash::v4 {

// kWarps warps of kMT 16-row tiles each (Br = 16·kMT·kWarps query rows), Bc = kBc keys per block, Q
// kept in registers or read from shared memory at every key block, and kMinBlocks blocks per SM
// promised to the compiler (__launch_bounds__), which caps registers at 64K / (kMinBlocks·threads).
template <int D, int kWarps_, int kMT_, int kBc_, bool kQInRegs_, int kMinBlocks_ = 1>
struct TileConfig {
  static constexpr int kHeadDim = D;
  static constexpr int kWarps = kWarps_;
  static constexpr int kMT = kMT_;
  static constexpr int kBr = kWarps * 16 * kMT;
  static constexpr int kBc = kBc_;
  static constexpr bool kQInRegs = kQInRegs_;
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr int kThreads = kWarps * 32;
  // sQ [Br][D] + sK, sV [2][Bc][D], 2-byte elements, no padding.
  static constexpr std::size_t kSmemBytes = std::size_t(kBr + 4 * kBc) * D * 2;
};

template <int D>
using Config = TileConfig<D, 4, 1, D == 256 ? 32 : 64, D <= 128>;

// Element (r, c) of a [rows][D] tile whose 16-byte chunks are XOR-swizzled: chunk c/8 of row r is
// stored at chunk (c/8) ^ f(r). With D >= 64 a row spans 8 or more chunks and f(r) = r % 8; at D = 32
// two rows share a 128-byte line and f(r) = (r/2) % 4. Either way the 8 rows that one ldmatrix phase
// reads at one logical chunk use 8 different 16-byte bank groups: no conflicts. f repeats every 8 rows.
template <int D>
__device__ __forceinline__ int swizzle_f(int r) {
  return D / 8 >= 8 ? r % 8 : r / 2 % 4;
}
template <int D>
__device__ __forceinline__ int swizzle(int r, int c) {
  return r * D + ((c / 8) ^ swizzle_f<D>(r)) * 8 + c % 8;
}

// One thread's share of copying [kRows][D] tiles with cp.async, worked out once before the key loop:
// the thread moves the 16-byte chunk at column c of rows r0, r0 + kStep, r0 + 2·kStep, ... Its global
// offsets are then fixed steps of kStep·D and its swizzled shared offsets repeat every kPeriod passes,
// so a tile costs one address add and one cp.async per chunk (index arithmetic recomputed in the loop
// used to cost as much as the copies themselves).
template <class T, int D, int kRows, int kThreads>
struct TileCopy {
  static constexpr int kChunks = D / 8;              // 16-byte chunks per row
  static constexpr int kStep = kThreads / kChunks;   // rows covered by one pass of all threads
  static constexpr int kPasses = kRows / kStep;
  static constexpr int kPeriod = kStep % 8 == 0 ? 1 : 8 / kStep;  // the swizzle repeats every 8 rows
  static_assert(kThreads % kChunks == 0 && kRows % kStep == 0 && (kStep % 8 == 0 || 8 % kStep == 0),
                "every pass must cover whole rows");
  int r0;              // first row
  int src;             // element offset of the first chunk in a [rows, D] matrix: r0·D + c
  int dst[kPeriod];    // swizzled offset of pass p's chunk, less p·kStep·D

  __device__ __forceinline__ TileCopy() {
    r0 = threadIdx.x / kChunks;
    const int c = threadIdx.x % kChunks * 8;
    src = r0 * D + c;
#pragma unroll
    for (int p = 0; p < kPeriod; ++p) dst[p] = swizzle<D>(r0 + p * kStep, c) - p * kStep * D;
  }

  // Issues the copies of rows 0 .. kRows-1 of `rows` (a [n, D] matrix from the tile's first row on)
  // into `tile`; only the first `valid` rows exist, the rest are zero-filled by cp.async itself. The
  // caller commits the group.
  __device__ __forceinline__ void copy(T* tile /* [kRows][D] */, const T* rows, int valid) const {
    const T* g = rows + src;
    if (valid >= kRows) {  // a whole tile: no bounds to test
#pragma unroll
      for (int i = 0; i < kPasses; ++i)
        cp_async_cg_16_zfill(tile + dst[i % kPeriod] + i * kStep * D, g + i * kStep * D, 16);
    } else {
#pragma unroll
      for (int i = 0; i < kPasses; ++i) {
        const bool in_range = r0 + i * kStep < valid;
        cp_async_cg_16_zfill(tile + dst[i % kPeriod] + i * kStep * D, in_range ? g + i * kStep * D : rows,
                             in_range ? 16 : 0);
      }
    }
  }
};

// Rows of a tile starting at row `first` of a sequence of n rows that exist, at most kRows.
template <int kRows>
__device__ __forceinline__ int rows_in(int64_t first, int64_t n) {
  return int(max(min(n - first, int64_t(kRows)), int64_t(0)));
}

// Where this lane's ldmatrix row lies in a swizzled tile, as byte offsets worked out once before the
// key loop. A lane hands ldmatrix the 16-byte row at chunk 2s + half of tile row `row` for the s-th
// 16-column step; since (2s + half) ^ f(row) = 8·(s/4) + ((2·(s%4)) ^ y) with y = half ^ f(row), four
// offsets serve every step (at(s) adds the 128·(s/4) bytes as a constant). The row is the lane's row
// within a 16-row group: group starts are multiples of 8, which f ignores, and become constant offsets.
template <int D>
struct LaneOffsets {
  uint32_t off[4];
  __device__ __forceinline__ LaneOffsets(int row, int half) {
    const int y = half ^ swizzle_f<D>(row);
#pragma unroll
    for (int m = 0; m < 4; ++m) off[m] = uint32_t(row * D * 2 + 16 * ((2 * m) ^ y));
  }
  __device__ __forceinline__ uint32_t at(int s) const { return off[s % 4] + 128 * (s / 4); }
};

// The three ways a warp reads a tile (mma.cuh gives the fragment layouts):
//   A of Q Kᵀ from sQ (16 rows × 16 columns): lanes 0–15 give rows 0–15 of the left 8 columns, lanes
//     16–31 the right 8: a[0..3] come out in the A order.
//   B of Q Kᵀ from sK (keys n0..n0+15 × 16 head dims): a row of sK is a column of B, no transpose;
//     lanes 0–7 / 8–15 give keys 0–7 at the left / right 8 dims (b[0], b[1] of key tile n0), lanes
//     16–31 keys 8–15 (b[2], b[3] of key tile n0 + 8).
//   B of P V from sV (keys k0..k0+15 × head dims n0..n0+15): sV rows are keys, B wants keys down a
//     column, so .trans; lanes 0–7 / 8–15 give keys 0–7 / 8–15 of the left 8 dims (b[0], b[1] of
//     column tile n0), lanes 16–31 those of the right 8 (b[2], b[3] of column tile n0 + 8).
template <int D>
__device__ __forceinline__ LaneOffsets<D> q_lane() {
  const int lane = threadIdx.x % 32;
  return LaneOffsets<D>(lane % 16, lane / 16);
}
template <int D>
__device__ __forceinline__ LaneOffsets<D> k_lane() {
  const int lane = threadIdx.x % 32;
  return LaneOffsets<D>(lane % 8 + lane / 16 * 8, lane / 8 % 2);
}
template <int D>
__device__ __forceinline__ LaneOffsets<D> v_lane() {
  const int lane = threadIdx.x % 32;
  return LaneOffsets<D>(lane % 8 + lane / 8 % 2 * 8, lane / 16);
}

// grid: B·H·ceil(Nq/Br) blocks of kThreads. Warp w owns query rows q0 + 16·kMT·w, 16·kMT of them.
template <class T, int D, class C = Config<D>>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks) flash_fwd_v4_kernel(const Args<T> a) {
  constexpr int kBr = C::kBr, kBc = C::kBc, kMT = C::kMT;
  constexpr int kNT = kBc / 8, kDT = D / 8, kKT = D / 16;  // 8-key tiles, 8-column tiles, 16-wide k steps
  extern __shared__ __align__(128) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);  // [Br][D]
  T* sK = sQ + kBr * D;                // [2][Bc][D]: stage j % 2 holds key block j
  T* sV = sK + 2 * kBc * D;            // [2][Bc][D]

  const Sequence s = locate(a, kBr, /*reverse_tiles=*/a.causal);
  const int warp = threadIdx.x / 32;
  const int64_t row0 = s.q0 + warp * 16 * kMT;  // this warp's first query row
  const int wr = warp * 16 * kMT;               // ... as a row of sQ
  const T* gK = a.k + s.k_row0 * D;             // [nk, D]
  const T* gV = a.v + s.k_row0 * D;             // [nk, D]
  const int64_t n_blocks = key_blocks(s, kBr, kBc, a.causal);  // blocks above the diagonal: never visited
  const int64_t n_full = unmasked_blocks(s, kBc, a.causal);

  // Key block j → stage j % 2, as one cp.async group.
  const TileCopy<T, D, kBc, C::kThreads> kv_copy;
  auto copy_kv = [&](int64_t j) {
    const int valid = rows_in<kBc>(j * kBc, s.nk);  // >= 1: block j holds at least one key
    kv_copy.copy(sK + j % 2 * kBc * D, gK + j * kBc * D, valid);
    kv_copy.copy(sV + j % 2 * kBc * D, gV + j * kBc * D, valid);
    cp_async_commit_group();
  };

  // A tile without real rows (padded batches) only writes zeros: nothing to load.
  if (const int valid = rows_in<kBr>(s.q0, s.nq); valid > 0)
    TileCopy<T, D, kBr, C::kThreads>().copy(sQ, a.q + (s.q_row0 + s.q0) * D, valid);
  cp_async_commit_group();
  if (n_blocks > 0) copy_kv(0);
  cp_async_wait_group<0>();
  __syncthreads();  // sQ (and key block 0) complete

  constexpr uint32_t kRowBytes = D * 2;
  const uint32_t q_base = smem_address(sQ) + wr * kRowBytes;  // this warp's rows of sQ
  const LaneOffsets<D> q_off = q_lane<D>(), k_off = k_lane<D>(), v_off = v_lane<D>();
  uint32_t rQ[kMT][kKT][4];  // Q as A fragments: [row tile][k step]
  if constexpr (C::kQInRegs)
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int kk = 0; kk < kKT; ++kk) ldmatrix_x4(rQ[mt][kk], q_base + mt * 16 * kRowBytes + q_off.at(kk));

  float rO[kMT][kDT][4] = {};
  float m[kMT][2], l[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) m[mt][0] = m[mt][1] = -INFINITY, l[mt][0] = l[mt][1] = 0.0f;

  // One key block; kMasked (a std::bool_constant) says whether any of its scores can be hidden.
  auto step = [&](int64_t j, auto kMasked) {
    const int64_t col0 = j * kBc;
    cp_async_wait_group<0>();  // this thread's copies of block j have landed
    __syncthreads();     // everyone's have, and every warp is done with block j - 1, whose stage is refilled next
    if (j + 1 < n_blocks) copy_kv(j + 1);  // in flight while block j is computed
    const uint32_t k_base = smem_address(sK + j % 2 * kBc * D), v_base = smem_address(sV + j % 2 * kBc * D);

    float rS[kMT][kNT][4] = {};  // S′ = Q K_jᵀ: [row tile][key tile][C fragment]
#pragma unroll
    for (int kk = 0; kk < kKT; ++kk) {
      uint32_t qa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        if constexpr (C::kQInRegs)
          for (int i = 0; i < 4; ++i) qa[mt][i] = rQ[mt][kk][i];
        else
          ldmatrix_x4(qa[mt], q_base + mt * 16 * kRowBytes + q_off.at(kk));
      }
#pragma unroll
      for (int nt = 0; nt < kNT; nt += 2) {
        uint32_t b[4];
        ldmatrix_x4(b, k_base + nt * 8 * kRowBytes + k_off.at(kk));  // keys 8·nt .. 8·nt + 15
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_m16n8k16<T>(rS[mt][nt], qa[mt], b[0], b[1]);
          mma_m16n8k16<T>(rS[mt][nt + 1], qa[mt], b[2], b[3]);
        }
      }
    }

    mask_scores<decltype(kMasked)::value>(rS, a.scale_log2 < 0, s, row0, col0, a.causal);
    online_softmax(rS, m, l, rO, fabsf(a.scale_log2));

#pragma unroll
    for (int kk = 0; kk < kNT / 2; ++kk) {
      uint32_t pa[kMT][4];  // P as A fragments of this 16-key step: [row tile]
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) p_fragment<T>(rS, mt, kk, pa[mt]);
#pragma unroll
      for (int dt = 0; dt < kDT; dt += 2) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, v_base + kk * 16 * kRowBytes + v_off.at(dt / 2));  // dims 8·dt .. 8·dt + 15
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_m16n8k16<T>(rO[mt][dt], pa[mt], b[0], b[1]);
          mma_m16n8k16<T>(rO[mt][dt + 1], pa[mt], b[2], b[3]);
        }
      }
    }
  };

  int64_t j = 0;
  for (; j < n_full; ++j) step(j, std::false_type{});
  for (; j < n_blocks; ++j) step(j, std::true_type{});

  write_o_lse(a, s, row0, rO, m, l);
}

}  // namespace fs::flash::v4
