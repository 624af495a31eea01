// flashstages · ceilings — the kernels (ceilings.h says what they are for).
//
// Every loop body is kChains independent instructions of one kind, so that a warp always has one whose
// operands are ready; kChains = 8 chains × several warps per scheduler hide the latency of every
// instruction measured here (FFMA 4 cycles, mma.sync and MUFU more). The loop's counter, compare and
// branch are spread over an unrolled body. What each trip does is written next to its loop; the
// *_flops / *_ops / *_bytes functions count exactly that, and the SASS (cuobjdump -sass) shows one
// instruction of the kind per chain and trip.
#include "ceilings/ceilings.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "common/device/sm80.cuh"
#include "common/tools/check.h"

namespace fs::ceilings {

namespace {

// Each thread's first element of an array with `per_thread` elements per thread.
__device__ __forceinline__ int64_t thread_offset(int per_thread) {
  return (int64_t(blockIdx.x) * kThreads + threadIdx.x) * per_thread;
}

// kChains chains per thread of x = step(x), unrolled kUnroll times.
template <int kUnroll, class Step>
__global__ void __launch_bounds__(kThreads) chain_kernel(const float* in, float* out, int iters, Step step) {
  const int64_t at = thread_offset(kChains);
  float x[kChains];
  for (int c = 0; c < kChains; ++c) x[c] = in[at + c];
#pragma unroll kUnroll
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = step(x[c]);
  for (int c = 0; c < kChains; ++c) out[at + c] = x[c];
}

// One FFMA: 2 FLOP. Unrolled 16 times: an FFMA warp-instruction takes a scheduler's only issue slot of
// its cycle, so the loop's counter, compare and branch would cost 3 of every 35 slots at 4 (measured:
// 92%).
struct FfmaStep {
  float a, b;
  __device__ float operator()(float x) const { return fmaf(x, a, b); }
};
constexpr int kFfmaUnroll = 16;

// One MUFU.EX2: x → 2^(−x) maps [0, 1] into [0.5, 1], so the chains never leave that range. A MUFU
// warp-instruction occupies the 16-lane unit for several cycles: the loop's own instructions fit in
// between, and 4 is enough unrolling.
struct Ex2Step {
  __device__ float operator()(float x) const { return sm80::ex2_approx_ftz(-x); }
};
constexpr int kEx2Unroll = 4;

// One warp: 32 lanes, each holding its 4 A registers, 2 B registers and kChains × 4 accumulators.
template <class T>
__global__ void __launch_bounds__(kThreads)
    mma_m16n8k16_kernel(const uint32_t* a_in, const uint32_t* b_in, const float* d_in, float* d_out, int iters) {
  const int64_t lane = thread_offset(1);  // warp·32 + lane over the grid
  const uint32_t a[4] = {a_in[4 * lane], a_in[4 * lane + 1], a_in[4 * lane + 2], a_in[4 * lane + 3]};
  const uint32_t b0 = b_in[2 * lane], b1 = b_in[2 * lane + 1];
  float d[kChains][4];  // kChains 16×8 fp32 tiles, this lane's 4 values of each
  for (int c = 0; c < kChains; ++c)
    for (int r = 0; r < 4; ++r) d[c][r] = d_in[(lane * kChains + c) * 4 + r];
#pragma unroll 2
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int c = 0; c < kChains; ++c) sm80::mma_m16n8k16<T>(d[c], a, b0, b1);  // 16·8·16 FMA: 4096 FLOP
  for (int c = 0; c < kChains; ++c)
    for (int r = 0; r < 4; ++r) d_out[(lane * kChains + c) * 4 + r] = d[c][r];
}

__global__ void __launch_bounds__(kThreads)
    mma_m16n8k32_s8_kernel(const uint32_t* a_in, const uint32_t* b_in, const int32_t* d_in, int32_t* d_out, int iters) {
  const int64_t lane = thread_offset(1);
  const uint32_t a[4] = {a_in[4 * lane], a_in[4 * lane + 1], a_in[4 * lane + 2], a_in[4 * lane + 3]};
  const uint32_t b0 = b_in[2 * lane], b1 = b_in[2 * lane + 1];
  int32_t d[kChains][4];  // kChains 16×8 int32 tiles
  for (int c = 0; c < kChains; ++c)
    for (int r = 0; r < 4; ++r) d[c][r] = d_in[(lane * kChains + c) * 4 + r];
#pragma unroll 2
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int c = 0; c < kChains; ++c) sm80::mma_m16n8k32_s8(d[c], a, b0, b1);  // 16·8·32 multiply-adds: 8192 ops
  for (int c = 0; c < kChains; ++c)
    for (int r = 0; r < 4; ++r) d_out[(lane * kChains + c) * 4 + r] = d[c][r];
}

// A shared-memory load that is performed on every trip. The values never change, so a plain load
// would be read once and kept in a register; even `asm volatile` only binds the C++ compiler, and ptxas
// then merged the repeated ld.shared of one address (the SASS had 15 loads where the loop has 40).
// ld.volatile obliges ptxas to issue each one. V is float (32-bit load) or float4 (128-bit load).
template <class V>
__device__ __forceinline__ V ld_volatile_shared(uint32_t address) {
  V v;
  if constexpr (sizeof(V) == 4) {
    asm volatile("ld.volatile.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(address) : "memory");
  } else {
    asm volatile("ld.volatile.shared.v4.f32 {%0,%1,%2,%3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(address) : "memory");
  }
  return v;
}

__device__ __forceinline__ float sum_of(float v) { return v; }
__device__ __forceinline__ float sum_of(float4 v) { return (v.x + v.y) + (v.z + v.w); }

// Each thread stages its own kChains values of V in column threadIdx.x of `tile` and reads back only
// those: consecutive lanes read consecutive addresses, so a 32-bit load is one 128-byte wavefront and a
// 128-bit load four, with no bank conflict. No barrier: no thread reads what another wrote.
template <class V>
__global__ void __launch_bounds__(kThreads) lds_kernel(const V* values, float* out, int iters) {
  __shared__ V tile[kChains][kThreads];  // kChains × kThreads values of V
  for (int c = 0; c < kChains; ++c) tile[c][threadIdx.x] = values[c * kThreads + threadIdx.x];
  const uint32_t base = sm80::smem_address(&tile[0][threadIdx.x]);
  float sum[kChains] = {};
#pragma unroll 4
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int c = 0; c < kChains; ++c)
      sum[c] += sum_of(ld_volatile_shared<V>(base + c * kThreads * sizeof(V)));  // one load of sizeof(V) bytes per lane
  float total = 0.0f;
  for (int c = 0; c < kChains; ++c) total += sum[c];
  out[thread_offset(1)] = total;
}

__global__ void __launch_bounds__(kThreads) copy_kernel(const float4* in, float4* out, int64_t count) {
  const int64_t stride = int64_t(gridDim.x) * kThreads;
  for (int64_t i = thread_offset(1); i < count; i += stride) out[i] = in[i];  // 16 bytes read, 16 written
}

template <class F>
int64_t wave(F kernel) {
  int device = 0, sms = 0, per_sm = 0;
  FS_CUDA_CHECK(cudaGetDevice(&device));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  return int64_t(per_sm) * sms;
}

}  // namespace

Grid one_block_per_sm(int iters) {
  int device = 0, sms = 0, per_sm = 0, per_block = 0;
  FS_CUDA_CHECK(cudaGetDevice(&device));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  // Half an SM's shared memory and 1 KB more: two such blocks never fit (the H100: 228 KB per SM,
  // 115 KB per block), and one does (227 KB may be opted in to).
  const std::size_t reserved = std::size_t(per_sm) / 2 + 1024;
  if (reserved > std::size_t(per_block))
    throw_error("one_block_per_sm", "more than half an SM's shared memory cannot be opted in to", __FILE__, __LINE__);
  return Grid{sms, iters, reserved};
}

int64_t full_wave_blocks(Kernel kernel) {
  switch (kernel) {
    case Kernel::Ffma: return wave(chain_kernel<kFfmaUnroll, FfmaStep>);
    case Kernel::MmaF16: return wave(mma_m16n8k16_kernel<__half>);
    case Kernel::MmaBf16: return wave(mma_m16n8k16_kernel<__nv_bfloat16>);
    case Kernel::MmaS8: return wave(mma_m16n8k32_s8_kernel);
    case Kernel::Ex2: return wave(chain_kernel<kEx2Unroll, Ex2Step>);
    case Kernel::Lds32: return wave(lds_kernel<float>);
    case Kernel::Lds128: return wave(lds_kernel<float4>);
    case Kernel::Copy: return wave(copy_kernel);
  }
  return 0;
}

void ffma(const Grid& g, const float* in, float a, float b, float* out, cudaStream_t stream) {
  chain_kernel<kFfmaUnroll><<<g.blocks, kThreads, 0, stream>>>(in, out, g.iters, FfmaStep{a, b});
  FS_CUDA_CHECK_LAUNCH();
}
double ffma_flops(const Grid& g) { return 2.0 * kChains * double(g.iters) * double(g.threads()); }

// Opts `kernel` in to g's reserved shared memory where it is past the 48 KB every kernel may have.
template <class F>
void reserve_smem(F kernel, const Grid& g) {
  if (g.reserved_smem > 48 * 1024)
    FS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(g.reserved_smem)));
}

template <class T>
void mma_m16n8k16(const Grid& g, const uint32_t* a, const uint32_t* b, const float* d_in, float* d_out,
                  cudaStream_t stream) {
  reserve_smem(mma_m16n8k16_kernel<T>, g);
  mma_m16n8k16_kernel<T><<<g.blocks, kThreads, g.reserved_smem, stream>>>(a, b, d_in, d_out, g.iters);
  FS_CUDA_CHECK_LAUNCH();
}
template void mma_m16n8k16<__half>(const Grid&, const uint32_t*, const uint32_t*, const float*, float*, cudaStream_t);
template void mma_m16n8k16<__nv_bfloat16>(const Grid&, const uint32_t*, const uint32_t*, const float*, float*,
                                          cudaStream_t);
double mma_m16n8k16_flops(const Grid& g) { return 2.0 * 16 * 8 * 16 * kChains * double(g.iters) * double(g.warps()); }

void mma_m16n8k32_s8(const Grid& g, const uint32_t* a, const uint32_t* b, const int32_t* d_in, int32_t* d_out,
                     cudaStream_t stream) {
  reserve_smem(mma_m16n8k32_s8_kernel, g);
  mma_m16n8k32_s8_kernel<<<g.blocks, kThreads, g.reserved_smem, stream>>>(a, b, d_in, d_out, g.iters);
  FS_CUDA_CHECK_LAUNCH();
}
double mma_m16n8k32_ops(const Grid& g) { return 2.0 * 16 * 8 * 32 * kChains * double(g.iters) * double(g.warps()); }

void ex2(const Grid& g, const float* in, float* out, cudaStream_t stream) {
  chain_kernel<kEx2Unroll><<<g.blocks, kThreads, 0, stream>>>(in, out, g.iters, Ex2Step{});
  FS_CUDA_CHECK_LAUNCH();
}
double ex2_ops(const Grid& g) { return double(kChains) * double(g.iters) * double(g.threads()); }

void lds32(const Grid& g, const float* values, float* out, cudaStream_t stream) {
  lds_kernel<float><<<g.blocks, kThreads, 0, stream>>>(values, out, g.iters);
  FS_CUDA_CHECK_LAUNCH();
}
void lds128(const Grid& g, const float* values, float* out, cudaStream_t stream) {
  lds_kernel<float4><<<g.blocks, kThreads, 0, stream>>>(reinterpret_cast<const float4*>(values), out, g.iters);
  FS_CUDA_CHECK_LAUNCH();
}
double lds32_bytes(const Grid& g) { return 4.0 * kChains * double(g.iters) * double(g.threads()); }
double lds128_bytes(const Grid& g) { return 16.0 * kChains * double(g.iters) * double(g.threads()); }

void copy(int64_t blocks, const float4* in, float4* out, int64_t count, cudaStream_t stream) {
  copy_kernel<<<blocks, kThreads, 0, stream>>>(in, out, count);
  FS_CUDA_CHECK_LAUNCH();
}
double copy_bytes(int64_t count) { return 2.0 * 16.0 * double(count); }

}  // namespace fs::ceilings
