// flashstages · stage 07 attention · v2 — warp specialization: a producer warpgroup streams K and V,
// two consumer warpgroups compute (fp16, bf16; D = 64, 128, 256).
//
// What changes from v1 (one warpgroup per 64 query rows that loads, waits, multiplies and meets at a
// __syncthreads before thread 0 refills a stage):
//  1. Each warpgroup has one job. Warpgroup 0, the producer, only loads: one of its threads issues
//     every TMA load (Q once, then K_j and V_j block after block), the others leave at once.
//     Warpgroups 1 and 2, the consumers, each own 64 query rows of a Br = 128 tile and only compute.
//     The two share every K_j and V_j tile: one load from L2 feeds 128 rows instead of 64.
//  2. Three mbarriers per stage replace the __syncthreads: full_k[st] and full_v[st] (the producer's
//     expect_tx and TMA's bytes: a consumer starts S = Q·K_jᵀ as soon as K_j has landed, V_j may still
//     be on its way) and empty[st] (one arrival per consumer warp once its P·V_j has retired; the
//     producer waits for it before it refills the stage). The producer runs up to kStages blocks ahead.
//  3. The registers follow the work (setmaxnreg): the block is launched with 168 per thread (65536 /
//     384); the producer keeps 24, each consumer takes 240 — room for a 64 × 128 S, its P fragments
//     and a 64 × D O (D = 256: 128 registers of O alone).
//  4. Larger key blocks where the registers allow: Bc = 128 at D ≤ 128 (S is m64n128, half as many
//     softmax passes and barrier round trips per key as Bc = 64), Bc = 64 at D = 256.
// With two consumer warpgroups on an SM their phases drift apart, so one's softmax often runs while
// the other's products occupy the tensor cores; nothing arranges it yet (v4's pingpong does).
// Measured (H100, N = 8192, fp16, non-causal; stage07_attention.json, one run with v1, stage 04's v5, SDPA):
//   D = 128: <!-- value: [stage07/attention/v2/fp16/D:128/N:8192/causal:0] | .0f -->505<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v2/fp16/D:128/N:8192/causal:0] / [stage07/attention/v1/fp16/D:128/N:8192/causal:0] | .2f -->1.17<!-- /value -->× v1, <!-- value: [stage07/attention/v2/fp16/D:128/N:8192/causal:0] / [sdpa_cudnn/fp16/D:128/N:8192/causal:0@stage07_attention.json] | .2f -->0.87<!-- /value -->× cuDNN
//   D = 64:  <!-- value: [stage07/attention/v2/fp16/D:64/N:8192/causal:0] | .0f -->388<!-- /value --> TFLOPS, <!-- value: [stage07/attention/v2/fp16/D:64/N:8192/causal:0] / [stage07/attention/v1/fp16/D:64/N:8192/causal:0] | .2f -->1.06<!-- /value -->× v1, <!-- value: [stage07/attention/v2/fp16/D:64/N:8192/causal:0] / [sdpa_cudnn/fp16/D:64/N:8192/causal:0@stage07_attention.json] | .2f -->0.88<!-- /value -->× cuDNN
// Slower than v1 on small grids (N = 512: half the blocks, one per SM, nothing to hide a prologue).
//
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
// A consumer whose 64 rows need fewer key blocks than the tile's other half (causal: the first half
// stops one block earlier; a half with no real row needs none) skips the products of the blocks past
// its own, and still releases each of them once it has landed, so the producer can refill its stage.
//
// Block: three warpgroups (384 threads) per Br = 128 query rows of one (batch entry, head): warpgroup
// 0 the producer, warpgroup c + 1 the consumer of rows 64c .. 64c + 63, its warp w rows 16w .. 16w+15
// of those. Shared memory: sQ [128][D], kStages × (K_j [Bc][D], V_j [Bc][D]), every tile D/64 panels of
// rows × 128 bytes, 128-byte swizzled: 145, 225, 193 KiB at D = 64, 128, 256 (4, 3, 2 stages), plus
// the alignment slack and the barriers.
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
#include "v1_tma_wgmma.cuh"

namespace fs::flash_tma::v2 {

using namespace fs::attn;
using v1::load_tile;
using v1::v_descriptor;

constexpr int kWarpgroup = 128;
constexpr int kConsumers = 2;                            // consumer warpgroups, 64 query rows each
constexpr int kThreads = (1 + kConsumers) * kWarpgroup;  // the producer warpgroup first: 384
constexpr int kConsumerWarps = kConsumers * kWarpgroup / 32;  // 8: the arrivals that release a stage

// __launch_bounds__(384, 1) caps the kernel at 168 registers per thread (65536 / 384, in steps of 8);
// the producer's .dec returns 128 × (168 − 24), the consumers' .inc takes 256 × (240 − 168): the same
// 18432, so the .inc never waits for registers the block does not have.
constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
constexpr int kProducerRegs = 24, kConsumerRegs = 240;
static_assert(kWarpgroup * kProducerRegs + kConsumers * kWarpgroup * kConsumerRegs <= kThreads * kLaunchRegs,
              "the consumers take no more registers than the producer gives back");

template <int D>
struct Config {
  static constexpr int kBr = kConsumers * 64;     // query rows per block: 64 per consumer warpgroup
  static constexpr int kBc = D <= 128 ? 128 : 64;  // keys per block (S: 64 × Bc per consumer)
  static constexpr int kStages = D == 64 ? 4 : D == 128 ? 3 : 2;
  static constexpr int kThreads = v2::kThreads;
  static constexpr int kQBytes = kBr * D * 2;       // sQ: [Br][D]
  static constexpr int kKVBytes = kBc * D * 2;      // sK or sV: [Bc][D]
  static constexpr int kStageBytes = 2 * kKVBytes;  // K_j then V_j
  // 1024-byte alignment slack, sQ, the stages, then q_full and full_k, full_v, empty [kStages].
  static constexpr std::size_t kSmemBytes =
      1024 + std::size_t(kQBytes) + std::size_t(kStages) * kStageBytes + (1 + 3 * kStages) * sizeof(uint64_t);
  static_assert(D % 64 == 0, "whole 64-element panels");
  static_assert(kSmemBytes <= 227 * 1024, "what one block may have on an H100");
};

// The descriptor of the 16-column (k) slice ks of rows first .. first + 63 of a K-major tile whose
// panels are `rows` rows high (v1's k_major_descriptor with a row offset: consumer c reads rows 64c ..
// of sQ): 128 bytes per row, whole atoms of 8 rows, so the offset keeps the swizzle's phase.
__device__ __forceinline__ uint64_t k_major_descriptor(uint32_t tile, int rows, int first, int ks) {
  return sm90::matrix_descriptor_sw128(tile + ks / 4 * rows * 128 + first * 128 + ks % 4 * 32, 16, 1024);
}

// grid: B·H·ceil(Nq / Br) blocks of three warpgroups (attn::locate, Br = 128). tmQ: Q as [B·H][Nq][D]
// with boxes of 64 columns × 128 rows; tmK, tmV: K and V as [B·KVH][Nk][D], boxes of 64 × Bc (launch.cuh).
template <class T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    flash_tma_v2_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                        const __grid_constant__ CUtensorMap tmV, const Args<T> a) {
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kStages = C::kStages;
  constexpr int kNT = kBc / 8, kDT = D / 8;  // 8-column tiles of S and of O
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  unsigned char* sQ = smem;                // [Br][D], swizzled panels
  unsigned char* sKV = smem + C::kQBytes;  // [kStages] × (K_j [Bc][D], V_j [Bc][D])
  uint64_t* q_full = reinterpret_cast<uint64_t*>(sKV + kStages * C::kStageBytes);
  uint64_t* full_k = q_full + 1;           // [kStages]
  uint64_t* full_v = full_k + kStages;     // [kStages]
  uint64_t* empty = full_v + kStages;      // [kStages]

  const Sequence s = locate(a, kBr, false);
  const int tid = threadIdx.x, wg = tid / kWarpgroup;
  const int64_t n_blocks = key_blocks(s, kBr, kBc, a.causal);  // what the tile's 128 rows need

  // Each barrier counts the uses of its stage, one phase per use u (key block j = kStages·u + st), so
  // phase u has parity u & 1. A parity names its phase only while the barrier cannot run two phases
  // ahead of its waiter, and it cannot: full_*[st] phase u + 1 needs the refill that waits for
  // empty[st] phase u, which needs every consumer warp done with use u, and the other way round.
  if (tid == 0) {
    sm90::mbarrier_init(q_full, 1);  // the producer's expect_tx arrival, then the bytes
    for (int st = 0; st < kStages; ++st) {
      sm90::mbarrier_init(&full_k[st], 1);
      sm90::mbarrier_init(&full_v[st], 1);
      sm90::mbarrier_init(&empty[st], kConsumerWarps);  // one arrival per consumer warp
    }
    sm90::fence_mbarrier_init();  // the inits are seen by the TMA unit that completes them
  }
  // Every thread sees initialized barriers before it waits on one. The only block-wide barrier: from
  // here on the warpgroups meet only through the mbarriers.
  __syncthreads();

  if (wg == 0) {
    // The producer: the whole warpgroup gives its registers back (a warpgroup instruction), then one
    // thread issues the loads and the others are done.
    sm90::setmaxnreg_dec<kProducerRegs>();
    if (tid == 0 && n_blocks > 0) {
      const int64_t q_plane = blockIdx.x / a.q_tiles, kv_plane = q_plane / a.group;
      sm90::mbarrier_arrive_expect_tx(q_full, C::kQBytes);
      load_tile<D>(sQ, &tmQ, kBr, s.q0, q_plane, q_full);
      for (int64_t j = 0; j < n_blocks; ++j) {
        const int st = int(j % kStages);
        const int64_t u = j / kStages;
        // Use u of the stage needs use u − 1 released by all 8 consumer warps. The wait's acquire,
        // after their wgmma_wait_group and arrivals, orders the tensor cores' reads of the stage
        // before the TMA writes issued below.
        if (u > 0) sm90::mbarrier_wait_parity(&empty[st], uint32_t(u - 1) & 1);
        unsigned char* sK = sKV + st * C::kStageBytes;
        sm90::mbarrier_arrive_expect_tx(&full_k[st], C::kKVBytes);
        load_tile<D>(sK, &tmK, kBc, j * kBc, kv_plane, &full_k[st]);
        sm90::mbarrier_arrive_expect_tx(&full_v[st], C::kKVBytes);
        load_tile<D>(sK + C::kKVBytes, &tmV, kBc, j * kBc, kv_plane, &full_v[st]);
      }
    }
    // No producer thread touches shared memory or a barrier again: leaving is safe, the loads in flight
    // complete on their barriers whether or not the issuing thread still runs, and the consumers wait
    // for every one of them before they leave.
    return;
  }

  // A consumer: rows 64c .. 64c + 63 of the tile, warp w of it rows 16w .. 16w + 15 of those.
  sm90::setmaxnreg_inc<kConsumerRegs>();
  const int c = wg - 1, warp = tid / 32 % 4;
  Sequence mine = s;  // this warpgroup's 64 rows as a tile of their own: its key blocks and masks
  mine.q0 = s.q0 + 64 * c;
  const int64_t row0 = mine.q0 + warp * 16;
  const int64_t n_mine = key_blocks(mine, 64, kBc, a.causal);  // <= n_blocks: the first ones
  const int64_t n_unmasked = unmasked_blocks(mine, kBc, a.causal);

  float rO[1][kDT][4] = {};  // O, unnormalized: the m64nD accumulator, as stage 04's [row tile][8 columns][4]
  float m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {};
  auto& acc_o = reinterpret_cast<float(&)[D / 2]>(rO);  // the same registers as wgmma sees them
  const uint32_t q_addr = sm90::smem_address(sQ), kv_addr = sm90::smem_address(sKV);
  if (n_mine > 0) sm90::mbarrier_wait_parity(q_full, 0);  // sQ has landed (used once: phase 0)

  for (int64_t j = 0; j < n_mine; ++j) {
    const int st = int(j % kStages);
    const uint32_t parity = uint32_t(j / kStages) & 1;
    const uint32_t k_addr = kv_addr + st * C::kStageBytes, v_addr = k_addr + C::kKVBytes;

    sm90::mbarrier_wait_parity(&full_k[st], parity);  // K_j has landed
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
    sm90::mbarrier_wait_parity(&full_v[st], parity);  // V_j has landed
    sm90::wgmma_fence();  // the softmax's rescaling of rO, and pa, written before wgmma reads them
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk)
      sm90::wgmma_m64nNk16_rs<D, T, /*kTransB=*/true>(acc_o, pa[kk], v_descriptor(v_addr, kBc, kk), true);
    sm90::wgmma_commit_group();
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(acc_o);
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk) sm90::wgmma_fence_operand(pa[kk]);  // pa live until here

    // This warp is done with stage st (its wait covers its own share of the products): one of the 8
    // arrivals that let the producer refill it. Lane 0 speaks for the warp, after the warp-synchronous
    // wait above.
    if (tid % 32 == 0) sm90::mbarrier_arrive(&empty[st]);
  }

  // The blocks the tile loads past this warpgroup's own (a causal first half's last block; all of
  // them for a half with no real row, as when Nq = 17): released without being read, each once it has
  // landed — not sooner: arrivals for use u + 1 of a stage made before its use u completed would count
  // towards use u, and release a stage the other warpgroup still reads.
  for (int64_t j = n_mine; j < n_blocks; ++j) {
    const int st = int(j % kStages);
    sm90::mbarrier_wait_parity(&full_k[st], uint32_t(j / kStages) & 1);
    if (tid % 32 == 0) sm90::mbarrier_arrive(&empty[st]);
  }

  write_o_lse(a, s, row0, rO, m, l);
}

}  // namespace fs::flash_tma::v2
