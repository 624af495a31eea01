// Stage 06: the GEMM validation every launcher runs first, and the dtype names.
#include "gemm.h"

#include <cstdint>

namespace fs {

const char* gemm_dtype_name(int32_t t) {
  switch (t) {
    case FS_FP32: return "fp32";
    case FS_FP16: return "fp16";
    case FS_BF16: return "bf16";
    case FS_INT8: return "int8";
    case FS_INT32: return "int32";
    default: return "?";
  }
}

std::size_t gemm_dtype_size(int32_t t) {
  switch (t) {
    case FS_FP32: case FS_INT32: return 4;
    case FS_FP16: case FS_BF16: return 2;
    case FS_INT8: return 1;
    default: return 0;
  }
}

// A matrix of `rows` stored rows, `cols` used columns each, `ld` elements apart.
static int64_t span(int64_t rows, int64_t cols, int64_t ld) { return (rows - 1) * ld + cols; }

int64_t gemm_a_span(const GemmParams& p) { return p.trans_a ? span(p.k, p.m, p.lda) : span(p.m, p.k, p.lda); }
int64_t gemm_b_span(const GemmParams& p) { return p.trans_b ? span(p.n, p.k, p.ldb) : span(p.k, p.n, p.ldb); }
int64_t gemm_c_span(const GemmParams& p) { return span(p.m, p.n, p.ldc); }

Status validate_gemm(const GemmParams& p, const GemmSupport& support) {
  if (!p.a || !p.b || !p.c) return Status::NullPointer;
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return Status::InvalidSize;
  // The row each leading dimension must cover: the stored matrix's row length.
  const int64_t a_row = p.trans_a ? p.m : p.k;
  const int64_t b_row = p.trans_b ? p.k : p.n;
  if (p.lda < a_row || p.ldb < b_row || p.ldc < p.n) return Status::InvalidLeadingDim;
  if (p.ab_dtype != support.ab_dtype || p.c_dtype < 0 || p.c_dtype > 31 ||
      !(support.c_dtypes & gemm_dtype_bit(p.c_dtype)))
    return Status::UnsupportedDtype;
  const auto misaligned = [](const void* ptr, std::size_t bytes) {
    return reinterpret_cast<std::uintptr_t>(ptr) % bytes != 0;
  };
  const std::size_t in = gemm_dtype_size(p.ab_dtype), out = gemm_dtype_size(p.c_dtype);
  if (misaligned(p.a, in) || misaligned(p.b, in) || misaligned(p.c, out)) return Status::MisalignedPointer;
  return Status::Success;
}

}  // namespace fs
