// Stage 06 — GEMM. The problem every version solves, what each version accepts, the one launcher
// signature they share, and the validation each launcher runs before it touches the device.
//
//   C = alpha · op(A) · op(B) + beta · C, row-major; op(A) is M×K, op(B) is K×N, C is M×N.
//   A is stored M×K (lda >= K), or K×M when trans_a (lda >= M); B is stored K×N (ldb >= N), or N×K
//   when trans_b (ldb >= K); ldc >= N. beta = 0 never reads C.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "flashstages.h"
#include "status.h"

namespace fs {

using GemmParams = fs_gemm_params;

// A set of fs_dtype values, one bit each (FS_INT8 and FS_INT32 included, unlike attention's DType).
constexpr unsigned gemm_dtype_bit(int32_t t) { return 1u << t; }
const char* gemm_dtype_name(int32_t t);  // "fp32", "fp16", "bf16", "int8", "int32"; "?" otherwise
std::size_t gemm_dtype_size(int32_t t);  // bytes per element; 0 for an unknown code

// What one version accepts: one input type, a set of output types.
struct GemmSupport {
  int32_t ab_dtype;
  unsigned c_dtypes;
};

// Checks, in this order: null pointers (FS_ERR_NULL_POINTER), sizes (FS_ERR_INVALID_SIZE), leading
// dimensions (FS_ERR_INVALID_LEADING_DIM), dtypes (FS_ERR_UNSUPPORTED_DTYPE), and that every pointer is
// aligned to its element size (FS_ERR_MISALIGNED_POINTER). Wider alignment is never required: the
// versions with 16-byte loads check it themselves and fall back to element loads in the same kernel.
Status validate_gemm(const GemmParams& p, const GemmSupport& support);

// The element counts A, B and C span in memory: the last row needs only its used columns.
int64_t gemm_a_span(const GemmParams& p);
int64_t gemm_b_span(const GemmParams& p);
int64_t gemm_c_span(const GemmParams& p);

using GemmLauncher = Status (*)(const GemmParams&, cudaStream_t);

// How a version describes itself to the executable, the tests and the benchmarks.
struct GemmKernel {
  const char* stage;      // "stage06": the benchmark-name prefix
  const char* version;    // "v1"
  const char* technique;  // one line: what this version adds
  GemmLauncher launch;
  GemmSupport support;
};

// SIMT fp32 (simt.cu).
Status launch_gemm_v1(const GemmParams& params, cudaStream_t stream);  // shared-memory tiling
Status launch_gemm_v2(const GemmParams& params, cudaStream_t stream);  // 2D register blocking
Status launch_gemm_v3(const GemmParams& params, cudaStream_t stream);  // 128-bit loads
Status launch_gemm_v4(const GemmParams& params, cudaStream_t stream);  // warp tiling
Status launch_gemm_v5(const GemmParams& params, cudaStream_t stream);  // double buffering
// Tensor cores through WMMA (wmma.cu).
Status launch_gemm_v6(const GemmParams& params, cudaStream_t stream);  // fp16 WMMA
Status launch_gemm_v7(const GemmParams& params, cudaStream_t stream);  // fp16 WMMA, cp.async pipeline
Status launch_gemm_v8(const GemmParams& params, cudaStream_t stream);  // int8 WMMA, cp.async pipeline

extern const GemmKernel kGemmV1, kGemmV2, kGemmV3, kGemmV4, kGemmV5, kGemmV6, kGemmV7, kGemmV8;

}  // namespace fs
