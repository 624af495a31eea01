// flashstages · stage 07 gemm · v3 — warp specialization: a producer warpgroup, two consumer warpgroups (fp16, bf16).
//
// What changes from v2 (4 stages, 128×256×64, two warpgroups that all wait, multiply and meet at a
// __syncthreads before thread 0 refills a stage):
//  1. A third warpgroup, the producer, only loads (one thread issues every TMA load); the two consumer
//     warpgroups only wait for tiles, multiply them and store C.
//  2. A second mbarrier per stage, `empty`, replaces the __syncthreads: each consumer warp arrives on
//     empty[s] once its products of stage s have retired; the producer waits on it before a refill.
//  3. setmaxnreg: the producer keeps 40 registers per thread, the consumers take 232.
// Why it is faster: nobody waits at a barrier it does not need. A consumer waits only for the tile it
// multiplies next; a late warp delays only the refill of its stage, needed three k-tiles later. The
// register split does not speed this tile up by itself: it lets the consumers hold 128 accumulators
// while the block has a third warpgroup, and is what a larger tile per consumer would need.
// What it still lacks: one block per tile; a block's prologue and epilogue still stand alone (v4).
//
// Run: build/h100/stages/07_tuned_tma/gemm/stage07_gemm --dtype fp16 --version v3
//      build/h100/stages/07_tuned_tma/gemm/stage07_gemm_bench --benchmark_filter='stage07/gemm/v[23]/|cublas/fp16'
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
// The protocol, per k-tile kt (stage s = kt % 4, u = kt / 4: the u-th use of that stage):
//   prologue   thread 0:  init full[0..3] (1 arrival), empty[0..3] (8 arrivals); fence; __syncthreads
//              producer:  setmaxnreg.dec 40;  consumers: setmaxnreg.inc 232
//   producer   thread 0:  (u ≥ 1) wait empty[s] for parity (u − 1) & 1      tile kt − 4 is released
//                         expect_tx(full[s], 48 KiB); TMA A box(es), B box(es) → stage s
//   consumers  all 256:   wait full[s] for parity u & 1                        tile kt has landed
//                         wgmma_fence; 4 k16 steps × 1 wgmma m64n256k16 (rows 64·(wg − 1) ..); commit
//                         wgmma_wait_group<1>                   tile kt − 1's products are done
//                         lane 0 of each warp: arrive empty[(kt − 1) % 4]   (kt ≥ 1)
//   after      consumers: wgmma_wait_group<0>; epilogue
//
// Block: three warpgroups (12 warps, 384 threads) per 128×256 tile of C: warpgroup 0 the producer,
// warpgroup wg = 1, 2 a consumer that owns rows 64·(wg − 1) .. 64·(wg − 1) + 63, and warp w of it
// rows 16w .. 16w+15 of those. Registers: one m64n256 fp32 accumulator, 128 per consumer thread
// (ptxas, CUDA 13.0: 168 per thread at launch, exactly the launch bounds' cap; no spills, no stack).
// Shared memory: 4 stages × (128×64 A + 256×64 B) × 2 bytes = 192 KiB (a fifth stage, 240 KiB, is more
// than the 227 KiB a block may have), 1 KiB of alignment slack, eight 8-byte barriers.
// Tails: any M, N, K ≥ 1, as v1. Boxes reaching past M, N or K arrive zero-filled (the transaction
// count is always the whole box); the epilogue stores only inside C.
// Alignment: A and B 16-byte aligned with rows a multiple of 16 bytes (TMA), refused in validation
// otherwise; C needs only its element alignment (pair stores where C allows).

namespace fs::gemm_tma::v3 {

constexpr int kBM = 128, kBN = 256;  // block tile (k: kBK = 64)
constexpr int kStages = 4;
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

// grid: one block per 128×256 tile of C (1D, row-major order); block: 384 threads, three warpgroups.
// T: __half or __nv_bfloat16. tmA, tmB: A and B's tensor maps (gemm_tma::encode_operand_maps<128, 256>).
// c_dtype: FS_FP32, FS_FP16 or FS_BF16. c_pairs: C's base and ldc keep even columns 2-element aligned.
template <class T, bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_tma_v3_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, int64_t M,
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

  int32_t m0, n0;
  block_tile<kBM, kBN>(N, m0, n0);
  const int tid = threadIdx.x;
  const int wg = tid / kWarpgroup;  // 0: the producer; 1, 2: a consumer, rows 64·(wg − 1) .. of the tile
  const int k_tiles = int((K + kBK - 1) / kBK);  // K < 2^31: the tensor maps refuse more

  // The two barrier arrays, per stage s, count its uses u = 0, 1, 2 … (tile kt = 4u + s), one phase
  // per use, so phase u of either barrier has parity u & 1:
  //   full[s]   phase u completes when tile kt has landed: the producer's one arrival (expect_tx)
  //             and its 48 KiB of transactions. The consumers wait for parity u & 1.
  //   empty[s]  phase u completes when tile kt is no longer read: one arrival from each of the 8
  //             consumer warps. The producer, before use u + 1, waits for parity u & 1.
  // A parity names a phase unambiguously only while the barrier cannot get two phases ahead of the
  // waiter; it cannot here: full[s] phase u + 1 needs the refill that waits for empty[s] phase u,
  // which needs every consumer warp to have consumed use u, and symmetrically for empty.
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
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % kStages;
        const int u = kt / kStages;
        // Use u of stage s needs use u − 1 consumed: phase u − 1 of empty[s]. The first kStages
        // tiles go into stages nobody has read yet. The wait's acquire, after the consumers'
        // wgmma_wait_group and release-arrive, orders their tensor-core reads of the stage before
        // the TMA writes issued below.
        if (u > 0) sm90::mbarrier_wait_parity(&empty[s], uint32_t(u - 1) & 1);
        unsigned char* sA = smem + s * Cfg::kStageBytes;
        sm90::mbarrier_arrive_expect_tx(&full[s], Cfg::kStageBytes);  // announce the bytes, then issue the boxes
        TA::load(&tmA, sA, &full[s], m0, kt * kBK);
        TB::load(&tmB, sA + TA::kBytes, &full[s], n0, kt * kBK);
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
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int s = kt % kStages;
      sm90::mbarrier_wait_parity(&full[s], uint32_t(kt / kStages) & 1);  // tile kt has landed in stage s
      const uint32_t sA = smem0 + s * Cfg::kStageBytes, sB = sA + TA::kBytes;
      // Required before a batch of wgmma. Tile kt − 1's products may still be running: products of the
      // same shape into the same accumulators are ordered by the hardware, no wait is needed for them.
      sm90::wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < kBK / kWgmmaK; ++ks)
        // The first product of the tile overwrites the (uninitialized) accumulators: scale-d = 0.
        sm90::wgmma_m64nNk16<kBN, T, kTransA, !kTransB>(acc, TA::descriptor(sA, cw * kMmaM, ks),
                                                       TB::descriptor(sB, 0, ks), kt > 0 || ks > 0);
      sm90::wgmma_commit_group();
      // Tile kt − 1's group is done (this warp's share): its stage is no longer read by this warp.
      // Tile kt's group stays in flight, so the tensor cores work through the release.
      sm90::wgmma_wait_group<1>();
      // This warp releases tile kt − 1's stage: one of the 8 arrivals that complete that use's phase
      // of empty[] (a warp's wait covers only its own share, hence one arrival per warp, not per
      // warpgroup). Lane 0 speaks for the warp: the wait above is warp-synchronous (.sync.aligned).
      // Arrivals for the last stages, which the producer never waits for, are harmless.
      if (kt > 0 && tid % 32 == 0) sm90::mbarrier_arrive(&empty[(kt - 1) % kStages]);
    }
    sm90::wgmma_wait_group<0>();     // the last tile's products are done: the accumulators are final
    sm90::wgmma_fence_operand(acc);  // no read of them above that wait

    store_accumulators<kBN>(C, c_dtype, ldc, M, N, int64_t(m0) + cw * kMmaM, n0, acc, alpha, beta, c_pairs);
  }
}

}  // namespace fs::gemm_tma::v3
