#include "attention.h"

#include <cmath>
#include <cstdio>

namespace fs {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::FP32: return "fp32";
    case DType::FP16: return "fp16";
    case DType::BF16: return "bf16";
  }
  return "unknown";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : {DType::FP32, DType::FP16, DType::BF16})
    if (name == dtype_name(t)) return t;
  return std::nullopt;
}

float softmax_scale(const AttentionParams& p) {
  return p.scale != 0.0f ? p.scale : 1.0f / std::sqrt(static_cast<float>(p.head_dim));
}

static bool aligned(const void* ptr, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(ptr) % bytes == 0;
}

static bool head_dim_supported(int64_t d, const AttentionSupport& s) {
  if (s.head_dims == nullptr) return d >= s.min_head_dim && d <= s.max_head_dim;
  for (int i = 0; i < s.num_head_dims; ++i)
    if (s.head_dims[i] == d) return true;
  return false;
}

Status validate(const AttentionParams& p, const AttentionSupport& support) {
  if (!p.q || !p.k || !p.v || !p.o) return Status::NullPointer;
  if (p.batch <= 0 || p.heads <= 0 || p.seq_q <= 0 || p.seq_k <= 0 || p.head_dim <= 0)
    return Status::InvalidSize;
  if (!std::isfinite(p.scale)) return Status::InvalidScale;
  if (p.dtype < FS_FP32 || p.dtype > FS_BF16 || !(support.dtypes & dtype_bit(dtype_of(p))))
    return Status::UnsupportedDtype;
  if (!head_dim_supported(p.head_dim, support)) return Status::UnsupportedHeadDim;
  // Bottom-right alignment leaves the first Nq - Nk query rows with no visible key.
  if (p.causal && p.seq_q > p.seq_k) return Status::UnsupportedMask;
  const std::size_t align = support.alignment ? support.alignment : dtype_size(dtype_of(p));
  if (!aligned(p.q, align) || !aligned(p.k, align) || !aligned(p.v, align) || !aligned(p.o, align) ||
      (p.lse && !aligned(p.lse, sizeof(float))))
    return Status::MisalignedPointer;
  if (!support.varlen && (p.seq_lens || p.cu_seqlens_q || p.cu_seqlens_k)) return Status::InvalidSeqLens;
  return Status::Success;
}

std::string describe(const AttentionParams& p) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "B=%lld H=%lld Nq=%lld Nk=%lld D=%lld %s%s scale=%.4g",
                static_cast<long long>(p.batch), static_cast<long long>(p.heads),
                static_cast<long long>(p.seq_q), static_cast<long long>(p.seq_k),
                static_cast<long long>(p.head_dim), p.causal ? "causal " : "", dtype_name(dtype_of(p)),
                softmax_scale(p));
  return buf;
}

}  // namespace fs
