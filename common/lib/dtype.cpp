#include "common/lib/dtype.h"

namespace fs {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::FP32: return "fp32";
    case DType::FP16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::INT8: return "int8";
    case DType::INT32: return "int32";
    case DType::FP8_E4M3: return "fp8_e4m3";
  }
  return "unknown";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : kAllDtypes)
    if (name == dtype_name(t)) return t;
  return std::nullopt;
}

}  // namespace fs
