// flashstages · stage 04 · v4 — v3 with fragments read by ldmatrix from XOR-swizzled shared tiles
//
// What changes from v3, all in how tiles go from shared memory to the tensor cores: ldmatrix.x4 hands
// a warp four 8×8 fragments in one instruction (v3 needed 4 loads for an A fragment, 2 per B fragment
// of K, 4 per B fragment of V), and .trans transposes V on the way; the tiles are unpadded [rows][D]
// with each row's 16-byte chunks XOR-swizzled by the row index, so the 8 rows one ldmatrix phase reads
// land in 8 bank groups and cp.async's 16-byte writes stay aligned; every thread works out its copy
// and ldmatrix addresses once, before the key loop (tiles.cuh: TileCopy, LaneOffsets), so what changes
// per block or step is a base address plus an immediate offset in the instruction.
// Why it is faster: both halves cut the instructions that feed each mma (v3's double buffer only hid
// the copies' latency). (Numbers: the stage README's generated table.)
// The pipeline and the tile shape (Br = 64, four warps of 16 rows; Bc = 32 at D = 256) are v3's; the
// kernel takes the shape as a template parameter (tile_shapes.cuh's TileConfig): v5 picks others.
//
// Run: build/release/stages/04_flash_fwd/stage04_flash_fwd --version v4 --dtype fp16 --seq 8192 --dim 128
#pragma once

#include <cstddef>
#include <type_traits>

#include "fragments.cuh"
#include "tile_shapes.cuh"
#include "tiles.cuh"

namespace fs::flash::v4 {

// Br = 64 (four warps of 16 rows), Bc = 64 (32 at D = 256), Q in registers up to D = 128.
template <int D>
using Config = TileConfig<D, 4, 1, D == 256 ? 32 : 64, D <= 128>;

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
  const T* gK = a.k + s.k_at;                   // [nk, D], rows a.k_strides.row apart
  const T* gV = a.v + s.v_at;                   // [nk, D], rows a.v_strides.row apart
  const int64_t n_blocks = key_blocks(s, kBr, kBc, a.causal);  // blocks above the diagonal: never visited
  const int64_t n_full = unmasked_blocks(s, kBc, a.causal);

  // Key block j → stage j % 2, as one cp.async group.
  const TileCopy<T, D, kBc, C::kThreads> kv_copy;
  auto copy_kv = [&](int64_t j) {
    const int valid = rows_in<kBc>(j * kBc, s.nk);  // >= 1: block j holds at least one key
    kv_copy.copy(sK + j % 2 * kBc * D, gK + j * kBc * a.k_strides.row, a.k_strides.row, valid);
    kv_copy.copy(sV + j % 2 * kBc * D, gV + j * kBc * a.v_strides.row, a.v_strides.row, valid);
    cp_async_commit_group();
  };

  // A tile without real rows (padded batches) only writes zeros: nothing to load.
  if (const int valid = rows_in<kBr>(s.q0, s.nq); valid > 0)
    TileCopy<T, D, kBr, C::kThreads>().copy(sQ, a.q + s.q_at + s.q0 * a.q_strides.row, a.q_strides.row, valid);
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
