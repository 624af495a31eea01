// flashstages · stage 07 gemm · v4 — a persistent kernel: one block per SM loops over C's tiles (fp16, bf16).
//
// What changes from v3 (warp-specialized, one block per 128×256 tile, tiles in row-major order):
//  1. One block per SM (never more than tiles); block b takes tiles b, b + gridDim.x, … Barrier init,
//     setmaxnreg and the pipeline's fill happen once per block.
//  2. The pipeline runs across tiles: the k-tile count does not restart at a tile boundary, and the
//     consumers release a tile's last stage before their epilogue, so the next tile's loads overlap it.
//  3. A grouped schedule (gemm_tma::TileSchedule): tiles counted column by column inside groups of
//     kGroupM = 16 tile-rows, not row by row across the whole of C.
// Why it is faster: at 8192³ the 132 tiles in flight cover about 2048 × 2112 of C instead of four whole
// tile-rows (512 × 8192): a wave reads (2048 + 2304) × 8192 × 2 bytes ≈ 68 MiB of A and B instead of
// (512 + 8192) × 8192 × 2 ≈ 136 MiB (the L2 holds 50), half the DRAM traffic. On short K the next
// tile's loads overlap the epilogue; only a block's first tile starts from an empty pipeline.
// What it still lacks: the tensor cores idle during the epilogue (ping-pong consumers would hide it);
// 128×256 tiles still quantize into waves; no operand is shared between SMs (v5: TMA multicast).
//
// Run: build/h100/stages/07_tuned_tma/gemm/stage07_gemm --dtype fp16 --version v4 --m 8192 --n 8192 --k 8192
//      build/h100/stages/07_tuned_tma/gemm/stage07_gemm_bench --benchmark_filter='stage07/gemm/v[34]/|cublas/fp16'
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/lib/flashstages.h"
#include "stages/07_tuned_tma/gemm/epilogue.cuh"
#include "stages/07_tuned_tma/gemm/scheduler.cuh"
#include "stages/07_tuned_tma/gemm/tiles.cuh"

// C is fp32, fp16 or bf16 (alpha·acc + beta·C in fp32, rounded once), whichever of fp16 and bf16 the
// inputs are.
//
// The protocol. Each block counts the k-tiles it handles across all its tiles, it = 0, 1, 2 …
// (tile i of the block, k-tile kt of it: it = i·k_tiles + kt, the same count on both sides, since every
// tile has the same k_tiles); stage s = it % 4, u = it / 4: the u-th use of that stage:
//   prologue   thread 0:  init full[0..3] (1 arrival), empty[0..3] (8 arrivals); fence; __syncthreads
//              producer:  setmaxnreg.dec 40;  consumers: setmaxnreg.inc 232
//   per tile   both sides: the same tile t, in the same order (Schedule)
//   producer   thread 0:  (u ≥ 1) wait empty[s] for parity (u − 1) & 1      k-tile it − 4 is released
//                         expect_tx(full[s], 48 KiB); TMA A box(es), B box(es) → stage s
//   consumers  all 256:   wait full[s] for parity u & 1                        k-tile it has landed
//                         wgmma_fence; 4 k16 steps × 1 wgmma m64n256k16; commit (kt = 0: scale-d 0)
//                         wgmma_wait_group<1>                   k-tile it − 1's products are done
//                         lane 0 of each warp: arrive empty[(it − 1) % 4]   (kt ≥ 1)
//   tile end   consumers: wgmma_wait_group<0>; lane 0: arrive empty[(it_last) % 4]; epilogue
// Every k-tile `it` thus gets exactly one arrival on full[it % 4] (the producer's) and exactly 8 on
// empty[it % 4] (one per consumer warp: kt ≥ 1 in the loop, kt = k_tiles − 1 at the tile's end), in
// the same order on both sides, so phase u of either barrier is the u-th use of its stage no matter
// where the tile boundaries fall, and the parities are v3's with `it` in place of kt. A block given
// fewer tiles than another, or none (blocks beyond the tile count are not launched, but the loops
// would simply not run), has both its sides run the same shorter count.
//
// Block: as v3, three warpgroups (384 threads): warpgroup 0 the producer, warpgroups 1, 2 the
// consumers of rows 64·(wg − 1) .. 64·(wg − 1) + 63 of the current tile.
// Registers: as v3, one m64n256 fp32 accumulator, 128 per consumer thread, reused tile after tile
// (ptxas, CUDA 13.0, -Xptxas -v: 168 per thread at launch, the launch bounds' cap; no spills, no stack).
// Shared memory: as v3, 4 stages × 48 KiB = 192 KiB, 1 KiB of alignment slack, eight 8-byte barriers.
// Tails: any M, N, K ≥ 1, as v3: every tile has the same k_tiles = ⌈K / 64⌉ ≥ 1 (the last one zero-filled
// past K), boxes past M or N arrive zero-filled, the epilogue stores only inside C.
// Alignment: as v3 (A and B 16-byte aligned with rows a multiple of 16 bytes; C its element alignment).

namespace fs::gemm_tma::v4 {

constexpr int kBM = 128, kBN = 256;  // block tile (k: kBK = 64)
constexpr int kStages = 4;
constexpr int kGroupM = 16;  // tile-rows per group of the schedule (Schedule)
constexpr int kMmaM = 64;                                // rows of one wgmma: one per consumer warpgroup
constexpr int kConsumers = kBM / kMmaM;                  // two consumer warpgroups
constexpr int kThreads = (1 + kConsumers) * kWarpgroup;  // the producer warpgroup first: 384 threads
constexpr int kConsumerWarps = kConsumers * kWarpgroup / 32;  // 8: the arrivals that release a stage

// Registers per thread. __launch_bounds__(384, 1) caps the kernel at 168 (65536 / 384 = 170, allocated
// in steps of 8), and with setmaxnreg in the kernel ptxas gives it exactly that: the block holds
// 384 × 168 = 64512. The producer's .dec puts 128 × (168 − 40) into the block's pool, the consumers'
// .inc takes 256 × (232 − 168) out of it: the same 16384, so the .inc never waits on registers the
// block does not have (it would wait forever).
constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(kWarpgroup * kProducerRegs + kConsumers * kWarpgroup * kConsumerRegs <= kThreads * kLaunchRegs,
              "the consumers take no more registers than the producer gives back");

template <bool kTransA, bool kTransB>
struct Config {
  using TA = TileA<kTransA, kBM>;  // (128, 64) K-major or (64, 128) M-major, swizzled
  using TB = TileB<kTransB, kBN>;  // (256, 64) K-major or (64, 256) N-major, swizzled
  static constexpr int kStageBytes = TA::kBytes + TB::kBytes;  // 49152: a multiple of 1024
  // Stages from a 1024-byte boundary (the runtime does not promise more than 16 for dynamic shared
  // memory, hence the slack), then two mbarriers per stage (full, empty).
  static constexpr std::size_t kSmemBytes = 1024 + std::size_t(kStages) * kStageBytes + 2 * kStages * sizeof(uint64_t);
};

// The order in which the blocks take C's tiles (gemm_tma::TileSchedule): block b takes tiles b,
// b + gridDim.x, … of a numbering that walks C in groups of kGroupM = 16 tile-rows, column by column
// inside a group. Why 16: g consecutive tiles, kGroupM rows tall, need kGroupM·128 rows of A and
// ⌈g / kGroupM⌉·256 columns of B; for g = 132 (one tile per SM of an H100) that sum, 128·G + 256·132 / G,
// is smallest at G = √(2·132) ≈ 16: a wave covers about 2048 × 2112 of C, square in elements.
using Schedule = TileSchedule<kBM, kBN, kGroupM>;

// grid: min(SMs, tiles) blocks, each looping over its tiles of C (Schedule); block: 384 threads,
// three warpgroups.
// T: __half or __nv_bfloat16. tmA, tmB: A and B's tensor maps (gemm_tma::encode_operand_maps<128, 256>).
// c_dtype: FS_FP32, FS_FP16 or FS_BF16. c_pairs: C's base and ldc keep even columns 2-element aligned.
template <class T, bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_tma_v4_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, int64_t M,
                       int64_t N, int64_t K, float alpha, float beta, void* __restrict__ C, int64_t ldc,
                       int32_t c_dtype, bool c_pairs) {
  using Cfg = Config<kTransA, kTransB>;
  using TA = typename Cfg::TA;
  using TB = typename Cfg::TB;
  extern __shared__ unsigned char smem_raw[];
  // (stages, TA then TB), each stage 1024-byte aligned; then full[kStages], empty[kStages].
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kStages * Cfg::kStageBytes);
  uint64_t* empty = full + kStages;

  const Schedule schedule(M, N);
  const int tid = threadIdx.x;
  const int wg = tid / kWarpgroup;  // 0: the producer; 1, 2: a consumer, rows 64·(wg − 1) .. of the tile
  const int k_tiles = int((K + kBK - 1) / kBK);  // K < 2^31: the tensor maps refuse more

  // The two barrier arrays, per stage s, count its uses u = 0, 1, 2 … (k-tile it = 4u + s of this
  // block's sequence, across its tiles), one phase per use, so phase u of either barrier has parity u & 1:
  //   full[s]   phase u completes when k-tile it has landed: the producer's one arrival (expect_tx)
  //             and its 48 KiB of transactions. The consumers wait for parity u & 1.
  //   empty[s]  phase u completes when k-tile it is no longer read: one arrival from each of the 8
  //             consumer warps. The producer, before use u + 1, waits for parity u & 1.
  // A parity names a phase unambiguously only while the barrier cannot get two phases ahead of the
  // waiter; it cannot here: full[s] phase u + 1 needs the refill that waits for empty[s] phase u,
  // which needs every consumer warp to have consumed use u, and symmetrically for empty. Tile
  // boundaries change none of this: both sides step `it` through the same tiles, k_tiles per tile.
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      sm90::mbarrier_init(&full[s], 1);                // the producer's expect_tx arrival
      sm90::mbarrier_init(&empty[s], kConsumerWarps);  // one arrival per consumer warp
    }
    sm90::fence_mbarrier_init();  // the inits are seen by the TMA unit that will complete them
  }
  // Every thread sees the initialized barriers before it waits on one. The only block-wide barrier:
  // from here on the warpgroups meet only through full[] and empty[].
  __syncthreads();

  if (wg == 0) {
    // The producer. The whole warpgroup gives its registers back (setmaxnreg is a warpgroup
    // instruction), then one thread issues the loads and the others are done.
    sm90::setmaxnreg_dec<kProducerRegs>();
    if (tid == 0) {
      int64_t it = 0;  // k-tiles issued so far, over all of this block's tiles
      for (int64_t t = blockIdx.x; t < schedule.tiles(); t += gridDim.x) {
        int32_t m0, n0;
        schedule.tile(t, m0, n0);
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
          const int s = int(it % kStages);
          const int64_t u = it / kStages;
          // Use u of stage s needs use u − 1 consumed: phase u − 1 of empty[s], whether that k-tile
          // belonged to this tile or the previous one. The first kStages k-tiles of the block go into
          // stages nobody has read yet. The wait's acquire, after the consumers' wgmma_wait_group and
          // release-arrive, orders their tensor-core reads of the stage before the TMA writes below.
          if (u > 0) sm90::mbarrier_wait_parity(&empty[s], uint32_t(u - 1) & 1);
          unsigned char* sA = smem + s * Cfg::kStageBytes;
          sm90::mbarrier_arrive_expect_tx(&full[s], Cfg::kStageBytes);  // announce the bytes, then issue the boxes
          TA::load(&tmA, sA, &full[s], m0, kt * kBK);
          TB::load(&tmB, sA + TA::kBytes, &full[s], n0, kt * kBK);
        }
      }
    }
    // No thread of the producer touches shared memory or a barrier again: leaving is safe, the loads
    // in flight complete on full[] whether or not their issuing thread still runs.
  } else {
    // A consumer. The registers the producer gave back: the accumulators and the epilogue fit
    // without spilling.
    sm90::setmaxnreg_inc<kConsumerRegs>();
    const int cw = wg - 1;  // this consumer's rows: 64·cw .. 64·cw + 63 of the tile
    float acc[kBN / 2];     // (128): this warpgroup's m64n256 fp32 fragment (sm90::wgmma_m64nNk16)
    const uint32_t smem0 = sm90::smem_address(smem);
    int64_t it = 0;  // k-tiles consumed so far, over all of this block's tiles: the producer's count
    for (int64_t t = blockIdx.x; t < schedule.tiles(); t += gridDim.x) {
      int32_t m0, n0;
      schedule.tile(t, m0, n0);
      for (int kt = 0; kt < k_tiles; ++kt, ++it) {
        const int s = int(it % kStages);
        sm90::mbarrier_wait_parity(&full[s], uint32_t(it / kStages) & 1);  // k-tile it has landed in stage s
        const uint32_t sA = smem0 + s * Cfg::kStageBytes, sB = sA + TA::kBytes;
        // Required before a batch of wgmma, and here also after the previous tile's epilogue read the
        // accumulators. k-tile it − 1's products may still be running: products of the same shape into
        // the same accumulators are ordered by the hardware, no wait is needed for them.
        sm90::wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < kBK / kWgmmaK; ++ks)
          // The tile's first product overwrites the accumulators (the previous tile's C): scale-d = 0.
          sm90::wgmma_m64nNk16<kBN, T, kTransA, !kTransB>(acc, TA::descriptor(sA, cw * kMmaM, ks),
                                                         TB::descriptor(sB, 0, ks), kt > 0 || ks > 0);
        sm90::wgmma_commit_group();
        // k-tile it − 1's group is done (this warp's share): its stage is no longer read by this warp.
        // k-tile it's group stays in flight, so the tensor cores work through the release.
        sm90::wgmma_wait_group<1>();
        // This warp releases k-tile it − 1's stage: one of the 8 arrivals that complete that use's phase
        // of empty[] (a warp's wait covers only its own share, hence one arrival per warp, not per
        // warpgroup). Lane 0 speaks for the warp: the wait above is warp-synchronous (.sync.aligned).
        // At kt = 0 the previous k-tile is the previous tile's last, released at that tile's end.
        if (kt > 0 && tid % 32 == 0) sm90::mbarrier_arrive(&empty[(it - 1) % kStages]);
      }
      sm90::wgmma_wait_group<0>();     // the tile's last products are done: the accumulators are final
      sm90::wgmma_fence_operand(acc);  // no read of them above that wait
      // The tile's last k-tile (it − 1) is released now, before the epilogue, not at the next tile's
      // second k-tile: the producer then has all four stages to fill with the next tile's first
      // k-tiles while this warp stores C. Every k-tile gets its 8 arrivals, the last ones of the
      // block's last tile too (the producer never waits for those: harmless).
      if (tid % 32 == 0) sm90::mbarrier_arrive(&empty[(it - 1) % kStages]);

      store_accumulators<kBN>(C, c_dtype, ldc, M, N, int64_t(m0) + cw * kMmaM, n0, acc, alpha, beta, c_pairs);
    }
  }
}

}  // namespace fs::gemm_tma::v4
