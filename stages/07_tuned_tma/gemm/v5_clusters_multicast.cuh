// flashstages · stage 07 gemm · v5 — clusters of two blocks along M that share B's tile through TMA multicast (fp16, bf16).
//
// What changes from v4 (persistent, each block loading its whole A and B tiles itself):
//  1. Clusters of two blocks (__cluster_dims__(2, 1, 1)) on a 256 × 256 cluster tile: rank 0 takes its
//     upper 128 rows, rank 1 the lower, both the same 256 columns, so the same slice of B per k-tile.
//  2. Block r loads half r of B's tile with a multicast TMA load (mask 0b11), written into stage s of
//     both blocks and counted on full[s] of both; each still loads its own A.
//  3. A stage is refilled only when both blocks are done with it: empty[s] takes 16 arrivals, each
//     consumer warp arriving on both blocks' (sm90::mbarrier_arrive_cluster).
//  4. The schedule walks cluster tiles (groups of 8 cluster-rows); cluster barriers after the barriers'
//     init and before exit; the grid is as many clusters as the GPU holds at once (gemm_tma::cluster_grid).
// Why it is faster: L2 → SM traffic per k-tile falls by a third: 32 KiB per block instead of 48 (each
// block still receives 48 KiB per stage). DRAM traffic does not change.
// What it costs: one more arrival per consumer warp and k-tile; the two blocks advance in lock step;
// with an odd number of 128-row tile-rows the last cluster-row's rank-1 blocks multiply zeros past M.
//
// Run: build/h100/stages/07_tuned_tma/gemm/stage07_gemm --dtype fp16 --version v5 --m 8192 --n 8192 --k 8192
//      build/h100/stages/07_tuned_tma/gemm/stage07_gemm_bench --benchmark_filter='stage07/gemm/v[45]/|cublas/fp16'
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
// The protocol. Each block counts the k-tiles it handles across all its tiles, it = 0, 1, 2 …, as v4;
// both blocks of a cluster walk the same cluster tiles, so k-tile `it` is the same k-slice of B in both.
// Stage s = it % 4, u = it / 4: the u-th use of that stage. r = this block's rank, r' = the peer's:
//   prologue   thread 0:  init full[0..3] (1 arrival), empty[0..3] (16 arrivals); fence (.cluster)
//              all 384:   barrier.cluster arrive + wait     both blocks' barriers are initialized
//              producer:  setmaxnreg.dec 40;  consumers: setmaxnreg.inc 232
//   per tile   both sides of both blocks: the same cluster tile, in the same order (Schedule)
//   producer   thread 0:  (u ≥ 1) wait empty[s] for parity (u − 1) & 1
//                                              k-tile it − 4 is released by both blocks' 16 warps
//                         expect_tx(full[s], 48 KiB)   all of it: own A 16 + own B half 16 + peer's B half 16
//                         TMA A rows m0 + 128r → own stage s (counts on own full[s])
//                         TMA multicast B half r → stage s of r and r' (counts on full[s] of r and r')
//   consumers  all 256:   wait full[s] for parity u & 1                k-tile it has landed (A, both halves of B)
//                         wgmma_fence; 4 k16 steps × 1 wgmma m64n256k16; commit (kt = 0: scale-d 0)
//                         wgmma_wait_group<1>                   k-tile it − 1's products are done
//                         lane 0 of each warp: arrive empty[(it − 1) % 4] of r and of r' (kt ≥ 1)
//   tile end   consumers: wgmma_wait_group<0>; lane 0: arrive empty[(it_last) % 4] of r and r'; epilogue
//   exit       all 384:   barrier.cluster arrive + wait     no write into this block can still come
// Why the counts hold, per stage s and use u:
//   full[s] of a block gets one arrival (its producer's, with expect_tx 48 KiB) and exactly 48 KiB:
//     16 + 16 from its own loads, 16 from the peer's multicast. The peer's 16 KiB may land before
//     this block's expect_tx of the same use: the transaction count goes below zero for a while (the
//     PTX ISA allows it), and the phase cannot complete while the arrival is missing. They cannot
//     land a use early (during use u − 1): the peer issues use u only after its empty[s] completed
//     use u − 1, which needs this block's 8 consumer warps to have consumed use u − 1, i.e. this
//     block's full[s] to have completed it.
//   empty[s] of a block gets exactly 16 arrivals per use, 8 from each block's consumer warps. None of
//     use u + 1 can come before use u completes: a consumer of either block consumes use u + 1 only
//     after its full[s] completed it, which needs this block's multicast of use u + 1, issued after
//     this block's wait for empty[s] use u.
// So, as in v4, phase u of either barrier is the u-th use of its stage, and the parities are v4's.
// Exit: a block's shared memory receives the peer's multicasts and its barriers the peer's arrivals
// until the peer's last ones; every one of those is ordered before the peer's threads arrive at the
// closing cluster barrier (the multicasts: this block's consumers waited for them on full[]; the
// arrivals: before the arrive, which releases them), and no thread leaves before all have arrived.
// Block: as v4, three warpgroups (384 threads): warpgroup 0 the producer, warpgroups 1, 2 the
// consumers of rows 64·(wg − 1) .. 64·(wg − 1) + 63 of the block's tile; the producer's 127 idle
// threads now wait at the closing cluster barrier instead of leaving.
// Registers: as v4, setmaxnreg 40 / 232 (ptxas, CUDA 13.0, -Xptxas -v, every instance: 168 per thread at
// launch, no spills, no stack, no named barrier: the block meets only at the two cluster barriers).
// Shared memory: as v4, 4 stages × 48 KiB = 192 KiB, 1 KiB of alignment slack, eight 8-byte barriers;
// stage s of both blocks at the same offset (the multicast writes the same offset in each).
// Tails: any M, N, K ≥ 1, as v4: boxes past M or N arrive zero-filled (a rank-1 block past M, or a B
// half past N, wholly so; TMA still counts the whole box), the epilogue stores only inside C.
// Alignment: as v4 (A and B 16-byte aligned with rows a multiple of 16 bytes; C its element alignment).

namespace fs::gemm_tma::v5 {

constexpr int kBM = 128, kBN = 256;  // block tile (k: kBK = 64)
constexpr int kClusterM = 2;         // blocks per cluster, stacked along M
constexpr int kClusterBM = kClusterM * kBM;  // a cluster tile: 256 × 256 of C
constexpr int kStages = 4;
constexpr int kGroupM = 8;  // cluster-rows per group of the schedule (Schedule)
constexpr int kMmaM = 64;                                // rows of one wgmma: one per consumer warpgroup
constexpr int kConsumers = kBM / kMmaM;                  // two consumer warpgroups
constexpr int kThreads = (1 + kConsumers) * kWarpgroup;  // the producer warpgroup first: 384 threads
constexpr int kConsumerWarps = kConsumers * kWarpgroup / 32;  // 8 per block
constexpr int kEmptyArrivals = kClusterM * kConsumerWarps;    // 16: every consumer warp of the cluster
constexpr uint16_t kClusterMask = (1u << kClusterM) - 1;      // 0b11: a multicast reaches both blocks

// Registers per thread: as v4. __launch_bounds__(384, 1) caps the kernel at 168, the producer's .dec
// gives 128 × (168 − 40) to the block's pool, the consumers' .inc takes 256 × (232 − 168): the same.
constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(kWarpgroup * kProducerRegs + kConsumers * kWarpgroup * kConsumerRegs <= kThreads * kLaunchRegs,
              "the consumers take no more registers than the producer gives back");

template <bool kTransA, bool kTransB>
struct Config {
  using TA = TileA<kTransA, kBM>;  // (128, 64) K-major or (64, 128) M-major, swizzled
  using TB = TileB<kTransB, kBN>;  // (256, 64) K-major or (64, 256) N-major, swizzled
  // The part of B's tile one block loads and multicasts: rows (n) 128r .. 128r + 127 of TB. K-major,
  // those are TB's bytes 16 KiB·r .. (128 rows of 128 bytes); N-major, panels 2r and 2r + 1 (8 KiB
  // each). Either way half r is the (128, 64) or (64, 128) tile at byte 16 KiB·r of TB, swizzled the
  // same (16 KiB is a multiple of the 1024-byte swizzle atom).
  using TBPart = TileB<kTransB, kBN / kClusterM>;
  static_assert(TBPart::kBytes * kClusterM == TB::kBytes, "the blocks' parts of B make up its tile");
  static constexpr int kStageBytes = TA::kBytes + TB::kBytes;  // 49152: a multiple of 1024
  // Stages from a 1024-byte boundary (the runtime does not promise more than 16 for dynamic shared
  // memory, hence the slack), then two mbarriers per stage (full, empty). The same in both blocks.
  static constexpr std::size_t kSmemBytes = 1024 + std::size_t(kStages) * kStageBytes + 2 * kStages * sizeof(uint64_t);
};

// The order in which the clusters take C's cluster tiles (gemm_tma::TileSchedule over 256 × 256 tiles):
// cluster c takes cluster tiles c, c + clusters, … of a numbering that walks C in groups of kGroupM = 8
// cluster-rows, column by column inside a group. Why 8: 66 clusters (132 SMs) in flight, G cluster-rows
// tall, need 256·G rows of A and 256·66 / G columns of B; the sum is smallest at G = √66 ≈ 8: a wave
// covers about 2048 × 2112 of C, v4's wave.
using Schedule = TileSchedule<kClusterBM, kBN, kGroupM>;

// grid: two blocks per cluster, min(clusters the GPU holds at once, cluster tiles) clusters, each
// looping over its cluster tiles of C (Schedule); block: 384 threads, three warpgroups.
// T: __half or __nv_bfloat16. tmA, tmB: A and B's tensor maps (gemm_tma::encode_operand_maps<128, 128>:
// B's box is a block's part, 128 wide). c_dtype: FS_FP32, FS_FP16 or FS_BF16. c_pairs: C's base and ldc
// keep even columns 2-element aligned.
template <class T, bool kTransA, bool kTransB>
__global__ void __cluster_dims__(kClusterM, 1, 1) __launch_bounds__(kThreads, 1)
    gemm_tma_v5_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, int64_t M,
                       int64_t N, int64_t K, float alpha, float beta, void* __restrict__ C, int64_t ldc,
                       int32_t c_dtype, bool c_pairs) {
  using Cfg = Config<kTransA, kTransB>;
  using TA = typename Cfg::TA;
  using TB = typename Cfg::TB;
  using TBPart = typename Cfg::TBPart;
  extern __shared__ unsigned char smem_raw[];
  // (stages, TA then TB), each stage 1024-byte aligned; then full[kStages], empty[kStages]. Both blocks
  // of a cluster run the same kernel with the same dynamic shared memory, so the alignment slack and
  // every offset below are the same in both: what the multicast, which writes "the same offset" in
  // each block, relies on.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kStages * Cfg::kStageBytes);
  uint64_t* empty = full + kStages;

  const Schedule schedule(M, N);
  const int tid = threadIdx.x;
  const int wg = tid / kWarpgroup;  // 0: the producer; 1, 2: a consumer, rows 64·(wg − 1) .. of the tile
  const int k_tiles = int((K + kBK - 1) / kBK);  // K < 2^31: the tensor maps refuse more
  const uint32_t rank = sm90::cluster_ctarank();  // 0: the cluster tile's upper 128 rows, 1: its lower
  // The cluster's index and count: the blocks of cluster c are 2c (rank 0) and 2c + 1 (rank 1).
  const int64_t cluster = blockIdx.x / kClusterM, clusters = gridDim.x / kClusterM;

  // The two barrier arrays of each block, per stage s, count its uses u = 0, 1, 2 … (k-tile it = 4u + s
  // of the sequence both blocks of the cluster share), one phase per use, so phase u has parity u & 1:
  //   full[s]   phase u completes when k-tile it has landed in this block: its producer's one
  //             arrival (expect_tx) and 48 KiB of transactions, 16 KiB of them from the peer's
  //             multicast. This block's consumers wait for parity u & 1.
  //   empty[s]  phase u completes when k-tile it is no longer read in either block: one arrival from
  //             each of the 16 consumer warps of the cluster. This block's producer, before use u + 1,
  //             waits for parity u & 1.
  // A parity names a phase unambiguously only while the barrier cannot get two phases ahead of the
  // waiter; it cannot here ("Why the counts hold", above): each phase of one
  // barrier, in either block, needs the previous phase of the other in both.
  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      sm90::mbarrier_init(&full[s], 1);                // the producer's expect_tx arrival
      sm90::mbarrier_init(&empty[s], kEmptyArrivals);  // one arrival per consumer warp of the cluster
    }
    sm90::fence_mbarrier_init();  // the inits are seen by the TMA units that will complete them, the peer's too
  }
  // Every thread of both blocks sees both blocks' initialized barriers before any wait, multicast or
  // remote arrival can touch one. The cluster barrier is also this block's __syncthreads: from here on
  // the warpgroups meet only through full[] and empty[], until the closing cluster barrier.
  sm90::barrier_cluster_arrive();
  sm90::barrier_cluster_wait();

  if (wg == 0) {
    // The producer. The whole warpgroup gives its registers back (setmaxnreg is a warpgroup
    // instruction), then one thread issues the loads and the others go straight to the closing barrier.
    sm90::setmaxnreg_dec<kProducerRegs>();
    if (tid == 0) {
      int64_t it = 0;  // k-tiles issued so far, over all of this cluster's tiles
      for (int64_t t = cluster; t < schedule.tiles(); t += clusters) {
        int32_t m0, n0;
        schedule.tile(t, m0, n0);  // the cluster tile's first row and column
        // This block's rows and its part of B's columns. m0 is a multiple of 256 below M < 2^31, so
        // m0 + 128 ≤ 2^31 − 128 still fits, as does n0 + 128.
        const int32_t block_m0 = m0 + int32_t(rank) * kBM;
        const int32_t part_n0 = n0 + int32_t(rank) * (kBN / kClusterM);
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
          const int s = int(it % kStages);
          const int64_t u = it / kStages;
          // Use u of stage s needs use u − 1 consumed in both blocks (this block's multicast writes
          // into both): phase u − 1 of empty[s], its 16 arrivals from both blocks' consumer warps,
          // each made after that warp's wgmma_wait_group (its tensor cores' reads of the stage done),
          // so the TMA writes below, into this block's shared memory and the peer's, come after them.
          if (u > 0) sm90::mbarrier_wait_parity(&empty[s], uint32_t(u - 1) & 1);
          unsigned char* sA = smem + s * Cfg::kStageBytes;
          // Announce the whole stage: this block's A and B part and the peer's B part, which the
          // peer's multicast counts on this same barrier. Then issue the boxes.
          sm90::mbarrier_arrive_expect_tx(&full[s], Cfg::kStageBytes);
          TA::load(&tmA, sA, &full[s], block_m0, kt * kBK);
          TBPart::load(&tmB, sA + TA::kBytes + rank * TBPart::kBytes, &full[s], part_n0, kt * kBK, kClusterMask);
        }
      }
    }
  } else {
    // A consumer. The registers the producer gave back: the accumulators and the epilogue fit
    // without spilling.
    sm90::setmaxnreg_inc<kConsumerRegs>();
    const int cw = wg - 1;  // this consumer's rows: 64·cw .. 64·cw + 63 of the tile
    float acc[kBN / 2];     // (128): this warpgroup's m64n256 fp32 fragment (sm90::wgmma_m64nNk16)
    const uint32_t smem0 = sm90::smem_address(smem);
    // Lane 0 releases k-tile j's stage for this warp in both blocks: one of the 16 arrivals of that
    // use on empty[j % 4] of each (this block's own through its cluster address: one code path).
    // Its wgmma_wait_group has completed this warp's reads of the stage, so either producer may refill
    // it (sm90::mbarrier_arrive_cluster says why the default semantics suffice and what the .cluster
    // ones cost). Lane 0 speaks for the warp: the wait before it is warp-synchronous.
    auto release = [&](int64_t j) {
      if (tid % 32 != 0) return;
#pragma unroll
      for (uint32_t r = 0; r < kClusterM; ++r)
        sm90::mbarrier_arrive_cluster(sm90::mapa_shared_cluster(&empty[j % kStages], r));
    };
    int64_t it = 0;  // k-tiles consumed so far, over all of this cluster's tiles: the producers' count
    for (int64_t t = cluster; t < schedule.tiles(); t += clusters) {
      int32_t m0, n0;
      schedule.tile(t, m0, n0);
      const int32_t block_m0 = m0 + int32_t(rank) * kBM;  // past M for a rank-1 block in a last, odd tile-row
      for (int kt = 0; kt < k_tiles; ++kt, ++it) {
        const int s = int(it % kStages);
        // k-tile it has landed in stage s: A, this block's B part and the peer's.
        sm90::mbarrier_wait_parity(&full[s], uint32_t(it / kStages) & 1);
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
        // At kt = 0 the previous k-tile is the previous tile's last, released at that tile's end.
        if (kt > 0) release(it - 1);
      }
      sm90::wgmma_wait_group<0>();     // the tile's last products are done: the accumulators are final
      sm90::wgmma_fence_operand(acc);  // no read of them above that wait
      // The tile's last k-tile (it − 1) is released now, before the epilogue, as in v4: both producers
      // then fill all four stages with the next tile's first k-tiles while this warp stores C. Every
      // k-tile gets its 16 arrivals in each block, the block's last tile's last ones too (no producer
      // waits for those; the closing cluster barrier keeps the peer alive until they have landed).
      release(it - 1);

      store_accumulators<kBN>(C, c_dtype, ldc, M, N, int64_t(block_m0) + cw * kMmaM, n0, acc, alpha, beta, c_pairs);
    }
  }
  // Neither block may exit while the other can still reach its shared memory: the peer's multicasts
  // into this block's stages (all waited for on full[] by this block's consumers before they arrive
  // here) and the peer's consumers' arrivals on this block's empty[] (made before they arrive here;
  // the arrive's release orders them first). Every thread of both blocks arrives, the producer's
  // idle ones included.
  sm90::barrier_cluster_arrive();
  sm90::barrier_cluster_wait();
}

}  // namespace fs::gemm_tma::v5
