// The attention problem every attention stage solves: what a kernel takes, the validation each
// launch runs first, and the validated problem the kernels are launched with. Host code.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/lib/dispatch.h"
#include "common/lib/dtype.h"
#include "common/lib/flashstages.h"
#include "common/lib/status.h"

namespace fs {

using AttentionParams = fs_attention_params;
using AttentionBwdParams = fs_attention_bwd_params;

inline DType dtype_of(const AttentionParams& p) { return static_cast<DType>(p.dtype); }
// O's element type: the inputs' type, or bf16 for fp8 inputs (fs_attention_params, q_descale).
inline DType output_dtype(const AttentionParams& p) {
  return dtype_of(p) == DType::FP8_E4M3 ? DType::BF16 : dtype_of(p);
}
// The dequantization scales of fp8 inputs as the kernels take them: 0 in the params means 1.
inline float descale(float d) { return d != 0.0f ? d : 1.0f; }

// The scale the kernels use: 0 in the params selects 1/sqrt(D).
float softmax_scale(const AttentionParams& p);

// Grouped-query attention: K and V hold KVH heads, each shared by a group of G = H / KVH consecutive
// query heads (KVH = H: multi-head attention, G = 1; KVH = 1: multi-query attention, G = H). Query head
// h reads K/V head h / G. In flat indices over the batch, query head bh = b·H + h reads K/V head
// b·KVH + h / G, which is bh / G because H = KVH·G: a kernel maps a flat query head to its K/V head
// with one division. For validated params.
inline int64_t kv_head_count(const AttentionParams& p) { return p.kv_heads ? p.kv_heads : p.heads; }
inline int64_t group_size(const AttentionParams& p) { return p.heads / kv_head_count(p); }

// Element counts, in 64 bits (B·H·N·D passes 2^31 at realistic sizes). Only for validated params. A
// packed batch is one [H, total, D] tensor (seq_q, seq_k the totals), so it counts one entry's worth.
inline int64_t stored_entries(const AttentionParams& p) { return p.cu_seqlens_q ? 1 : p.batch; }
inline int64_t q_elems(const AttentionParams& p) { return stored_entries(p) * p.heads * p.seq_q * p.head_dim; }
inline int64_t kv_elems(const AttentionParams& p) {
  return stored_entries(p) * kv_head_count(p) * p.seq_k * p.head_dim;
}
inline int64_t lse_elems(const AttentionParams& p) { return stored_entries(p) * p.heads * p.seq_q; }

// ---- Layouts: the strides of fs_attention_params --------------------------------------------------
// Element (b, h, n, d) of a tensor lies at b·batch + h·head + n·row + d elements from its base. The
// backward's gradients share them: dQ Q's, dK K's, dV V's, dO O's.
struct TensorStrides {
  int64_t batch, head, row;
};
enum class Tensor { Q, K, V, O };

// The contiguous layout of `t`: {H·Nq·D, Nq·D, D} for Q and O, {KVH·Nk·D, Nk·D, D} for K and V (packed
// batches: [H, total, D], the same with the totals). For validated params.
TensorStrides contiguous_strides(const AttentionParams& p, Tensor t);
// The strides the kernels address `t` with: the params' own, or the contiguous layout's where all three
// are zero. A stride that moves nothing (its count is 1: B = 1, one head, one row; the batch stride of
// packed batches) is the contiguous layout's, so that a kernel or a TMA map never sees a value the
// caller did not mean. For validated params.
TensorStrides strides_of(const AttentionParams& p, Tensor t);
// Every tensor laid out as contiguous_strides says (as strides_of gives them): what a kernel that takes
// no strides (AttentionSupport::strided false) admits. For validated params.
bool is_contiguous(const AttentionParams& p);
// The elements `t` spans from its base as strides_of lays it out: the largest offset plus one. For
// validated params.
int64_t extent_elems(const AttentionParams& p, Tensor t);

// What one attention kernel takes. Built from the kernel's instance lists (attention_support), so the
// validation and the kernel's dispatch cannot disagree.
struct AttentionSupport {
  uint32_t dtypes = 0;        // dtype_bit() set
  int num_head_dims = 0;      // 0: any head_dim from 1 to max_head_dim; otherwise head_dims[0..n)
  int head_dims[8] = {};
  int max_head_dim = 0;
  std::size_t alignment = 0;  // bytes each tensor base needs; 0 means the element size
  bool varlen = false;        // takes seq_lens / cu_seqlens
  bool strided = false;       // takes the strides of fs_attention_params (else the contiguous layout alone)
};

template <class DtypeList, class HeadDimList>
constexpr AttentionSupport attention_support(std::size_t alignment, bool varlen, bool strided = false) {
  AttentionSupport s;
  s.dtypes = DtypeList::kMask;
  s.num_head_dims = HeadDimList::kCount;
  if constexpr (HeadDimList::kCount > 0)
    for (int i = 0; i < HeadDimList::kCount; ++i) s.head_dims[i] = HeadDimList::kValues[i];
  s.max_head_dim = HeadDimList::kMax;
  s.alignment = alignment;
  s.varlen = varlen;
  s.strided = strided;
  return s;
}

// Checks, in this order: null pointers, sizes, kv_heads, scale, dtype, the fp8 descales, head_dim, mask, alignment;
// the strides (InvalidStrides: negative, rows that overlap, an extent past 64 bits; UnsupportedLayout:
// not the contiguous layout, for a kernel that takes no strides; InvalidStrides: a stride that is not a
// multiple of the kernel's alignment); then the
// variable-length fields: none for a kernel that takes none, seq_lens and cu_seqlens not both,
// cu_seqlens_q and cu_seqlens_k together, 0 <= max_seq_q <= seq_q and 0 <= max_seq_k <= seq_k,
// device-accessible arrays. Their values are checked on the device by the kernels (and on the host by
// check_varlen).
Status validate(const AttentionParams& p, const AttentionSupport& support);

// The backward: everything validate() checks of p.fwd (grouped K/V heads included: every backward sums
// dK, dV over each group of query heads), then lse, d_o, dq, dk, dv not null (NullPointer); d_o, dq,
// dk, dv aligned as Q is and delta to 4 bytes (MisalignedPointer).
Status validate(const AttentionBwdParams& p, const AttentionSupport& support);
// No output (dQ, dK, dV, delta) overlaps an input (Q, K, V, O, LSE, dO) or another output, as the sizes
// and strides lay them out: MisalignedPointer otherwise (a pointer where the kernel cannot use it). Two
// tensors whose spans cross are apart where they have the same element size and strides and no element
// in common (dQ, dK, dV interleaved in one [B, N, 3, H, D] tensor); any other crossing counts as an
// overlap. For validated
// params on a device that can hold their tensors: sizes no GPU could hold make any two spans overlap,
// and those are the device check's to name (InvalidSize).
Status check_outputs_apart(const AttentionBwdParams& p);

// A call that passed validate(): the params, and what every kernel derives from them.
struct AttentionProblem {
  AttentionParams p;
  float scale;        // softmax_scale(p)
  int64_t max_seq_q;  // the most query rows of one entry: sizes the grid (seq_q unless packed)
  int64_t max_seq_k;  // the most key rows of one entry: sizes the backward's grid (seq_k unless packed)
};
AttentionProblem prepare(const AttentionParams& p);  // for validated params

// The same for the backward: the forward's derived values, and the backward's own pointers.
struct AttentionBwdProblem {
  AttentionProblem fwd;  // prepare(p.fwd)
  AttentionBwdParams p;
};
AttentionBwdProblem prepare(const AttentionBwdParams& p);  // for validated params

// gridDim.y and .z hold at most 65535 blocks (stages 01 and 02 put their query-row blocks in .y).
constexpr int64_t kMaxGridY = 65535;
// Kernels whose grid puts B·H in blockIdx.y or .z (stages 01 and 02) are limited to 65535 heads per
// launch: larger batches run in slices of heads, one after another on the stream. for_each_head_slice
// calls f(HeadSlice<T>) for each slice and stops at the first error.
constexpr int64_t kMaxHeadsPerLaunch = kMaxGridY;

// The K/V head that query head z of a slice reads, counted from the slice's k and v. The slice starts
// at flat query head bh0, so its query head z is bh0 + z and reads K/V head (bh0 + z) / G; the slice's
// k and v start at K/V head bh0 / G, so relative to them that is (bh0 % G + z) / G. (A slice need not
// start on a group boundary: 65535 is a multiple of few group sizes.) Multi-head: first = 0, G = 1, z.
struct KvHeadOf {
  int64_t first;  // bh0 % G
  int64_t group;  // G = H / KVH
  __host__ __device__ int64_t operator()(int64_t z) const { return (first + z) / group; }
};

template <class T>
struct HeadSlice {
  const T* q;       // [heads, Nq, D]
  const T* k;       // [*, Nk, D]: from the K/V head of the slice's first query head on
  const T* v;       // [*, Nk, D]
  T* o;             // [heads, Nq, D]
  float* lse;       // [heads, Nq] or null
  unsigned heads;   // at most kMaxHeadsPerLaunch
  KvHeadOf kv_head; // query head z of the slice reads k, v head kv_head(z)
};

template <class T, class F>
Status for_each_head_slice(const AttentionParams& p, F&& f) {
  const int64_t total = p.batch * p.heads, group = group_size(p);
  for (int64_t bh0 = 0; bh0 < total; bh0 += kMaxHeadsPerLaunch) {
    HeadSlice<T> s;
    s.q = static_cast<const T*>(p.q) + bh0 * p.seq_q * p.head_dim;
    s.k = static_cast<const T*>(p.k) + bh0 / group * p.seq_k * p.head_dim;
    s.v = static_cast<const T*>(p.v) + bh0 / group * p.seq_k * p.head_dim;
    s.o = static_cast<T*>(p.o) + bh0 * p.seq_q * p.head_dim;
    s.lse = p.lse ? p.lse + bh0 * p.seq_q : nullptr;
    s.heads = static_cast<unsigned>(total - bh0 < kMaxHeadsPerLaunch ? total - bh0 : kMaxHeadsPerLaunch);
    s.kv_head = {bh0 % group, group};
    FS_RETURN_IF_ERROR(f(s));
  }
  return Status::Success;
}

// The bytes of the largest of Q, K, V, O as the params lay them out (Q, O [B, H, Nq, D], K, V
// [B, KVH, Nk, D]; packed batches [H, total, D] and [KVH, total, D]; with strides, the bytes each spans:
// extent_elems). For validated params.
double largest_tensor_bytes(const AttentionParams& p);

// The host-side check behind fs_check_varlen: reads the arrays (one copy and a synchronization of
// `stream`), names what is wrong, and for packed batches sets p->max_seq_q and p->max_seq_k.
Status check_varlen(AttentionParams* p, cudaStream_t stream);

// "B=2 H=16 Nq=4096 Nk=4096 D=64 causal fp16 scale=0.125"; "B=1 H=32 KVH=8 Nq=1 ..." when K/V have
// fewer heads than Q.
std::string describe(const AttentionParams& p);

}  // namespace fs
