#include "common/lib/attention.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <new>
#include <vector>

#include "common/lib/cuda_check.h"
#include "common/lib/sizes.h"

namespace fs {

namespace {

bool aligned(const void* ptr, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(ptr) % bytes == 0; }

bool head_dim_supported(int64_t d, const AttentionSupport& s) {
  if (s.num_head_dims == 0) return d >= 1 && d <= s.max_head_dim;
  return std::find(s.head_dims, s.head_dims + s.num_head_dims, d) != s.head_dims + s.num_head_dims;
}

// Every tensor's byte count fits in 64 bits (the kernels index in 64 bits; a product that wraps
// would make a huge problem look small): Q and O, then K and V with their own head count.
bool sizes_fit(const AttentionParams& p) {
  const int64_t e = int64_t(dtype_size(dtype_of(p))), out = int64_t(dtype_size(output_dtype(p)));
  return fits_product({p.batch, p.heads, p.seq_q, p.head_dim, std::max(e, out)}) &&
         fits_product({p.batch, kv_head_count(p), p.seq_k, p.head_dim, e});
}

// The fp8 dequantization scales: finite and not negative (0 means 1) for fp8 inputs, and unset (0) for
// every other dtype, which has no use for them.
bool descales_valid(const AttentionParams& p) {
  const float d[] = {p.q_descale, p.k_descale, p.v_descale};
  if (p.dtype != FS_FP8_E4M3) return std::all_of(std::begin(d), std::end(d), [](float x) { return x == 0.0f; });
  return std::all_of(std::begin(d), std::end(d), [](float x) { return std::isfinite(x) && x >= 0.0f; });
}

// 0 (as many K/V heads as query heads) or a divisor of heads: every query head then belongs to exactly
// one group of heads / kv_heads, and the groups tile the heads.
bool kv_heads_valid(const AttentionParams& p) {
  return p.kv_heads == 0 || (p.kv_heads > 0 && p.kv_heads <= p.heads && p.heads % p.kv_heads == 0);
}

// A pointer the runtime does not know as device (or managed) memory is refused: the kernels read
// the variable-length arrays on the device.
Status device_array(const int32_t* ptr) {
  cudaPointerAttributes attr{};
  FS_RETURN_IF_CUDA_ERROR(cudaPointerGetAttributes(&attr, ptr));
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) return Status::InvalidSeqLens;
  return Status::Success;
}

Status read_lengths(const int32_t* device, int64_t count, cudaStream_t stream, std::vector<int32_t>* host) {
  try {  // a batch near the int32 range asks for gigabytes here: a named code, not an exception through C
    host->resize(count);
  } catch (const std::bad_alloc&) {
    return Status::OutOfMemory;
  }
  FS_RETURN_IF_CUDA_ERROR(
      cudaMemcpyAsync(host->data(), device, count * sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
  FS_RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream));
  return Status::Success;
}

// The bytes a [B, heads, rows, D] tensor spans ([heads, total, D] for packed batches; `rows` the total
// then), or a [B, H, rows] one with d = 1 and `element` = 4; `heads` is H for Q, O, LSE, KVH for K, V.
// For validated sizes: the product fits.
uint64_t span(const AttentionParams& p, int64_t heads, int64_t rows, int64_t d, std::size_t element) {
  const uint64_t entries = uint64_t(stored_entries(p));
  return entries * uint64_t(heads) * uint64_t(rows) * uint64_t(d) * element;
}

// Do [a, a + a_bytes) and [b, b + b_bytes) share a byte? Addresses as integers: no pointer arithmetic
// past an object, and a span that would pass the end of the address space counts as reaching it.
bool overlap(const void* a, uint64_t a_bytes, const void* b, uint64_t b_bytes) {
  const uint64_t x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  const uint64_t x_end = a_bytes > UINT64_MAX - x ? UINT64_MAX : x + a_bytes;
  const uint64_t y_end = b_bytes > UINT64_MAX - y ? UINT64_MAX : y + b_bytes;
  return x < y_end && y < x_end;
}

// cu [B+1]: starts at 0, never decreases, ends at the total.
bool valid_offsets(const std::vector<int32_t>& cu, int64_t total) {
  return cu.front() == 0 && cu.back() == total && std::is_sorted(cu.begin(), cu.end());
}

// ---- Layouts ----
// One tensor as its strides lay it out: the counts of its batch, head and row dimensions (the batch
// count 1 for packed batches, whose tensors are [H, total, D]) and the params' raw strides.
struct Dims {
  int64_t count[3];  // batch, heads, rows
  const int64_t* raw;  // the params' {batch, head, row} strides
  std::size_t element;  // bytes
};
Dims dims_of(const AttentionParams& p, Tensor t) {
  const bool query = t == Tensor::Q || t == Tensor::O;
  const int64_t* raw = t == Tensor::Q ? p.q_strides : t == Tensor::K ? p.k_strides : t == Tensor::V ? p.v_strides
                                                                                                      : p.o_strides;
  const DType type = t == Tensor::O ? output_dtype(p) : dtype_of(p);
  return {{stored_entries(p), query ? p.heads : kv_head_count(p), query ? p.seq_q : p.seq_k}, raw, dtype_size(type)};
}

constexpr Tensor kTensors[] = {Tensor::Q, Tensor::K, Tensor::V, Tensor::O};

// The raw strides of a tensor: InvalidStrides where one is negative, where two rows overlap (sorted
// by size, each stride that moves something must be at least the extent of the smaller ones: D
// elements for the smallest), or where the extent passes 64 bits, in elements or in bytes. All zero:
// the contiguous layout, valid. For params whose sizes passed validation.
Status check_raw_strides(const AttentionParams& p, Tensor t) {
  const Dims d = dims_of(p, t);
  if (d.raw[0] == 0 && d.raw[1] == 0 && d.raw[2] == 0) return Status::Success;
  std::pair<int64_t, int64_t> moving[3];  // (stride, count) of the dimensions with a count above 1
  int n = 0;
  for (int i = 0; i < 3; ++i) {
    if (d.raw[i] < 0) return Status::InvalidStrides;
    if (d.count[i] > 1) moving[n++] = {d.raw[i], d.count[i]};
  }
  std::sort(moving, moving + n);
  int64_t extent = p.head_dim;  // elements spanned by the dimensions below: D for the row itself
  for (int i = 0; i < n; ++i) {
    const auto [stride, count] = moving[i];
    if (stride < extent) return Status::InvalidStrides;  // two rows would share an element
    if (stride > (INT64_MAX - extent) / (count - 1)) return Status::InvalidStrides;
    extent += (count - 1) * stride;
  }
  if (extent > INT64_MAX / int64_t(d.element)) return Status::InvalidStrides;
  return Status::Success;
}

// One dimension of two tensors whose elements may interleave: its stride (the same in both, where it
// moves both) and its count in each.
struct Level {
  int64_t stride, count_a, count_b;
};

// Does tensor A share an element with tensor B, which lies delta elements further on (delta may be
// negative), both laid out by `levels` (sorted by stride) over rows of D elements? A's elements are
// Σ a_i·s_i + e (0 <= a_i < count_a, 0 <= e < D), B's the same plus delta, so they meet where
// delta = Σ c_i·s_i + e with -count_b < c_i < count_a and |e| < D. Where every stride is at least the
// extent of the smaller dimensions in both tensors (nested, as check_raw_strides requires of each),
// only the two multiples of the largest stride nearest delta can leave a remainder the smaller ones
// reach: the search takes at most two branches per dimension, and is exact. Levels that are not nested
// so answer yes: taken as an overlap.
bool shares_element(int64_t delta, const Level* levels, int n, int64_t d) {
  int64_t extent_a = d, extent_b = d;  // of the dimensions below level i
  for (int i = 0; i < n; ++i) {
    if (levels[i].stride < std::max(extent_a, extent_b)) return true;
    extent_a += (levels[i].count_a - 1) * levels[i].stride;
    extent_b += (levels[i].count_b - 1) * levels[i].stride;
  }
  if (n == 0) return delta > -d && delta < d;
  const Level& top = levels[n - 1];  // the largest stride
  const int64_t c0 = delta >= 0 ? delta / top.stride : -((-delta + top.stride - 1) / top.stride);  // floor
  for (int64_t c = c0; c <= c0 + 1; ++c)
    if (c > -top.count_b && c < top.count_a && shares_element(delta - c * top.stride, levels, n - 1, d)) return true;
  return false;
}

}  // namespace

TensorStrides contiguous_strides(const AttentionParams& p, Tensor t) {
  const Dims d = dims_of(p, t);
  return {d.count[1] * d.count[2] * p.head_dim, d.count[2] * p.head_dim, p.head_dim};
}

TensorStrides strides_of(const AttentionParams& p, Tensor t) {
  const Dims d = dims_of(p, t);
  const TensorStrides c = contiguous_strides(p, t);
  if (d.raw[0] == 0 && d.raw[1] == 0 && d.raw[2] == 0) return c;
  return {d.count[0] > 1 ? d.raw[0] : c.batch, d.count[1] > 1 ? d.raw[1] : c.head, d.count[2] > 1 ? d.raw[2] : c.row};
}

bool is_contiguous(const AttentionParams& p) {
  for (Tensor t : kTensors) {
    const TensorStrides s = strides_of(p, t), c = contiguous_strides(p, t);
    if (s.batch != c.batch || s.head != c.head || s.row != c.row) return false;
  }
  return true;
}

int64_t extent_elems(const AttentionParams& p, Tensor t) {
  const Dims d = dims_of(p, t);
  const TensorStrides s = strides_of(p, t);
  return (d.count[0] - 1) * s.batch + (d.count[1] - 1) * s.head + (d.count[2] - 1) * s.row + p.head_dim;
}

float softmax_scale(const AttentionParams& p) {
  return p.scale != 0.0f ? p.scale : 1.0f / std::sqrt(static_cast<float>(p.head_dim));
}

Status validate(const AttentionParams& p, const AttentionSupport& support) {
  if (!p.q || !p.k || !p.v || !p.o) return Status::NullPointer;
  if (p.batch <= 0 || p.heads <= 0 || p.seq_q <= 0 || p.seq_k <= 0 || p.head_dim <= 0) return Status::InvalidSize;
  if (!kv_heads_valid(p)) return Status::InvalidKvHeads;
  if (!std::isfinite(p.scale)) return Status::InvalidScale;
  if (!in_set(support.dtypes, p.dtype)) return Status::UnsupportedDtype;
  if (!descales_valid(p)) return Status::InvalidScale;
  if (!head_dim_supported(p.head_dim, support)) return Status::UnsupportedHeadDim;
  if (!sizes_fit(p)) return Status::InvalidSize;
  // Bottom-right alignment leaves the first Nq - Nk query rows with no visible key.
  if (p.causal && p.seq_q > p.seq_k) return Status::UnsupportedMask;
  const std::size_t align = support.alignment ? support.alignment : dtype_size(dtype_of(p));
  if (!aligned(p.q, align) || !aligned(p.k, align) || !aligned(p.v, align) || !aligned(p.o, align) ||
      (p.lse && !aligned(p.lse, sizeof(float))))
    return Status::MisalignedPointer;
  for (Tensor t : kTensors) FS_RETURN_IF_ERROR(check_raw_strides(p, t));
  if (!support.strided && !is_contiguous(p)) return Status::UnsupportedLayout;
  // Every row of every tensor as aligned as its base: each stride (those that move nothing are the
  // contiguous layout's, multiples of D) a multiple of the alignment.
  for (Tensor t : kTensors) {
    const TensorStrides st = strides_of(p, t);
    const int64_t e = int64_t(dims_of(p, t).element), a = int64_t(align);
    if (st.batch * e % a != 0 || st.head * e % a != 0 || st.row * e % a != 0) return Status::InvalidStrides;
  }
  const bool padded = p.seq_lens != nullptr, packed = p.cu_seqlens_q || p.cu_seqlens_k;
  if (!padded && !packed) return Status::Success;
  if (!support.varlen) return Status::InvalidSeqLens;
  if (padded && packed) return Status::InvalidSeqLens;                  // one layout at a time
  if (!p.cu_seqlens_q != !p.cu_seqlens_k) return Status::InvalidSeqLens;  // packed needs both
  if (packed && (p.max_seq_q < 0 || p.max_seq_q > p.seq_q || p.max_seq_k < 0 || p.max_seq_k > p.seq_k))
    return Status::InvalidSeqLens;
  for (const int32_t* array : {p.seq_lens, p.cu_seqlens_q, p.cu_seqlens_k})
    if (array) FS_RETURN_IF_ERROR(device_array(array));
  return Status::Success;
}

Status validate(const AttentionBwdParams& p, const AttentionSupport& support) {
  FS_RETURN_IF_ERROR(validate(p.fwd, support));
  if (!p.fwd.lse || !p.d_o || !p.dq || !p.dk || !p.dv) return Status::NullPointer;
  const std::size_t align = support.alignment ? support.alignment : dtype_size(dtype_of(p.fwd));
  if (!aligned(p.d_o, align) || !aligned(p.dq, align) || !aligned(p.dk, align) || !aligned(p.dv, align) ||
      (p.delta && !aligned(p.delta, sizeof(float))))
    return Status::MisalignedPointer;
  return Status::Success;
}

Status check_outputs_apart(const AttentionBwdParams& p) {
  const AttentionParams& f = p.fwd;
  const uint64_t row_bytes = span(f, f.heads, f.seq_q, 1, sizeof(float));
  // A tensor as its strides lay it out (laid out: Q, K, V or O's layout), or LSE, delta (contiguous rows).
  struct Range {
    const void* ptr;
    bool strided;
    Tensor layout;
  };
  auto bytes_of = [&](const Range& r) {
    return r.strided ? uint64_t(extent_elems(f, r.layout)) * dims_of(f, r.layout).element : row_bytes;
  };
  // Do two of them share a byte? Spans that do not cross cannot; crossing spans with the same strides
  // may still interleave without a common element (shares_element); any other crossing is taken as an
  // overlap.
  auto meet = [&](const Range& a, const Range& b) {
    if (!overlap(a.ptr, bytes_of(a), b.ptr, bytes_of(b))) return false;
    if (!a.strided || !b.strided) return true;
    const TensorStrides sa = strides_of(f, a.layout), sb = strides_of(f, b.layout);
    const Dims da = dims_of(f, a.layout), db = dims_of(f, b.layout);
    const int64_t e = int64_t(da.element);
    const int64_t delta = int64_t(reinterpret_cast<std::uintptr_t>(b.ptr) - reinterpret_cast<std::uintptr_t>(a.ptr));
    if (da.element != db.element || delta % e != 0) return true;
    // Each dimension that moves either tensor, with one stride: a stride whose count is 1 moves nothing,
    // so the other tensor's is the dimension's; where both move, they must agree.
    const int64_t strides_a[3] = {sa.batch, sa.head, sa.row}, strides_b[3] = {sb.batch, sb.head, sb.row};
    Level levels[3];
    int n = 0;
    for (int i = 0; i < 3; ++i) {
      if (da.count[i] == 1 && db.count[i] == 1) continue;
      if (da.count[i] > 1 && db.count[i] > 1 && strides_a[i] != strides_b[i]) return true;
      levels[n++] = {da.count[i] > 1 ? strides_a[i] : strides_b[i], da.count[i], db.count[i]};
    }
    std::sort(levels, levels + n, [](const Level& x, const Level& y) { return x.stride < y.stride; });
    return shares_element(delta / e, levels, n, f.head_dim);
  };
  const Range inputs[] = {{f.q, true, Tensor::Q}, {f.k, true, Tensor::K},  {f.v, true, Tensor::V},
                          {f.o, true, Tensor::O}, {f.lse, false, Tensor::Q}, {p.d_o, true, Tensor::O}};
  const Range outputs[] = {{p.dq, true, Tensor::Q}, {p.dk, true, Tensor::K}, {p.dv, true, Tensor::V},
                           {p.delta, false, Tensor::Q}};
  for (std::size_t i = 0; i < std::size(outputs); ++i) {
    if (!outputs[i].ptr) continue;  // delta, when not asked for
    for (const Range& in : inputs)
      if (meet(outputs[i], in)) return Status::MisalignedPointer;
    for (std::size_t j = i + 1; j < std::size(outputs); ++j)
      if (outputs[j].ptr && meet(outputs[i], outputs[j])) return Status::MisalignedPointer;
  }
  return Status::Success;
}

double largest_tensor_bytes(const AttentionParams& p) {
  double largest = 0;  // doubles: sizes no GPU holds still compare as large, without wrapping
  for (Tensor t : kTensors) {
    const Dims d = dims_of(p, t);
    const TensorStrides s = strides_of(p, t);
    const double elems = double(d.count[0] - 1) * double(s.batch) + double(d.count[1] - 1) * double(s.head) +
                         double(d.count[2] - 1) * double(s.row) + double(p.head_dim);
    largest = std::max(largest, elems * double(d.element));
  }
  return largest;
}

AttentionProblem prepare(const AttentionParams& p) {
  const bool packed = p.cu_seqlens_q != nullptr;
  return {p, softmax_scale(p), packed && p.max_seq_q > 0 ? p.max_seq_q : p.seq_q,
          packed && p.max_seq_k > 0 ? p.max_seq_k : p.seq_k};
}

AttentionBwdProblem prepare(const AttentionBwdParams& p) { return {prepare(p.fwd), p}; }

Status check_varlen(AttentionParams* p, cudaStream_t stream) {
  if (!p->seq_lens && !p->cu_seqlens_q && !p->cu_seqlens_k) return Status::Success;
  // The arrays hold B (+1) int32 values: a batch past the int32 range cannot be a real layout.
  if (p->batch <= 0 || p->batch >= INT32_MAX || p->seq_q <= 0 || p->seq_k <= 0) return Status::InvalidSize;
  if (p->seq_lens && (p->cu_seqlens_q || p->cu_seqlens_k)) return Status::InvalidSeqLens;
  if (!p->cu_seqlens_q != !p->cu_seqlens_k) return Status::InvalidSeqLens;
  for (const int32_t* array : {p->seq_lens, p->cu_seqlens_q, p->cu_seqlens_k})
    if (array) FS_RETURN_IF_ERROR(device_array(array));
  std::vector<int32_t> lens, cu_q, cu_k;
  if (p->seq_lens) {
    FS_RETURN_IF_ERROR(read_lengths(p->seq_lens, p->batch, stream, &lens));
    for (int32_t n : lens)
      if (n < 0 || n > std::min(p->seq_q, p->seq_k)) return Status::InvalidSeqLens;
    return Status::Success;
  }
  FS_RETURN_IF_ERROR(read_lengths(p->cu_seqlens_q, p->batch + 1, stream, &cu_q));
  FS_RETURN_IF_ERROR(read_lengths(p->cu_seqlens_k, p->batch + 1, stream, &cu_k));
  if (!valid_offsets(cu_q, p->seq_q) || !valid_offsets(cu_k, p->seq_k)) return Status::InvalidSeqLens;
  int64_t longest_q = 0, longest_k = 0;
  for (int64_t b = 0; b < p->batch; ++b) {
    const int64_t nq = cu_q[b + 1] - cu_q[b], nk = cu_k[b + 1] - cu_k[b];
    if (p->causal && nq > nk) return Status::UnsupportedMask;  // the dense rule, per entry
    longest_q = std::max(longest_q, nq);
    longest_k = std::max(longest_k, nk);
  }
  p->max_seq_q = longest_q;
  p->max_seq_k = longest_k;
  return Status::Success;
}

std::string describe(const AttentionParams& p) {
  char buf[192], kv[40] = "";
  // The raw field, not kv_head_count(): describe() also names params that failed validation.
  if (p.kv_heads != 0 && p.kv_heads != p.heads)
    std::snprintf(kv, sizeof kv, " KVH=%lld", static_cast<long long>(p.kv_heads));
  std::snprintf(buf, sizeof buf, "B=%lld H=%lld%s Nq=%lld Nk=%lld D=%lld %s%s scale=%.4g",
                static_cast<long long>(p.batch), static_cast<long long>(p.heads), kv,
                static_cast<long long>(p.seq_q), static_cast<long long>(p.seq_k),
                static_cast<long long>(p.head_dim), p.causal ? "causal " : "",
                is_dtype(p.dtype) ? dtype_name(dtype_of(p)) : "?", softmax_scale(p));
  return buf;
}

}  // namespace fs
