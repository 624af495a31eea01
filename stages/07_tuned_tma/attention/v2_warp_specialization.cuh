// flashstages · stage 07 attention · v2 — warp specialization: a producer warpgroup streams K and V, two
// consumer warpgroups compute (fp16, bf16; D = 64, 128, 256).
//
// What changes from v1 (one warpgroup per 64 query rows that loads, waits, multiplies and meets at a
// __syncthreads before thread 0 refills a stage): each warpgroup has one job. Warpgroup 0 only loads
// (one thread issues every TMA load, up to kStages blocks ahead; producer.cuh); warpgroups 1 and 2 each
// own 64 rows of a Br = 128 tile and only compute, sharing every K_j, V_j tile. Three mbarriers per
// stage replace the __syncthreads (full_k, full_v, empty; block.cuh), setmaxnreg moves the registers to
// the consumers (24 for the producer, 240 for each consumer), and the key blocks grow where those
// registers allow (Bc = 128 at D ≤ 128, 192 at D = 64 for long keys, 64 at D = 256).
// Why it is faster: the loads run ahead of the math instead of between its steps, one load from L2
// feeds 128 rows, and with two consumers on an SM one's softmax often runs under the other's products.
// What it still lacks: nothing arranges that overlap (v4's pingpong does), and a consumer's own softmax
// still waits for its products (v3 overlaps them). Slower than v1 on small grids, with nothing to hide a
// prologue.
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 --version v2
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/online_softmax.cuh"
#include "common/device/sm90.cuh"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/producer.cuh"
#include "stages/07_tuned_tma/attention/tiles.cuh"

namespace fs::flash_tma::v2 {

using namespace fs::attn;
// The block (three warpgroups, registers, tile shapes, shared memory, barriers: block.cuh) and the
// producer (producer.cuh) are ws:: — the later versions keep them and change the consumers.
using ws::Config;
using ws::kWarpgroup;
using ws::Smem;

// The protocol, per key block j (stage st = j % kStages, use u = j / kStages):
//   prologue  thread 0:  init q_full (1), full_k[st], full_v[st] (1), empty[st] (8); fence; __syncthreads
//             producer:  setmaxnreg.dec 24;  consumers: setmaxnreg.inc 240
//   producer  thread 0:  expect_tx(q_full); TMA Q [128][D]                                  (once)
//                        (u ≥ 1) wait empty[st], parity (u − 1) & 1     block j − kStages released
//                        expect_tx(full_k[st]); TMA K_j;  expect_tx(full_v[st]); TMA V_j
//   consumer  all 128:   wait q_full, parity 0                                              (once)
//                        wait full_k[st], parity u & 1; S = Q_c·K_jᵀ (wgmma); wait
//                        mask, online softmax, P → A fragments
//                        wait full_v[st], parity u & 1; O += P·V_j (wgmma, A from registers); wait
//                        lane 0 of each warp: arrive empty[st]
//   after     consumers: O / l and LSE to global memory, from registers
// Variable lengths: Q's tile and the last V tile, where they hold rows past the sequence's end inside
// the plane, land on q_landed / v_landed instead; warp 0 of the producer zeroes those rows and then
// completes q_full / full_v[st] with one plain arrival (ws::produce), so the consumers do not change.
// A consumer whose 64 rows need fewer key blocks than the tile's other half (causal: the first half
// stops one block earlier; a half with no real row needs none) skips the products of the blocks past
// its own, and still releases each of them once it has landed, so the producer can refill its stage.
//
// Block: three warpgroups (384 threads) per Br = 128 query rows of one (batch entry, head): warpgroup
// 0 the producer, warpgroup c + 1 the consumer of rows 64c .. 64c + 63, its warp w rows 16w .. 16w+15
// of those. Shared memory: sQ [128][D], kStages × (K_j [Bc][D], V_j [Bc][D]), every tile D/64 panels of
// rows × 128 bytes, 128-byte swizzled: 145 (209 with Bc = 192), 225, 193 KiB at D = 64, 128, 256 (4, 3,
// 2 stages), plus the alignment slack and the barriers.
//
// grid: B·H·ceil(Nq / Br) blocks of three warpgroups (attn::locate, Br = 128). tmQ: Q as [B][H][Nq][D]
// with boxes of 64 columns × 128 rows; tmK, tmV: K and V as [B][KVH][Nk][D], boxes of 64 × Bc (launch.cuh).
template <class T, class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v2_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                        const __grid_constant__ CUtensorMap tmV, const Args<T> a) {
  constexpr int D = C::kD, kBr = C::kBr, kBc = C::kBc;
  constexpr int kNT = kBc / 8, kDT = D / 8;  // 8-column tiles of S and of O
  extern __shared__ unsigned char smem_raw[];
  const Smem<C> sm(smem_raw);

  const Sequence s = locate(a, kBr, /*reverse_tiles=*/a.causal);
  const int tid = threadIdx.x, wg = ws::warpgroup();
  const int64_t n_blocks = key_blocks(s, kBr, kBc, a.causal);  // what the tile's 128 rows need

  if (tid == 0) sm.init_barriers();
  // Every thread sees initialized barriers before it waits on one. The only block-wide barrier: from
  // here on the warpgroups meet only through the mbarriers.
  __syncthreads();

  if (wg == 0) {
    ws::produce(sm, &tmQ, &tmK, &tmV, a, s, n_blocks);
    return;
  }

  // A consumer: rows 64c .. 64c + 63 of the tile, warp w of it rows 16w .. 16w + 15 of those.
  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  const int c = wg - 1, warp = tid / 32 % 4;
  Sequence mine = s;  // this warpgroup's 64 rows as a tile of their own: its key blocks and masks
  mine.q0 = s.q0 + 64 * c;
  const int64_t row0 = mine.q0 + warp * 16;
  const int64_t n_mine = key_blocks(mine, 64, kBc, a.causal);  // <= n_blocks: the first ones
  const int64_t n_unmasked = unmasked_blocks(mine, kBc, a.causal);

  float rO[1][kDT][4] = {};  // O, unnormalized: the m64nD accumulator, as stage 04's [row tile][8 columns][4]
  float m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {};
  auto& acc_o = reinterpret_cast<float(&)[D / 2]>(rO);  // the same registers as wgmma sees them
  const uint32_t q_addr = sm90::smem_address(sm.sQ);
  if (n_mine > 0) sm90::mbarrier_wait_parity(sm.q_full, 0);  // sQ has landed (used once: phase 0)

  for (int64_t j = 0; j < n_mine; ++j) {
    const int st = Smem<C>::stage_of(j);
    const uint32_t parity = Smem<C>::parity_of(j);
    const uint32_t k_addr = sm90::smem_address(sm.k_tile(j)), v_addr = k_addr + C::kKVBytes;

    sm90::mbarrier_wait_parity(&sm.full_k[st], parity);  // K_j has landed
    float rS[1][kNT][4];  // S′ = Q_c·K_jᵀ, raw scores: 64 × Bc over the warpgroup, 16 × Bc per warp
    auto& acc_s = reinterpret_cast<float(&)[kBc / 2]>(rS);
    sm90::wgmma_fence();  // rS and rO were last written by ordinary instructions (softmax, rescale)
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks)  // the first product overwrites rS: scale-d = 0
      sm90::wgmma_m64nNk16<kBc, T, false, false>(acc_s, k_major_descriptor(q_addr, kBr, 64 * c, ks),
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

    // P as the A operand, all Bc/16 steps at once, live (and fenced) until the wgmma that reads them
    // has completed.
    uint32_t pa[kBc / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) a_from_c<T>(pa[kk], rS[0][2 * kk], rS[0][2 * kk + 1]);
    sm90::mbarrier_wait_parity(&sm.full_v[st], parity);  // V_j has landed
    sm90::wgmma_fence();  // the softmax's rescaling of rO, and pa, written before wgmma reads them
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk)
      sm90::wgmma_m64nNk16_rs<D, T, /*kTransB=*/true>(acc_o, pa[kk], v_descriptor(v_addr, kBc, kk), true);
    sm90::wgmma_commit_group();
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(acc_o);
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) sm90::wgmma_fence_operand(pa[kk]);  // pa live until here

    sm.release(j);  // this warp's share of the products that read stage st has completed
  }
  // The blocks the tile loads past this warpgroup's own, released without being read.
  for (int64_t j = n_mine; j < n_blocks; ++j) sm.release_skipped(j);

  write_o_lse(a, s, row0, rO, m, l);
}

}  // namespace fs::flash_tma::v2
