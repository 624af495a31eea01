// The element types, over fs_dtype: one vocabulary for attention and GEMM. A DType is a run-time
// value (a field of the params); Element<t> is the C++ type behind it, for the dispatch that turns
// the one into the other (common/lib/dispatch.h).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/lib/flashstages.h"

namespace fs {

enum class DType : int32_t {
  FP32 = FS_FP32,
  FP16 = FS_FP16,
  BF16 = FS_BF16,
  INT8 = FS_INT8,
  INT32 = FS_INT32,
  FP8_E4M3 = FS_FP8_E4M3
};

constexpr DType kAllDtypes[] = {DType::FP32, DType::FP16, DType::BF16, DType::INT8, DType::INT32, DType::FP8_E4M3};

// Is `code` (an int32 field of a C params struct) one of the fs_dtype values?
constexpr bool is_dtype(int32_t code) { return code >= FS_FP32 && code <= FS_FP8_E4M3; }

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::FP16: case DType::BF16: return 2;
    case DType::INT8: case DType::FP8_E4M3: return 1;
    default: return 4;
  }
}
const char* dtype_name(DType t);  // "fp32", "fp16", "bf16", "int8", "int32", "fp8_e4m3"
std::optional<DType> parse_dtype(std::string_view name);

// A set of dtypes, one bit each (the in_dtypes / out_dtypes masks of fs_kernel_info).
constexpr uint32_t dtype_bit(DType t) { return 1u << static_cast<int>(t); }
constexpr bool in_set(uint32_t set, int32_t code) { return is_dtype(code) && (set & (1u << code)) != 0; }

template <DType t>
struct Element;
template <> struct Element<DType::FP32> { using type = float; };
template <> struct Element<DType::FP16> { using type = __half; };
template <> struct Element<DType::BF16> { using type = __nv_bfloat16; };
template <> struct Element<DType::INT8> { using type = int8_t; };
template <> struct Element<DType::INT32> { using type = int32_t; };
template <> struct Element<DType::FP8_E4M3> { using type = __nv_fp8_e4m3; };

}  // namespace fs
