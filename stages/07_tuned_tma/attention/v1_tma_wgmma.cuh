// flashstages · stage 07 attention · v1 — FlashAttention-2's forward on Hopper's machinery: TMA loads into
// swizzled shared memory, counted on mbarriers, and both products on wgmma (fp16, bf16; D = 64, 128, 256).
//
// What changes from stage 04 (v4: mma.sync, ldmatrix, cp.async double buffering; the algorithm, the
// online softmax and the causal stage splitting are the same): one thread issues a TMA box per 64-column
// panel of a tile, an mbarrier per K/V stage says when it has landed, S = Q·K_jᵀ is one warpgroup's
// wgmma with Q and K_j read straight from shared memory through matrix descriptors, and O += P·V_j is
// wgmma with P from registers (the accumulator layout of S is the A-fragment layout).
// Why it is faster: wgmma's rate; mma.sync tops out well below the tensor peak on Hopper (ceilings.json).
// What it still lacks: everything is in order — the warpgroup waits for S before the softmax, for P·V
// before the next block, and the tensor cores idle during the softmax. v2 splits loads and math into
// warpgroups (producer/consumer), v3 overlaps a warpgroup's softmax with its own previous product.
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 --version v1
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/online_softmax.cuh"
#include "common/device/sm90.cuh"
#include "stages/07_tuned_tma/attention/tiles.cuh"

namespace fs::flash_tma::v1 {

using namespace fs::attn;

template <int D>
struct Config {
  static constexpr int kBr = 64;  // query rows per block: one m64 wgmma row, one warpgroup
  static constexpr int kBc = 64;  // keys per block
  static constexpr int kThreads = 128;
  static constexpr int kStages = 2;                         // K/V blocks in shared memory at once
  static constexpr int kQBytes = kBr * D * 2;               // sQ: [Br][D]
  static constexpr int kKVBytes = kBc * D * 2;              // sK or sV: [Bc][D]
  static constexpr int kStageBytes = 2 * kKVBytes;          // K_j then V_j
  // 1024-byte alignment slack first (the swizzle pattern starts on a 1024-byte boundary; dynamic
  // shared memory is promised 16), then sQ, the stages, and the barriers q_full, kv_full[kStages].
  static constexpr std::size_t kSmemBytes =
      1024 + std::size_t(kQBytes) + std::size_t(kStages) * kStageBytes + (1 + kStages) * sizeof(uint64_t);
  static_assert(D % 64 == 0, "whole 64-element panels");
};

// How the pieces work:
//  1. The tiles are copied by the Tensor Memory Accelerator (sm90::tma_load_4d): the hardware walks the
//     rows, writes the 128-byte swizzle and zero-fills what lies past a head's last row (the tensor maps
//     are 4D, [batch][heads][rows][D] with the tensors' own strides, so a key tile that runs past Nk
//     reads zeros, not the next head's keys, whatever the layout). Where a sequence ends inside its plane (padded and packed batches) TMA cannot stop there: the
//     warpgroup zeroes those rows of Q's tile and of the last V tile once they land (first_foreign_row,
//     tiles.cuh; the stage README, v1).
//  2. Thread 0 announces a stage's bytes with arrive.expect_tx, TMA counts them down, everyone waits for
//     the phase to flip: no cp.async groups and no __syncthreads to publish the copies.
//  3. S = Q·K_jᵀ is wgmma.mma_async m64n64k16 × D/16, A (Q) and B (K_j) from shared memory through
//     matrix descriptors. O += P·V_j is wgmma m64nDk16 × Bc/16 with A from registers
//     (sm90::wgmma_m64nNk16_rs): P is rounded in place (attn::a_from_c) and never touches shared memory.
//     V_j is read N-major (D contiguous).
//  4. The accumulators of a warpgroup's m64nN wgmma have stage 04's m16n8 layout (warp w owns rows
//     16w .. 16w+15), so the mask, the online softmax and the epilogue are stage 04's, shared:
//     attn::mask_scores, attn::online_softmax, attn::write_o_lse (common/device/online_softmax.cuh).
//
// Per key block j (stage st = j % 2, its (j / 2)-th use):
//   all:      wait kv_full[st], parity (j / 2) & 1                K_j, V_j have landed
//   all:      wgmma_fence; S = Q·K_jᵀ (D/16 wgmma); commit; wait  rS: 64 × Bc, fp32, in registers
//   all:      mask (diagonal and tail blocks only), online softmax (rescales rO), P → A fragments
//   all:      wgmma_fence; rO += P·V_j (Bc/16 wgmma); commit; wait
//   all:      __syncthreads                                         no warp reads stage st any more
//   thread 0: expect_tx(kv_full[st]); TMA K_{j+2}, V_{j+2} → stage st (if there is one)
//
// Block: one warpgroup (128 threads) per Br = 64 query rows of one (batch entry, head); warp w owns rows
// 16w .. 16w+15. Registers per thread: rS 32 (Bc = 64), rO D/2, P's A fragments 16. Shared memory:
// sQ [64][D], two stages of K_j [64][D] and V_j [64][D], each tile D/64 swizzled panels of 64 columns
// (tiles.cuh): 41, 81, 161 KiB at D = 64, 128, 256, plus 1 KiB of alignment slack and three
// mbarriers.
//
// grid: B·H·ceil(Nq / Br) blocks of one warpgroup (attn::locate: block x is query tile x % q_tiles of
// flat query head x / q_tiles). tmQ: Q as [B][H][Nq][D]; tmK, tmV: K and V as [B][KVH][Nk][D], each
// with its strides; boxes of 64 columns × 64 rows (launch.cuh).
template <class T, int D>
__global__ void __launch_bounds__(Config<D>::kThreads, 1)
    flash_tma_v1_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                        const __grid_constant__ CUtensorMap tmV, const Args<T> a) {
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kStages = C::kStages;
  constexpr int kNT = kBc / 8, kDT = D / 8;  // 8-column tiles of S and of O
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  unsigned char* sQ = smem;                 // [Br][D], swizzled panels
  unsigned char* sKV = smem + C::kQBytes;   // [kStages] × (K_j [Bc][D], V_j [Bc][D])
  uint64_t* q_full = reinterpret_cast<uint64_t*>(sKV + kStages * C::kStageBytes);
  uint64_t* kv_full = q_full + 1;           // [kStages]

  const Sequence s = locate(a, kBr, /*reverse_tiles=*/a.causal);
  // The sequence's planes in the maps and its first rows there (its K/V head's under grouped-query
  // attention; packed batches: the entry's offset in its head's rows).
  const PlaneRow q = q_plane_row(a, s), kv = kv_plane_row(a, s);
  const int tid = threadIdx.x, warp = tid / 32;
  const int64_t row0 = s.q0 + warp * 16;  // this warp's first query row
  const int64_t n_blocks = key_blocks(s, kBr, kBc, a.causal);
  const int64_t n_unmasked = unmasked_blocks(s, kBc, a.causal);
  // Rows of Q's tile and of the last V tile past the sequence's end, to be zeroed once they land
  // (variable-length batches only: tiles.cuh, first_foreign_row); kBr / kBc for none.
  const int q_from = n_blocks > 0 ? first_foreign_row(s.q0, kBr, s.nq, q.row, a.seq_q) : kBr;
  const int v_from = n_blocks > 0 ? first_foreign_row((n_blocks - 1) * kBc, kBc, s.nk, kv.row, a.seq_k) : kBc;

  // Thread 0 fills stage j % kStages with K_j and V_j: announce their bytes, then issue the boxes.
  auto load_kv = [&](int64_t j) {
    const int st = int(j % kStages);
    unsigned char* sK = sKV + st * C::kStageBytes;
    sm90::mbarrier_arrive_expect_tx(&kv_full[st], C::kStageBytes);
    load_tile<D>(sK, &tmK, kBc, kv.row + j * kBc, kv.plane, &kv_full[st]);
    load_tile<D>(sK + C::kKVBytes, &tmV, kBc, kv.row + j * kBc, kv.plane, &kv_full[st]);
  };

  if (tid == 0) {
    sm90::mbarrier_init(q_full, 1);  // thread 0's expect_tx arrival, then the bytes
    for (int st = 0; st < kStages; ++st) sm90::mbarrier_init(&kv_full[st], 1);
    sm90::fence_mbarrier_init();  // the inits are seen by the TMA unit that completes them
  }
  __syncthreads();  // every thread sees initialized barriers before it waits on one
  if (tid == 0 && n_blocks > 0) {
    sm90::mbarrier_arrive_expect_tx(q_full, C::kQBytes);
    load_tile<D>(sQ, &tmQ, kBr, q.row + s.q0, q.plane, q_full);
    for (int64_t j = 0; j < kStages && j < n_blocks; ++j) load_kv(j);
  }

  float rO[1][kDT][4] = {};  // O, unnormalized: the m64nD accumulator, as stage 04's [row tile][8 columns][4]
  float m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {};
  auto& acc_o = reinterpret_cast<float(&)[D / 2]>(rO);  // the same registers as wgmma sees them
  const uint32_t q_addr = sm90::smem_address(sQ), kv_addr = sm90::smem_address(sKV);
  if (n_blocks > 0) sm90::mbarrier_wait_parity(q_full, 0);  // sQ has landed (used once: phase 0)
  if (q_from < kBr) {
    zero_rows<D>(sQ, kBr, q_from, tid, C::kThreads);
    __syncthreads();  // every thread's zeros, fenced for the async proxy, before any wgmma reads sQ
  }

  for (int64_t j = 0; j < n_blocks; ++j) {
    const int st = int(j % kStages);
    sm90::mbarrier_wait_parity(&kv_full[st], uint32_t(j / kStages) & 1);  // K_j, V_j have landed
    const uint32_t k_addr = kv_addr + st * C::kStageBytes, v_addr = k_addr + C::kKVBytes;
    if (j == n_blocks - 1 && v_from < kBc) {
      zero_rows<D>(sKV + st * C::kStageBytes + C::kKVBytes, kBc, v_from, tid, C::kThreads);
      __syncthreads();  // the same for V_j's rows past the end, before P·V_j reads them
    }

    float rS[1][kNT][4];  // S′ = Q·K_jᵀ, raw scores: 64 × Bc over the warpgroup, 16 × Bc per warp
    auto& acc_s = reinterpret_cast<float(&)[kBc / 2]>(rS);
    sm90::wgmma_fence();  // rS and rO were last written by ordinary instructions (softmax, rescale)
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks)  // the first product overwrites rS: scale-d = 0
      sm90::wgmma_m64nNk16<kBc, T, false, false>(acc_s, k_major_descriptor(q_addr, kBr, 0, ks),
                                                 k_major_descriptor(k_addr, kBc, 0, ks), ks > 0);
    sm90::wgmma_commit_group();
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(acc_s);  // no read of rS above the wait

    const int64_t col0 = j * kBc;
    if (j < n_unmasked)
      mask_scores</*kMasked=*/false>(rS, a.scale_log2 < 0, s, row0, col0, a.causal);
    else
      mask_scores</*kMasked=*/true>(rS, a.scale_log2 < 0, s, row0, col0, a.causal);
    online_softmax(rS, m, l, rO, fabsf(a.scale_log2));

    // P as the A operand, all Bc/16 steps at once: the registers must hold still until the wgmma that
    // read them has completed (the wait below), so they are live, and fenced, through it.
    uint32_t pa[kBc / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) a_from_c<T>(pa[kk], rS[0][2 * kk], rS[0][2 * kk + 1]);
    sm90::wgmma_fence();  // the softmax's rescaling of rO, and pa, written before wgmma reads them
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk)
      sm90::wgmma_m64nNk16_rs<D, T, /*kTransB=*/true>(acc_o, pa[kk], v_descriptor(v_addr, kBc, kk), true);
    sm90::wgmma_commit_group();
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(acc_o);
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) sm90::wgmma_fence_operand(pa[kk]);  // pa live until here

    // Each warp's wait covers its own share of the products: all four must be done with stage st
    // before thread 0 lets TMA overwrite it.
    __syncthreads();
    if (tid == 0 && j + kStages < n_blocks) load_kv(j + kStages);
  }

  write_o_lse(a, s, row0, rO, m, l);
}

}  // namespace fs::flash_tma::v1
