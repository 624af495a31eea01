// The GEMM epilogue, C = alpha·acc + beta·C, as every tensor-core GEMM kernel stores it from registers:
// one element (stage 06 v1 on), or two neighbouring columns of one row, the pair an mma.sync or wgmma
// accumulator fragment holds (stage 06 v9, v10; stage 07). beta = 0 never reads C.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace fs::gemm {

// ---- One element ---------------------------------------------------------------------------------
// beta = 0 must not read C: C may hold NaN (the tests poison it), and 0·NaN is NaN.
__device__ __forceinline__ void epilogue(float* c, float acc, float alpha, float beta) {
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}
// fp16 output: the fp32 value is rounded once, at the store.
__device__ __forceinline__ void epilogue(__half* c, float acc, float alpha, float beta) {
  *c = __float2half_rn(beta == 0.0f ? alpha * acc : alpha * acc + beta * __half2float(*c));
}
// bf16 output: the same, rounded to bf16.
__device__ __forceinline__ void epilogue(__nv_bfloat16* c, float acc, float alpha, float beta) {
  *c = __float2bfloat16_rn(beta == 0.0f ? alpha * acc : alpha * acc + beta * __bfloat162float(*c));
}
// int32 output: evaluated in fp64 and rounded to nearest (saturating at the int32 range), so it is
// exact whenever alpha and beta are integers and the result fits in int32.
__device__ __forceinline__ void epilogue(int32_t* c, int32_t acc, float alpha, float beta) {
  const double v = double(alpha) * double(acc) + (beta == 0.0f ? 0.0 : double(beta) * double(*c));
  *c = __double2int_rn(v);
}

// ---- Two columns of one row ----------------------------------------------------------------------
// The epilogue for two neighbouring columns of one row (an mma accumulator pair c[0..1] or c[2..3]),
// one 8-byte (fp32) or 4-byte (fp16, bf16) store when `pairs` says C allows it (base and ldc keep
// every even column 2-element aligned) and both columns are inside; element by element otherwise.
template <class TOut>
__device__ __forceinline__ void store_pair(TOut* C, int64_t ldc, int64_t M, int64_t N, int64_t m, int64_t n, float x,
                                           float y, float alpha, float beta, bool pairs) {
  if (m >= M || n >= N) return;
  TOut* c = C + m * ldc + n;
  if (pairs && n + 1 < N) {
    if constexpr (std::is_same_v<TOut, float>) {
      float2 v = make_float2(alpha * x, alpha * y);
      if (beta != 0.0f) {  // beta = 0 never reads C
        const float2 old = *reinterpret_cast<const float2*>(c);
        v.x += beta * old.x;
        v.y += beta * old.y;
      }
      *reinterpret_cast<float2*>(c) = v;
    } else if constexpr (std::is_same_v<TOut, __half>) {
      float2 v = make_float2(alpha * x, alpha * y);
      if (beta != 0.0f) {
        const float2 old = __half22float2(*reinterpret_cast<const __half2*>(c));
        v.x += beta * old.x;
        v.y += beta * old.y;
      }
      *reinterpret_cast<__half2*>(c) = __float22half2_rn(v);
    } else {
      float2 v = make_float2(alpha * x, alpha * y);
      if (beta != 0.0f) {
        const float2 old = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(c));
        v.x += beta * old.x;
        v.y += beta * old.y;
      }
      *reinterpret_cast<__nv_bfloat162*>(c) = __float22bfloat162_rn(v);
    }
    return;
  }
  epilogue(c, x, alpha, beta);
  if (n + 1 < N) epilogue(c + 1, y, alpha, beta);
}

// int32 output: the fp64 epilogue of each element, one 8-byte store of the pair.
__device__ __forceinline__ void store_pair(int32_t* C, int64_t ldc, int64_t M, int64_t N, int64_t m, int64_t n,
                                           int32_t x, int32_t y, float alpha, float beta, bool pairs) {
  if (m >= M || n >= N) return;
  int32_t* c = C + m * ldc + n;
  if (pairs && n + 1 < N) {
    const int2 old = beta != 0.0f ? *reinterpret_cast<const int2*>(c) : make_int2(0, 0);  // beta = 0: C unread
    const double a = alpha, b = beta == 0.0f ? 0.0 : double(beta);
    *reinterpret_cast<int2*>(c) = make_int2(__double2int_rn(a * x + b * old.x), __double2int_rn(a * y + b * old.y));
    return;
  }
  epilogue(c, x, alpha, beta);
  if (n + 1 < N) epilogue(c + 1, y, alpha, beta);
}

}  // namespace fs::gemm
