// Host/device conversions between the element types and float/double, in one place.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#ifdef __CUDACC__
#define FS_HD __host__ __device__
#else
#define FS_HD
#endif

namespace fs {

template <class T>
FS_HD inline float to_float(T x) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(x);
  else return static_cast<float>(x);
}

template <class T>
FS_HD inline T from_float(float x) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(x);
  else return static_cast<T>(x);
}

template <class T>
inline double to_double(T x) {
  if constexpr (std::is_integral_v<T>) return static_cast<double>(x);
  else return static_cast<double>(to_float(x));
}

}  // namespace fs
