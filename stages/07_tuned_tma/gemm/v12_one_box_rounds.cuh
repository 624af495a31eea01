// flashstages · stage 07 gemm · v12 — C leaves one box per k-tile: the previous tile's four 64 × 64
// boxes are staged and stored over the next tile's first four k-tiles, one at a time, instead of two at
// a time over its first two (fp16, bf16).
//
// What changes from v11: the rounds of the C that leaves by TMA, nothing else. v11 stages two boxes
// (16 KiB per consumer warpgroup) per round, in k-tiles 0 and 1 of the next tile, each round waiting
// until the previous round's two stores have read both slots. v12 stages one box per round in k-tiles
// 0 to 3, box r through slot r % 2, each round waiting only for the store two boxes back (the one that
// used the same slot): the same two slots, the same bytes, half as many per k-tile.
// Why it is faster: a k-tile costs v11 what it costs cuBLAS; what v11 pays more is fixed per launch,
// and most of it is C. A round is 32 KiB of stmatrix writes and TMA-store reads per block, in the same
// shared memory as the k-tile's 48 KiB of TMA loads and its wgmma reads, and v11 puts two in each of
// two k-tiles; spread over four, each k-tile carries half. (NOTES.md: how that was found.)
//
// Run: build/h100/stages/07_tuned_tma/gemm/stage07_gemm --dtype fp16 --version v12 --m 4096 --n 4096 --k 4096
//      build/h100/stages/07_tuned_tma/gemm/stage07_gemm_bench --benchmark_filter='stage07/gemm/v1[12]/|cublas/fp16'
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/lib/flashstages.h"
#include "stages/07_tuned_tma/gemm/epilogue.cuh"
#include "stages/07_tuned_tma/gemm/scheduler.cuh"
#include "stages/07_tuned_tma/gemm/tiles.cuh"

// The protocol, the block, registers, shared memory, tails and the C that does not leave by TMA: v9's
// (v9_epilogue_overlap.cuh); the tile's end: v10's; the k-loop: v11's.

namespace fs::gemm_tma::v12 {

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
// C's staging: a consumer warpgroup's 64 × 256 tile leaves as four boxes of 64 rows × 64 columns (128
// bytes of 16-bit C: one row of the 128-byte swizzle), each what one TMA store writes, in four rounds of
// one box through two box-sized slots (v11: two rounds of two boxes).
constexpr int kCBoxCols = 64;
constexpr int kCBoxBytes = kMmaM * kCBoxCols * 2;     // 8 KiB: 64 rows of 128 bytes, 1024-byte aligned
constexpr int kCSlots = 2;                            // box r goes through slot r % 2
constexpr int kCRounds = kBN / kCBoxCols;             // 4 per tile: one box each
constexpr int kCStagingBytes = kCSlots * kCBoxBytes;  // 16 KiB per consumer warpgroup

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
  // memory, hence the slack), then each consumer warpgroup's C staging, then two mbarriers per stage
  // (full, empty). The same in both blocks. 1024 + 4 × 48 KiB + 2 × 16 KiB + 64 = 230464 bytes, within
  // the 232448 (227 KiB) a block may opt in to.
  static constexpr std::size_t kStagingOffset = std::size_t(kStages) * kStageBytes;  // a multiple of 1024
  static constexpr std::size_t kSmemBytes =
      1024 + kStagingOffset + std::size_t(kConsumers) * kCStagingBytes + 2 * kStages * sizeof(uint64_t);
  static_assert(kSmemBytes <= 232448, "within the shared memory one block may have (227 KiB)");
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
// B's box is a block's part, 128 wide). tmC: C's, boxes of 64 × 64 (gemm_tma::c_store_map), read only
// when c_tma. c_dtype: FS_FP32, FS_FP16 or FS_BF16. c_pairs: C's base and ldc keep even columns
// 2-element aligned (the register path's pair stores). c_tma: C leaves through the staging and TMA
// stores (16-bit C, beta = 0, 16-byte rows), else through v5's register stores.
template <class T, bool kTransA, bool kTransB>
__global__ void __cluster_dims__(kClusterM, 1, 1) __launch_bounds__(kThreads, 1)
    gemm_tma_v12_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB,
                       const __grid_constant__ CUtensorMap tmC, int64_t M, int64_t N, int64_t K, float alpha,
                       float beta, void* __restrict__ C, int64_t ldc, int32_t c_dtype, bool c_pairs, bool c_tma) {
  using Cfg = Config<kTransA, kTransB>;
  using TA = typename Cfg::TA;
  using TB = typename Cfg::TB;
  using TBPart = typename Cfg::TBPart;
  extern __shared__ unsigned char smem_raw[];
  // (stages, TA then TB), each stage 1024-byte aligned; then the consumers' C staging, then
  // full[kStages], empty[kStages]. Both blocks
  // of a cluster run the same kernel with the same dynamic shared memory, so the alignment slack and
  // every offset below are the same in both: what the multicast, which writes "the same offset" in
  // each block, relies on.
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + Cfg::kStagingOffset + kConsumers * kCStagingBytes);
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
  // waiter; it cannot here (v5_clusters_multicast.cuh, "Why the counts
  // hold"): each phase of one barrier, in either block, needs the previous phase of the other in both.
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
      // The stage of the next k-tile and how many times it has been filled before (its use u, whose
      // parity is what the waits below name), over all of this cluster's tiles: the consumers' count.
      int s = 0;
      uint32_t u = 0;
      for (int64_t t = cluster; t < schedule.tiles(); t += clusters) {
        int32_t m0, n0;
        schedule.tile(t, m0, n0);  // the cluster tile's first row and column
        // This block's rows and its part of B's columns. m0 is a multiple of 256 below M < 2^31, so
        // m0 + 128 ≤ 2^31 − 128 still fits, as does n0 + 128.
        const int32_t block_m0 = m0 + int32_t(rank) * kBM;
        const int32_t part_n0 = n0 + int32_t(rank) * (kBN / kClusterM);
        for (int kt = 0; kt < k_tiles; ++kt) {
          // Use u of stage s needs use u − 1 consumed in both blocks (this block's multicast writes
          // into both): phase u − 1 of empty[s], its 16 arrivals from both blocks' consumer warps,
          // each made after that warp's wgmma_wait_group (its tensor cores' reads of the stage done),
          // so the TMA writes below, into this block's shared memory and the peer's, come after them.
          if (u > 0) sm90::mbarrier_wait_parity(&empty[s], (u - 1) & 1);
          unsigned char* sA = smem + s * Cfg::kStageBytes;
          // Announce the whole stage: this block's A and B part and the peer's B part, which the
          // peer's multicast counts on this same barrier. Then issue the boxes.
          sm90::mbarrier_arrive_expect_tx(&full[s], Cfg::kStageBytes);
          TA::load(&tmA, sA, &full[s], block_m0, kt * kBK);
          TBPart::load(&tmB, sA + TA::kBytes + rank * TBPart::kBytes, &full[s], part_n0, kt * kBK, kClusterMask);
          if (++s == kStages) s = 0, ++u;
        }
      }
    }
  } else {
    // A consumer. The registers the producer gave back: the accumulators, C of the previous tile in
    // 16 bits and the epilogue fit without spilling.
    sm90::setmaxnreg_inc<kConsumerRegs>();
    // This consumer's rows: 64·cw .. 64·cw + 63 of the tile. wg is the same in the 32 lanes of a warp,
    // but the compiler cannot know that of threadIdx.x / 128; lane 0's value, shuffled to all, it can.
    // So what is made from cw below (A's descriptor) is kept in uniform registers, where wgmma takes
    // its descriptors, rather than moved there before every wgmma.
    const int cw = __shfl_sync(0xffffffffu, wg, 0) - 1;
    float acc[kBN / 2];  // (128): this warpgroup's m64n256 fp32 fragment (sm90::wgmma_m64nNk16)
    // (64): the previous tile's C, alpha applied, rounded to C's type, two columns to a register
    // (gemm_tma::pack_accumulators), until its rounds have staged it; with its place in C.
    uint32_t packed[kBN / 4];
    int pending = 0;  // its rounds still to go: 4 … 0
    int32_t packed_m0 = 0, packed_n0 = 0;
    const uint32_t smem0 = sm90::smem_address(smem);
    unsigned char* slots = smem + Cfg::kStagingOffset + cw * kCStagingBytes;  // this warpgroup's two C slots
    const bool issuer = tid % kWarpgroup == 0;  // issues this warpgroup's TMA stores and waits on them
    // Lane 0 releases stage j for this warp in both blocks: one of the 16 arrivals of that use on
    // empty[j] of each (this block's own through its cluster address: one code path). Its
    // wgmma_wait_group has completed this warp's reads of the stage, so either producer may refill it
    // (sm90::mbarrier_arrive_cluster says why the default semantics suffice and what the .cluster ones
    // cost). Lane 0 speaks for the warp: the wait before it is warp-synchronous. empty[0] of both
    // blocks is mapped once; empty[j] is 8·j bytes on in each.
    const uint32_t empty_at[kClusterM] = {sm90::mapa_shared_cluster(empty, 0), sm90::mapa_shared_cluster(empty, 1)};
    static_assert(kClusterM == 2, "empty_at's two blocks");
    auto release = [&](int j) {
      if (tid % 32 != 0) return;
#pragma unroll
      for (int r = 0; r < kClusterM; ++r) sm90::mbarrier_arrive_cluster(empty_at[r] + j * uint32_t(sizeof(uint64_t)));
    };
    // Stage 0's operand descriptors for this warpgroup (its 64 rows of A, all of B, k = 0): stage s and
    // k slice ks are the same descriptors s·48 KiB + ks·(one slice) bytes on (TA::kSliceBytes), one add.
    const uint64_t desc_a = TA::descriptor(smem0, cw * kMmaM, 0);
    const uint64_t desc_b = TB::descriptor(smem0 + TA::kBytes, 0, 0);
    // Round `round` (a constant, so that `packed` stays in registers) of the packed tile: box `round`
    // through slot round % 2.
    auto store_round = [&](auto round_constant) {
      constexpr int round = decltype(round_constant)::value;
      unsigned char* slot = slots + (round % kCSlots) * kCBoxBytes;
      // The store that used this slot last, two boxes back, has read it (the one box back may still
      // be reading the other slot) …
      if (issuer) sm90::cp_async_bulk_wait_group_read<kCSlots - 1>();
      // … which every thread of this warpgroup learns here before it overwrites the slot.
      sm90::bar_sync(1 + cw, kWarpgroup);
      stage_packed_box<kBN>(slot, packed, round);
      sm90::fence_proxy_async();  // this thread's stmatrix writes, visible to the TMA unit's reads
      // Every thread's writes are fenced before the store reads them.
      sm90::bar_sync(1 + cw, kWarpgroup);
      if (issuer) {
        sm90::tma_store_2d(&tmC, packed_n0 + round * kCBoxCols, packed_m0, slot);
        sm90::cp_async_bulk_commit_group();  // one group per round: what the wait above counts
      }
    };
    // The next pending round, if any (every thread of the warpgroup agrees on `pending`).
    auto next_round = [&] {
      static_assert(kCRounds == 4, "the rounds below");
      if (pending == 4) store_round(std::integral_constant<int, 0>{});
      else if (pending == 3) store_round(std::integral_constant<int, 1>{});
      else if (pending == 2) store_round(std::integral_constant<int, 2>{});
      else if (pending == 1) store_round(std::integral_constant<int, 3>{});
      if (pending > 0) --pending;
    };
    // The stage of the next k-tile and the parity of its use, over all of this cluster's tiles (the
    // producer's count); and the stage of the k-tile before it, the one to release.
    int s = 0, previous = kStages - 1;
    uint32_t parity = 0;
    for (int64_t t = cluster; t < schedule.tiles(); t += clusters) {
      int32_t m0, n0;
      schedule.tile(t, m0, n0);
      const int32_t block_m0 = m0 + int32_t(rank) * kBM;  // past M for a rank-1 block in a last, odd tile-row
      for (int kt = 0; kt < k_tiles; ++kt) {
        // The k-tile has landed in stage s: A, this block's B part and the peer's.
        sm90::mbarrier_wait_parity(&full[s], parity);
        const uint32_t stage = uint32_t(s) * Cfg::kStageBytes;
        // Required before a batch of wgmma, and here also after the previous tile's rounding read the
        // accumulators. The previous k-tile's products may still be running: products of the same shape into
        // the same accumulators are ordered by the hardware, no wait is needed for them.
        sm90::wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < kBK / kWgmmaK; ++ks)
          // The tile's first product overwrites the accumulators (the previous tile's C): scale-d = 0.
          sm90::wgmma_m64nNk16<kBN, T, kTransA, !kTransB>(
              acc, sm90::matrix_descriptor_advance(desc_a, stage + ks * TA::kSliceBytes),
              sm90::matrix_descriptor_advance(desc_b, stage + ks * TB::kSliceBytes), kt > 0 || ks > 0);
        sm90::wgmma_commit_group();
        // The previous k-tile's group is done (this warp's share): its stage is no longer read by this
        // warp. This k-tile's group stays in flight, so the tensor cores work through the release.
        sm90::wgmma_wait_group<1>();
        // At kt = 0 the previous k-tile is the previous tile's last, released at that tile's end.
        if (kt > 0) release(previous);
        // The previous tile's C, a round at a time, while this k-tile's products run. `packed` is no
        // operand of theirs: the warps may read it while the wgmma writes the accumulators.
        next_round();
        previous = s;
        if (++s == kStages) s = 0, parity ^= 1;
      }
      sm90::wgmma_wait_group<0>();     // the tile's last products are done: the accumulators are final
      sm90::wgmma_fence_operand(acc);  // no read of them above that wait
      // The tile's last k-tile (stage `previous`) is released now, as in v8: both producers then fill all four
      // stages with the next tile's first k-tiles. Every k-tile gets its 16 arrivals in each block, the
      // block's last tile's last ones too (no producer waits for those; the closing cluster barrier
      // keeps the peer alive until they have landed).
      release(previous);

      const int32_t c_m0 = block_m0 + cw * kMmaM;  // this warpgroup's first row of C: m0 ≤ 2^31 − 256, + 192 fits
      if (c_tma) {
        // A tile of fewer than four k-tiles has run fewer rounds of the previous tile's C than there
        // are: the rest go now, before `packed` takes this tile's.
        while (pending > 0) next_round();
        // alpha = 1, the common case, rounds without the 128 multiplies.
        const bool scale = alpha != 1.0f;
        if (c_dtype == FS_FP16) {
          if (scale) pack_accumulators<__half, kBN>(packed, acc, alpha);
          else pack_accumulators<__half, kBN>(packed, acc);
        } else {
          if (scale) pack_accumulators<__nv_bfloat16, kBN>(packed, acc, alpha);
          else pack_accumulators<__nv_bfloat16, kBN>(packed, acc);
        }
        pending = kCRounds, packed_m0 = c_m0, packed_n0 = n0;
      } else {
        store_accumulators<kBN>(C, c_dtype, ldc, M, N, c_m0, n0, acc, alpha, beta, c_pairs);
      }
    }
    // The block's last tile has no next tile to hide under: its rounds go now. Then the block's shared
    // memory must outlive the last stores' reads of the slots.
    while (pending > 0) next_round();
    if (c_tma && issuer) sm90::cp_async_bulk_wait_group_read<0>();
  }
  // Neither block may exit while the other can still reach its shared memory: the peer's multicasts
  // into this block's stages (all waited for on full[] by this block's consumers before they arrive
  // here) and the peer's consumers' arrivals on this block's empty[] (made before they arrive here;
  // the arrive's release orders them first). Every thread of both blocks arrives, the producer's
  // idle ones included.
  sm90::barrier_cluster_arrive();
  sm90::barrier_cluster_wait();
}

}  // namespace fs::gemm_tma::v12
