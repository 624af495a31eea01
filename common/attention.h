// The attention problem every attention stage solves, and the validation each launcher runs first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "flashstages.h"
#include "status.h"

namespace fs {

using AttentionParams = fs_attention_params;

enum class DType : int { FP32 = FS_FP32, FP16 = FS_FP16, BF16 = FS_BF16 };

constexpr std::size_t dtype_size(DType t) { return t == DType::FP32 ? 4 : 2; }
const char* dtype_name(DType t);  // "fp32", "fp16", "bf16"
std::optional<DType> parse_dtype(std::string_view name);
inline DType dtype_of(const AttentionParams& p) { return static_cast<DType>(p.dtype); }

// A set of dtypes, as a bit per DType.
constexpr unsigned dtype_bit(DType t) { return 1u << static_cast<int>(t); }
constexpr unsigned kAllFloatDtypes = dtype_bit(DType::FP32) | dtype_bit(DType::FP16) | dtype_bit(DType::BF16);

// The scale the kernels use: 0 in the params selects 1/sqrt(D).
float softmax_scale(const AttentionParams& p);

// Element counts; 64-bit because B·H·N·D passes 2^31 at realistic sizes.
inline int64_t q_elems(const AttentionParams& p) { return p.batch * p.heads * p.seq_q * p.head_dim; }
inline int64_t kv_elems(const AttentionParams& p) { return p.batch * p.heads * p.seq_k * p.head_dim; }
inline int64_t lse_elems(const AttentionParams& p) { return p.batch * p.heads * p.seq_q; }

// What one kernel can take. Launchers describe themselves with this and call validate() before
// touching the device, so a bad call returns its named code and writes nothing.
struct AttentionSupport {
  unsigned dtypes = dtype_bit(DType::FP32);
  int64_t min_head_dim = 1;
  int64_t max_head_dim = 256;
  const int* head_dims = nullptr;  // when set, only these (a list of num_head_dims values)
  int num_head_dims = 0;
  std::size_t alignment = 0;  // bytes each tensor base needs; 0 means the element size
  bool varlen = false;        // takes seq_lens / cu_seqlens (checked by the kernel's own launcher)
};

// Checks, in this order: null pointers, sizes, scale, dtype, head_dim, mask, alignment, and that no
// variable-length arrays are given to a kernel that takes none.
Status validate(const AttentionParams& p, const AttentionSupport& support);

// "B=2 H=16 Nq=4096 Nk=4096 D=64 causal fp16"
std::string describe(const AttentionParams& p);

}  // namespace fs
