// flashstages · stage 07 gemm · v1 — TMA loads, mbarriers, wgmma: one warpgroup, two stages (fp16, bf16).
//
// What changes from stage 06 v9 (mma.sync, 128×256 tiles, 8 warps, a 4-stage cp.async pipeline):
//  1. TMA loads the tiles: one thread issues one cp.async.bulk.tensor per 64-wide box
//     (sm90::tma_load_2d); the hardware walks the rows, zero-fills past the matrix and writes the
//     128-byte swizzle, where v9 had 256 threads compute addresses, bounds and swizzles for 16 cp.async.
//  2. An mbarrier per stage says when a tile has landed (arrive.expect_tx, then try_wait.parity): no
//     cp.async groups to count, no barrier to publish the copies.
//  3. wgmma.mma_async m64n128k16 reads A and B from shared memory through descriptors: one instruction
//     of the warpgroup does 64×128×16, 16 times an m16n8k16; no ldmatrix, no fragment registers. The
//     descriptors' layout and wgmma's transpose bits serve every transpose.
// Why it is faster: the address work, the fragment loads and most instructions per product are gone.
// What it still lacks: the warpgroup waits for its own products (wgmma_wait_group<0>) before a stage is
// refilled, so the tensor cores idle at every k-tile; v2 deepens the pipeline and widens the tile.
//
// Run: build/h100/stages/07_tuned_tma/gemm/stage07_gemm --dtype fp16 --version v1
//      build/h100/stages/07_tuned_tma/gemm/stage07_gemm_bench --benchmark_filter='stage07/gemm/v1/|cublas/fp16'
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
// The protocol, per k-tile kt (stage s = kt % 2, the (kt / 2)-th use of that stage):
//   prologue   thread 0: init full[0], full[1] (1 arrival each); fence; __syncthreads
//              thread 0: expect_tx(full[s], 32 KiB); TMA A box(es), B box(es) → stage s   (kt = 0, 1)
//   kt         all:      wait full[s] for parity (kt / 2) & 1                 tile kt has landed
//              all:      wgmma_fence; 4 k16 steps × 2 wgmma (rows 0-63, 64-127); commit
//              all:      wgmma_wait_group<0>                                 stage s is no longer read
//              all:      __syncthreads                                       … by any of the 4 warps
//              thread 0: expect_tx(full[s]); TMA tile kt + 2 → stage s        (if there is one)
//
// Block: one warpgroup (4 warps, 128 threads) per 128×128 tile of C; warp w owns rows 16w .. 16w+15 of
// each m64 half. Registers: two m64n128 fp32 accumulators, 2 × 64 = 128 per thread. Shared memory:
// 2 stages × (128×64 A + 128×64 B) × 2 bytes = 64 KiB, 1 KiB of alignment slack, two 8-byte barriers.
// Tails: any M, N, K ≥ 1. Boxes reaching past M, N or K arrive zero-filled (so the last k-tile's
// columns past K add 0·0, and rows past M, N compute zeros); the epilogue stores only inside C.
// Alignment: A and B 16-byte aligned with rows a multiple of 16 bytes (TMA), refused in validation
// otherwise; C needs only its element alignment (pair stores where C allows).

namespace fs::gemm_tma::v1 {

constexpr int kBM = 128, kBN = 128;  // block tile (k: kBK = 64)
constexpr int kStages = 2;
constexpr int kThreads = kWarpgroup;  // one warpgroup
constexpr int kMmaM = 64;            // rows of one wgmma; kBM / kMmaM = 2 per k16 step

template <bool kTransA, bool kTransB>
struct Config {
  using TA = TileA<kTransA, kBM>;  // (128, 64) K-major or (64, 128) M-major, swizzled
  using TB = TileB<kTransB, kBN>;  // (128, 64) K-major or (64, 128) N-major, swizzled
  static constexpr int kStageBytes = TA::kBytes + TB::kBytes;  // 32768: a multiple of 1024
  // Stages from a 1024-byte boundary (the runtime does not promise more than 16 for dynamic shared
  // memory, hence the slack), then one mbarrier per stage.
  static constexpr std::size_t kSmemBytes = 1024 + std::size_t(kStages) * kStageBytes + kStages * sizeof(uint64_t);
};

// grid: one block per 128×128 tile of C (1D, row-major order); block: 128 threads, one warpgroup.
// T: __half or __nv_bfloat16. tmA, tmB: A and B's tensor maps (gemm_tma::encode_operand_maps<128, 128>).
// c_dtype: FS_FP32, FS_FP16 or FS_BF16. c_pairs: C's base and ldc keep even columns 2-element aligned.
template <class T, bool kTransA, bool kTransB>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_tma_v1_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, int64_t M,
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

  float acc[kBM / kMmaM][kBN / 2];  // (2 m64 halves, 64): the m64n128 fp32 fragments (sm90::wgmma_m64nNk16)
  const uint32_t smem0 = sm90::smem_address(smem);
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % kStages;
    sm90::mbarrier_wait_parity(&full[s], uint32_t(kt / kStages) & 1);  // tile kt has landed in stage s
    const uint32_t sA = smem0 + s * Cfg::kStageBytes, sB = sA + TA::kBytes;
    sm90::wgmma_fence();  // the accumulators' last writes (previous tile's wgmma) settled before reuse
#pragma unroll
    for (int ks = 0; ks < kBK / kWgmmaK; ++ks)
#pragma unroll
      for (int mi = 0; mi < kBM / kMmaM; ++mi)
        // The first product of the tile overwrites the (uninitialized) accumulators: scale-d = 0.
        sm90::wgmma_m64nNk16<kBN, T, kTransA, !kTransB>(acc[mi], TA::descriptor(sA, mi * kMmaM, ks),
                                                       TB::descriptor(sB, 0, ks), kt > 0 || ks > 0);
    sm90::wgmma_commit_group();
    sm90::wgmma_wait_group<0>();  // this thread's share of tile kt's products is done reading stage s
    // All four warps are done with stage s (a warp's wait covers only its own share): thread 0 may
    // now let TMA overwrite it.
    __syncthreads();
    if (tid == 0 && kt + kStages < k_tiles) load_tile(kt + kStages);
  }
#pragma unroll
  for (int mi = 0; mi < kBM / kMmaM; ++mi) sm90::wgmma_fence_operand(acc[mi]);  // no read above the last wait

  auto store = [&](auto* c_out) {
#pragma unroll
    for (int mi = 0; mi < kBM / kMmaM; ++mi)
      store_accumulators<kBN>(c_out, ldc, M, N, m0 + mi * kMmaM, n0, acc[mi], alpha, beta, c_pairs);
  };
  if (c_dtype == FS_FP16) store(static_cast<__half*>(C));
  else if (c_dtype == FS_BF16) store(static_cast<__nv_bfloat16*>(C));
  else store(static_cast<float*>(C));
}

}  // namespace fs::gemm_tma::v1
