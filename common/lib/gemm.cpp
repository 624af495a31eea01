#include "common/lib/gemm.h"

#include <cstdio>

#include "common/lib/sizes.h"

namespace fs {

namespace {

// A matrix of `rows` stored rows, `cols` used columns each, `ld` elements apart.
int64_t span(int64_t rows, int64_t cols, int64_t ld) { return (rows - 1) * ld + cols; }

bool misaligned(const void* ptr, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(ptr) % bytes != 0; }

}  // namespace

int64_t gemm_a_span(const GemmParams& p) { return p.trans_a ? span(p.k, p.m, p.lda) : span(p.m, p.k, p.lda); }
int64_t gemm_b_span(const GemmParams& p) { return p.trans_b ? span(p.n, p.k, p.ldb) : span(p.k, p.n, p.ldb); }
int64_t gemm_c_span(const GemmParams& p) { return span(p.m, p.n, p.ldc); }

Status validate(const GemmParams& p, const GemmSupport& support) {
  if (!p.a || !p.b || !p.c) return Status::NullPointer;
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) return Status::InvalidSize;
  // The row each leading dimension must cover: the stored matrix's row length.
  const int64_t a_row = p.trans_a ? p.m : p.k;
  const int64_t b_row = p.trans_b ? p.k : p.n;
  if (p.lda < a_row || p.ldb < b_row || p.ldc < p.n) return Status::InvalidLeadingDim;
  // Every matrix's stored rows × leading dimension × 4 bytes (the widest element) fits in 64 bits.
  const int64_t a_rows = p.trans_a ? p.k : p.m, b_rows = p.trans_b ? p.n : p.k;
  if (!fits_product({a_rows, p.lda, 4}) || !fits_product({b_rows, p.ldb, 4}) || !fits_product({p.m, p.ldc, 4}))
    return Status::InvalidSize;
  if (!in_set(support.ab_dtypes, p.ab_dtype) || !in_set(support.c_dtypes, p.c_dtype)) return Status::UnsupportedDtype;
  if (!support.takes_layout(p.trans_a != 0, p.trans_b != 0)) return Status::UnsupportedLayout;
  const std::size_t in = dtype_size(DType(p.ab_dtype)), out = dtype_size(DType(p.c_dtype));
  if (misaligned(p.a, in) || misaligned(p.b, in) || misaligned(p.c, out)) return Status::MisalignedPointer;
  if (const std::size_t w = support.operand_align; w > in) {
    if (misaligned(p.a, w) || misaligned(p.b, w)) return Status::MisalignedPointer;
    // lda, ldb times 4 fit in 64 bits (checked above), times the element size too.
    if ((p.lda * int64_t(in)) % int64_t(w) != 0 || (p.ldb * int64_t(in)) % int64_t(w) != 0)
      return Status::InvalidLeadingDim;
  }
  if (support.tma_operands) {  // what a tensor map of A or B could not describe
    if (p.m > kTmaMaxExtent || p.n > kTmaMaxExtent || p.k > kTmaMaxExtent) return Status::InvalidSize;
    if (p.lda * int64_t(in) >= kTmaMaxStrideBytes || p.ldb * int64_t(in) >= kTmaMaxStrideBytes)
      return Status::InvalidLeadingDim;
  }
  return Status::Success;
}

double largest_matrix_bytes(const GemmParams& p) {
  const double in = double(dtype_size(DType(p.ab_dtype))), out = double(dtype_size(DType(p.c_dtype)));
  const double a = double(gemm_a_span(p)) * in, b = double(gemm_b_span(p)) * in, c = double(gemm_c_span(p)) * out;
  return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

std::string describe(const GemmParams& p) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "M=%lld N=%lld K=%lld%s%s %s->%s alpha=%g beta=%g", static_cast<long long>(p.m),
                static_cast<long long>(p.n), static_cast<long long>(p.k), p.trans_a ? " A^T" : "",
                p.trans_b ? " B^T" : "", is_dtype(p.ab_dtype) ? dtype_name(DType(p.ab_dtype)) : "?",
                is_dtype(p.c_dtype) ? dtype_name(DType(p.c_dtype)) : "?", p.alpha, p.beta);
  return buf;
}

}  // namespace fs
