// flashstages · ceilings — what one instruction reaches on the GPU at hand.
//
// Each ceiling is a kernel that issues one kind of instruction as fast as the SMs accept it: the
// operands sit in registers (or, for the memory ceilings, stream through shared memory or DRAM), every
// thread or warp runs kChains independent chains so that no instruction waits for the previous one's
// result, and the grid is one full wave (as many blocks as fit on every SM at once). The rate such a
// loop reaches is the roof for a kernel built on that instruction: stage 04 and stage 06 on mma.sync
// are judged against `mma_m16n8k16`, not against the chip's datasheet figure, which Hopper reaches only
// through wgmma (stage 07).
//
// Every kernel is also checked (ceilings/test.cu): on small-integer inputs its result is exact, so a
// loop that the compiler shortened, or an operand layout read wrongly, fails the test.
//
//   build/<preset>/ceilings/ceilings_bench --benchmark_out=results/<gpu>/ceilings.json --benchmark_out_format=json
//   build/<preset>/ceilings/ceilings_test
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace fs::ceilings {

constexpr int kThreads = 256;  // threads per block: 8 warps
constexpr int kChains = 8;     // independent chains per thread (per warp for the mma ceilings)

// A launch: `blocks` blocks of kThreads threads, each thread (or warp) running `iters` trips of its
// loop. blocks = full_wave_blocks(...) fills every SM once. reserved_smem (the mma kernels only): dynamic
// shared memory each block asks for and never touches, so that fewer blocks fit on an SM.
struct Grid {
  int64_t blocks = 0;
  int iters = 0;
  std::size_t reserved_smem = 0;
  int64_t threads() const { return blocks * kThreads; }
  int64_t warps() const { return threads() / 32; }
};

enum class Kernel { Ffma, MmaF16, MmaBf16, MmaS8, Ex2, Lds32, Lds128, Copy };

// The number of blocks of `kernel` that fit on all SMs at once (occupancy × SMs).
int64_t full_wave_blocks(Kernel kernel);

// One block per SM: as many blocks as SMs, each reserving more than half an SM's shared memory so that
// no SM takes two. 8 warps per SM, 2 per scheduler: the occupancy at which stage 06's mma.sync kernels
// run (v9 and v10 hold 253-254 registers per thread, room for one block of 8 warps), where a full wave
// of the mma ceilings runs 16 per scheduler.
Grid one_block_per_sm(int iters);

// FFMA: kChains chains per thread of x = x·a + b. in/out: threads × kChains floats. 2 FLOP each.
void ffma(const Grid& g, const float* in, float a, float b, float* out, cudaStream_t stream = nullptr);
double ffma_flops(const Grid& g);

// mma.sync m16n8k16 (fp16 or bf16 in, fp32 accumulators): per warp kChains tiles D = A·B + D.
// a: warps × 32 lanes × 4 registers, b: warps × 32 × 2, d_in/d_out: warps × 32 × kChains × 4 floats,
// each lane's registers as sm80.cuh lays them out. T is __half or __nv_bfloat16.
template <class T>
void mma_m16n8k16(const Grid& g, const uint32_t* a, const uint32_t* b, const float* d_in, float* d_out,
                  cudaStream_t stream = nullptr);
double mma_m16n8k16_flops(const Grid& g);

// mma.sync m16n8k32 with signed 8-bit operands and int32 accumulators; same buffers, int32 D.
void mma_m16n8k32_s8(const Grid& g, const uint32_t* a, const uint32_t* b, const int32_t* d_in, int32_t* d_out,
                     cudaStream_t stream = nullptr);
double mma_m16n8k32_ops(const Grid& g);

// ex2.approx.ftz on the special-function unit: kChains chains per thread of x = 2^(−x).
void ex2(const Grid& g, const float* in, float* out, cudaStream_t stream = nullptr);
double ex2_ops(const Grid& g);

// Shared-memory loads: each thread stages kChains values in shared memory, then loads them back on
// every trip (conflict-free) and sums them. lds32 takes kThreads × kChains floats (32-bit loads),
// lds128 kThreads × kChains float4s, i.e. 4× as many floats (128-bit loads). out: threads floats.
void lds32(const Grid& g, const float* values, float* out, cudaStream_t stream = nullptr);
void lds128(const Grid& g, const float* values, float* out, cudaStream_t stream = nullptr);
double lds32_bytes(const Grid& g);
double lds128_bytes(const Grid& g);

// A streaming copy of `count` float4s, DRAM to DRAM: bytes read plus bytes written.
void copy(int64_t blocks, const float4* in, float4* out, int64_t count, cudaStream_t stream = nullptr);
double copy_bytes(int64_t count);

}  // namespace fs::ceilings
