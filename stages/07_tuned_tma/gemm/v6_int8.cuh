// flashstages · stage 07 gemm · v6 — INT8: v4's persistent kernel on wgmma s8·s8 → s32, exact.
//
// What changes from v4 (persistent, warp-specialized, fp16/bf16 → fp32 accumulators):
//  1. wgmma.mma_async m64n256k32.s32.s8.s8 (sm90::wgmma_m64nNk32_s8) in place of m64n256k16.f32.f16:
//     the same 64×256 accumulator shape, int32, k = 32 per instruction.
//  2. The k-tile is 128 int8 deep: a tile row is still 128 bytes, so the tiles, swizzle, TMA boxes,
//     descriptors, 4-stage ring, mbarrier protocol and tile schedule are v4's byte for byte.
//  3. One layout, A stored M×K and B N×K (cuBLASLt's int8 layout): integer wgmma reads K-major tiles
//     only; the other three are refused with FS_ERR_UNSUPPORTED_LAYOUT (GemmSupport::layouts).
//  4. The epilogue stores int32 (gemm::store_pair's int32 form: fp64 alpha and beta, 8-byte pairs).
// Why it is faster than fp16 v4: the same shared-memory bytes and wgmma per k-tile carry twice the
// multiply-adds, and the tensor cores run int8 at twice their fp16 rate; the int32 epilogue, as wide
// as v4's, weighs twice as much against a main loop half as long per tile.
// What it does not do: the other three layouts (they would need the tile transposed in shared memory,
// as stage 06 v10 does); int8 or fp32 C; the epilogue still idles the tensor cores, as v4's.
//
// Run: build/h100/stages/07_tuned_tma/gemm/stage07_gemm --dtype int8 --version v6 --m 8192 --n 8192 --k 8192
//      build/h100/stages/07_tuned_tma/gemm/stage07_gemm_bench --benchmark_filter='int8/M:(4096/N:4096/K:4096|8192/N:8192/K:8192)'
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "stages/07_tuned_tma/gemm/epilogue.cuh"
#include "stages/07_tuned_tma/gemm/scheduler.cuh"
#include "stages/07_tuned_tma/gemm/tiles.cuh"

// A int8 stored M×K (row-major), B int8 stored N×K (trans_b: cuBLASLt's int8 layout, "TN"), C int32:
// C = alpha·acc + beta·C evaluated in fp64 and rounded to nearest int32 (stage 06 v8/v10's contract:
// exact for integer alpha and beta while the result fits). Any other pair of transposes is refused
// before any launch with FS_ERR_UNSUPPORTED_LAYOUT (GemmSupport::layouts).
//
// The protocol, block and registers are v4's (v4_persistent.cuh says why they hold): stage s = it % 4
// of the block's k-tile count it, full[s] completed by the producer's expect_tx and 48 KiB of TMA
// transactions, empty[s] by one arrival per consumer warp; producer setmaxnreg.dec 40, consumers .inc 232.
// Registers: one m64n256 int32 accumulator, 128 per consumer thread (ptxas, CUDA 13.0, -Xptxas -v:
// 168 per thread at launch, the launch bounds' cap; no spills, no stack).
// Shared memory: v4's, 4 stages × 48 KiB = 192 KiB, 1 KiB of alignment slack, eight 8-byte barriers.
// Tails: any M, N, K ≥ 1: every tile has k_tiles = ⌈K / 128⌉ ≥ 1, the boxes past K, M or N arrive as
// zeros (zero products), the epilogue stores only inside C.
// Alignment: A and B 16-byte aligned, lda and ldb multiples of 16 (bytes = int8 elements: TMA's rows);
// C 4-byte aligned (int32). Exactness: |acc| ≤ K·2^14, inside int32 for K ≤ 131071.

namespace fs::gemm_tma::v6 {

constexpr int kBM = 128, kBN = 256;  // block tile, as v4's (k: kBK8 = 128 int8)
constexpr int kStages = 4;
constexpr int kGroupM = 16;  // tile-rows per group of the schedule (Schedule), as v4's
constexpr int kMmaM = 64;                                // rows of one wgmma: one per consumer warpgroup
constexpr int kConsumers = kBM / kMmaM;                  // two consumer warpgroups
constexpr int kThreads = (1 + kConsumers) * kWarpgroup;  // the producer warpgroup first: 384 threads
constexpr int kConsumerWarps = kConsumers * kWarpgroup / 32;  // 8: the arrivals that release a stage

// Registers per thread: as v4. __launch_bounds__(384, 1) caps the kernel at 168, the producer's .dec
// gives 128 × (168 − 40) to the block's pool, the consumers' .inc takes 256 × (232 − 168): the same.
constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(kWarpgroup * kProducerRegs + kConsumers * kWarpgroup * kConsumerRegs <= kThreads * kLaunchRegs,
              "the consumers take no more registers than the producer gives back");

constexpr int kBK8 = kRowBytes;  // k per tile in int8: 128, one 128-byte swizzle row (v4: 64 fp16)
constexpr int kWgmmaK8 = 32;     // k of one wgmma.mma_async m64nNk32.s8 (32 bytes, as v4's k16 fp16)
static_assert(kBK8 / kWgmmaK8 == kBK / kWgmmaK, "as many wgmma per k-tile as v4: 4");

struct Config {
  using TA = TileA<false, kBM>;  // (128, 128 int8) K-major, swizzled: A stored M×K
  using TB = TileB<true, kBN>;   // (256, 128 int8) K-major, swizzled: B stored N×K
  static constexpr int kStageBytes = TA::kBytes + TB::kBytes;  // 49152: a multiple of 1024
  // Stages from a 1024-byte boundary (the runtime does not promise more than 16 for dynamic shared
  // memory, hence the slack), then two mbarriers per stage (full, empty).
  static constexpr std::size_t kSmemBytes = 1024 + std::size_t(kStages) * kStageBytes + 2 * kStages * sizeof(uint64_t);
};

// The order in which the blocks take C's tiles: v4's (gemm_tma::TileSchedule, groups of 16 tile-rows;
// v4_persistent.cuh says why 16).
using Schedule = TileSchedule<kBM, kBN, kGroupM>;

// grid: min(SMs, tiles) blocks, each looping over its tiles of C (Schedule); block: 384 threads,
// three warpgroups.
// tmA, tmB: A's and B's tensor maps, both K-major (gemm_tma::encode_operand_maps<128, 256>, int8:
// boxes of 128 × 128 and 128 × 256 bytes). C: int32. c_pairs: C's base and ldc keep even columns
// 8-byte aligned.
__global__ void __launch_bounds__(kThreads, 1)
    gemm_tma_v6_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, int64_t M,
                       int64_t N, int64_t K, float alpha, float beta, int32_t* __restrict__ C, int64_t ldc,
                       bool c_pairs) {
  using TA = Config::TA;
  using TB = Config::TB;
  extern __shared__ unsigned char smem_raw[];
  // (stages, TA then TB), each stage 1024-byte aligned; then full[kStages], empty[kStages].
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kStages * Config::kStageBytes);
  uint64_t* empty = full + kStages;

  const Schedule schedule(M, N);
  const int tid = threadIdx.x;
  const int wg = tid / kWarpgroup;  // 0: the producer; 1, 2: a consumer, rows 64·(wg − 1) .. of the tile
  const int k_tiles = int((K + kBK8 - 1) / kBK8);  // K < 2^31: the tensor maps refuse more

  // The barriers, as v4's: full[s] phase u completes when k-tile it = 4u + s of this block's sequence
  // has landed (the producer's expect_tx arrival and its 48 KiB), empty[s] phase u when the 8 consumer
  // warps no longer read it. Parity u & 1 names phase u: neither barrier can get two phases ahead of
  // its waiter (v4_persistent.cuh says why).
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
    // The producer: the warpgroup gives its registers back, one thread issues the loads.
    sm90::setmaxnreg_dec<kProducerRegs>();
    if (tid == 0) {
      int64_t it = 0;  // k-tiles issued so far, over all of this block's tiles
      for (int64_t t = blockIdx.x; t < schedule.tiles(); t += gridDim.x) {
        int32_t m0, n0;
        schedule.tile(t, m0, n0);
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
          const int s = int(it % kStages);
          const int64_t u = it / kStages;
          // Use u of stage s needs use u − 1 consumed (phase u − 1 of empty[s]); the acquire orders the
          // consumers' tensor-core reads of the stage before the TMA writes below.
          if (u > 0) sm90::mbarrier_wait_parity(&empty[s], uint32_t(u - 1) & 1);
          unsigned char* sA = smem + s * Config::kStageBytes;
          sm90::mbarrier_arrive_expect_tx(&full[s], Config::kStageBytes);  // announce the bytes, then issue the boxes
          TA::load(&tmA, sA, &full[s], m0, kt * kBK8);  // coordinates in int8 elements: k0 = 128·kt
          TB::load(&tmB, sA + TA::kBytes, &full[s], n0, kt * kBK8);
        }
      }
    }
    // No thread of the producer touches shared memory or a barrier again: the loads in flight complete
    // on full[] whether or not their issuing thread still runs.
  } else {
    // A consumer, with the registers the producer gave back.
    sm90::setmaxnreg_inc<kConsumerRegs>();
    const int cw = wg - 1;  // this consumer's rows: 64·cw .. 64·cw + 63 of the tile
    int32_t acc[kBN / 2];   // (128): this warpgroup's m64n256 int32 fragment (sm90::wgmma_m64nNk32_s8)
    const uint32_t smem0 = sm90::smem_address(smem);
    int64_t it = 0;  // k-tiles consumed so far, over all of this block's tiles: the producer's count
    for (int64_t t = blockIdx.x; t < schedule.tiles(); t += gridDim.x) {
      int32_t m0, n0;
      schedule.tile(t, m0, n0);
      for (int kt = 0; kt < k_tiles; ++kt, ++it) {
        const int s = int(it % kStages);
        sm90::mbarrier_wait_parity(&full[s], uint32_t(it / kStages) & 1);  // k-tile it has landed in stage s
        const uint32_t sA = smem0 + s * Config::kStageBytes, sB = sA + TA::kBytes;
        // Required before a batch of wgmma, and here also after the previous tile's epilogue read the
        // accumulators; k-tile it − 1's products into the same accumulators are ordered by the hardware.
        sm90::wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < kBK8 / kWgmmaK8; ++ks)
          // k = 32·ks .. 32·ks + 31 of the k-tile: 32 bytes into each row, OperandTile::descriptor's step.
          // The tile's first product overwrites the accumulators (the previous tile's C): scale-d = 0.
          sm90::wgmma_m64nNk32_s8<kBN>(acc, TA::descriptor(sA, cw * kMmaM, ks), TB::descriptor(sB, 0, ks),
                                       kt > 0 || ks > 0);
        sm90::wgmma_commit_group();
        // k-tile it − 1's group is done (this warp's share); k-tile it's stays in flight.
        sm90::wgmma_wait_group<1>();
        // This warp releases k-tile it − 1's stage: one of the 8 arrivals of that use's phase of empty[].
        // At kt = 0 the previous k-tile is the previous tile's last, released at that tile's end.
        if (kt > 0 && tid % 32 == 0) sm90::mbarrier_arrive(&empty[(it - 1) % kStages]);
      }
      sm90::wgmma_wait_group<0>();     // the tile's last products are done: the accumulators are final
      sm90::wgmma_fence_operand(acc);  // no read of them above that wait
      // The tile's last k-tile is released before the epilogue, so the producer fills all four stages
      // with the next tile's first k-tiles while this warp stores C.
      if (tid % 32 == 0) sm90::mbarrier_arrive(&empty[(it - 1) % kStages]);

      store_accumulators<kBN>(C, ldc, M, N, int64_t(m0) + cw * kMmaM, n0, acc, alpha, beta, c_pairs);
    }
  }
}

}  // namespace fs::gemm_tma::v6
