// flashstages · stage 07 gemm · v2 — a 4-stage TMA pipeline and a 128×256 tile: two warpgroups (fp16, bf16).
//
// What changes from v1 (128×128×64, 2 stages, one warpgroup, wgmma_wait_group<0> before every refill):
//  1. wait_group<1>: tile kt's products keep the tensor cores busy while tile kt − 1's stage, whose
//     products that wait has retired, is refilled (v1 drained the wgmma queue once per k-tile).
//  2. Four stages instead of two: three tiles (144 KiB) in flight to cover global-memory latency.
//  3. A 128×256 tile per block, two warpgroups each owning 64 rows × 256 columns, one m64n256k16 per
//     k16 step.
// Why it is faster: no bubble at the k-tile boundary; per product, a quarter less traffic from global
// memory (128 + 256 rows for 128·256 outputs, v1 128 + 128 for 128·128) and a sixth less read from
// shared memory per instruction (m64n256: 64 + 256 rows for 64·256 products; m64n128: 64 + 128).
// What it still lacks: every warp waits and multiplies, and the block meets at a __syncthreads per
// k-tile before thread 0 refills (v3: warp specialization, an "empty" mbarrier per stage). At 192 KiB
// one block fills an SM, so nothing overlaps its prologue and epilogue (the persistent kernel, v4).
//
// Run: build/h100/stages/07_tuned_tma/gemm/stage07_gemm --dtype fp16 --version v2
//      build/h100/stages/07_tuned_tma/gemm/stage07_gemm_bench --benchmark_filter='stage07/gemm/v[12]/|cublas/fp16'
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
// The protocol, per k-tile kt (stage s = kt % 4, the (kt / 4)-th use of that stage):
//   prologue   thread 0: init full[0..3] (1 arrival each); fence; __syncthreads
//              thread 0: expect_tx(full[s], 48 KiB); TMA A box(es), B box(es) → stage s  (kt = 0 .. 3)
//   kt         all:      wait full[s] for parity (kt / 4) & 1                   tile kt has landed
//              all:      wgmma_fence; 4 k16 steps × 1 wgmma m64n256k16 (rows 64·wg ..); commit
//              all:      wgmma_wait_group<1>                   tile kt − 1's products are done: its
//                                                              stage (kt − 1) % 4 is no longer read
//              all:      __syncthreads                         … by any of the 8 warps
//              thread 0: expect_tx(full[(kt − 1) % 4]); TMA tile kt + 3 → that stage (if there is one)
//   after      all:      wgmma_wait_group<0>                   the last tile's products are done
//
// Block: two warpgroups (8 warps, 256 threads) per 128×256 tile of C; warpgroup wg owns rows 64·wg ..
// 64·wg+63, and warp w of it rows 16w .. 16w+15 of those. Registers: one m64n256 fp32 accumulator,
// 128 per thread (ptxas, CUDA 13.0: 154 in all, no spills). Shared memory: 4 stages × (128×64 A +
// 256×64 B) × 2 bytes = 192 KiB (more than the default 48 KiB: the launch opts in), 1 KiB of
// alignment slack, four 8-byte barriers.
// Tails: any M, N, K ≥ 1, as v1. Boxes reaching past M, N or K arrive zero-filled (the transaction
// count is always the whole box); the epilogue stores only inside C.
// Alignment: A and B 16-byte aligned with rows a multiple of 16 bytes (TMA), refused in validation
// otherwise; C needs only its element alignment (pair stores where C allows).

namespace fs::gemm_tma::v2 {

constexpr int kBM = 128, kBN = 256;  // block tile (k: kBK = 64)
constexpr int kStages = 4;
constexpr int kMmaM = 64;                          // rows of one wgmma: one per warpgroup
constexpr int kThreads = kBM / kMmaM * kWarpgroup;  // two warpgroups

template <bool kTransA, bool kTransB>
struct Config {
  using TA = TileA<kTransA, kBM>;  // (128, 64) K-major or (64, 128) M-major, swizzled
  using TB = TileB<kTransB, kBN>;  // (256, 64) K-major or (64, 256) N-major, swizzled
  static constexpr int kStageBytes = TA::kBytes + TB::kBytes;  // 49152: a multiple of 1024
  // Stages from a 1024-byte boundary (the runtime does not promise more than 16 for dynamic shared
  // memory, hence the slack), then one mbarrier per stage.
  static constexpr std::size_t kSmemBytes = 1024 + std::size_t(kStages) * kStageBytes + kStages * sizeof(uint64_t);
};

// grid: one block per 128×256 tile of C (1D, row-major order); block: 256 threads, two warpgroups.
// T: __half or __nv_bfloat16. tmA, tmB: A and B's tensor maps (gemm_tma::encode_operand_maps<128, 256>).
// c_dtype: FS_FP32, FS_FP16 or FS_BF16. c_pairs: C's base and ldc keep even columns 2-element aligned.
template <class T, bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_tma_v2_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, int64_t M,
                       int64_t N, int64_t K, float alpha, float beta, void* __restrict__ C, int64_t ldc,
                       int32_t c_dtype, bool c_pairs) {
  using Cfg = Config<kTransA, kTransB>;
  using TA = typename Cfg::TA;
  using TB = typename Cfg::TB;
  extern __shared__ unsigned char smem_raw[];
  // (stages, TA then TB), each stage 1024-byte aligned; then full[kStages].
  unsigned char* smem = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kStages * Cfg::kStageBytes);

  int32_t m0, n0;
  block_tile<kBM, kBN>(N, m0, n0);
  const int tid = threadIdx.x;
  const int wg = tid / kWarpgroup;  // this thread's warpgroup: rows 64·wg .. 64·wg+63 of the tile
  const int k_tiles = int((K + kBK - 1) / kBK);  // K < 2^31: the tensor maps refuse more

  // Thread 0 fills stage kt % kStages with k-tile kt: announce its bytes, then issue its boxes.
  auto load_tile = [&](int kt) {
    const int s = kt % kStages;
    unsigned char* sA = smem + s * Cfg::kStageBytes;
    sm90::mbarrier_arrive_expect_tx(&full[s], Cfg::kStageBytes);
    TA::load(&tmA, sA, &full[s], m0, kt * kBK);
    TB::load(&tmB, sA + TA::kBytes, &full[s], n0, kt * kBK);
  };

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) sm90::mbarrier_init(&full[s], 1);  // thread 0's expect_tx arrival
    sm90::fence_mbarrier_init();  // the inits are seen by the TMA unit that will complete them
  }
  __syncthreads();  // every thread sees the initialized barriers before it waits on one
  if (tid == 0)
    for (int kt = 0; kt < kStages && kt < k_tiles; ++kt) load_tile(kt);

  float acc[kBN / 2];  // (128): this warpgroup's m64n256 fp32 fragment (sm90::wgmma_m64nNk16)
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
      sm90::wgmma_m64nNk16<kBN, T, kTransA, !kTransB>(acc, TA::descriptor(sA, wg * kMmaM, ks),
                                                     TB::descriptor(sB, 0, ks), kt > 0 || ks > 0);
    sm90::wgmma_commit_group();
    // Tile kt − 1's group is done (this thread's share): its stage is no longer read by this warp.
    // Tile kt's group stays in flight, so the tensor cores work through the barrier and the refill.
    sm90::wgmma_wait_group<1>();
    const int next = kt - 1 + kStages;  // the tile that goes into tile kt − 1's stage
    if (kt > 0 && next < k_tiles) {
      // All eight warps are done with tile kt − 1's stage (a warp's wait covers only its own share):
      // thread 0 may now let TMA overwrite it. (The condition is the same in every thread.)
      __syncthreads();
      if (tid == 0) load_tile(next);
    }
  }
  sm90::wgmma_wait_group<0>();  // the last tile's products are done: the accumulators are final
  sm90::wgmma_fence_operand(acc);  // no read of them above that wait

  store_accumulators<kBN>(C, c_dtype, ldc, M, N, int64_t(m0) + wg * kMmaM, n0, acc, alpha, beta, c_pairs);
}

}  // namespace fs::gemm_tma::v2
