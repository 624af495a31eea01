#include "common/tools/attention_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/lib/random.h"
#include "common/tools/device_buffer.h"
#include "common/tools/parallel.h"
#include "common/tools/reference.h"

namespace fs {

namespace {

// fp8 inputs stand for values uniform in [-1, 1] too, each tensor stored with its own scale (so that a
// kernel that mixes them up is caught): Q as x · 256, K as x · 448 (e4m3's whole range), V as x · 128.
constexpr float kFp8Descale[3] = {1.0f / 256, 1.0f / 448, 1.0f / 128};  // Q, K, V

// Draws n values uniform in [-1, 1], rounded to dtype, as raw bytes ready to upload; fp8: x / descale
// rounded to e4m3 (to nearest, saturating).
std::vector<unsigned char> draw(DType t, std::size_t n, uint64_t seed, float descale = 1.0f) {
  std::vector<unsigned char> bytes(n * dtype_size(t));
  auto store = [&](auto values) { std::memcpy(bytes.data(), values.data(), bytes.size()); };
  switch (t) {
    case DType::FP32: store(random_uniform<float>(n, seed)); break;
    case DType::FP16: store(random_uniform<__half>(n, seed)); break;
    case DType::BF16: store(random_uniform<__nv_bfloat16>(n, seed)); break;
    case DType::FP8_E4M3: {  // the host's e4m3 rounding is emulated, slow: over every thread
      const std::vector<float> x = random_uniform<float>(n, seed);
      parallel_for(n, [&](std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) bytes[i] = __nv_fp8_e4m3(x[i] / descale).__x;
      });
      break;
    }
    default: throw std::invalid_argument(std::string("no attention inputs of type ") + dtype_name(t));
  }
  return bytes;
}

double element(const unsigned char* bytes, DType t, std::size_t i) {
  switch (t) {
    case DType::FP32: { float x; std::memcpy(&x, bytes + 4 * i, 4); return x; }
    case DType::FP16: { __half x; std::memcpy(&x, bytes + 2 * i, 2); return to_double(x); }
    case DType::BF16: { __nv_bfloat16 x; std::memcpy(&x, bytes + 2 * i, 2); return to_double(x); }
    case DType::FP8_E4M3: { __nv_fp8_e4m3 x; x.__x = bytes[i]; return double(float(x)); }
    default: return 0.0;
  }
}

void set_element(unsigned char* bytes, DType t, std::size_t i, double x) {
  switch (t) {
    case DType::FP32: { const float y = float(x); std::memcpy(bytes + 4 * i, &y, 4); break; }
    case DType::FP16: { const __half y = from_float<__half>(float(x)); std::memcpy(bytes + 2 * i, &y, 2); break; }
    case DType::BF16: {
      const __nv_bfloat16 y = from_float<__nv_bfloat16>(float(x));
      std::memcpy(bytes + 2 * i, &y, 2);
      break;
    }
    default: break;
  }
}

bool all_poison(const unsigned char* p, std::size_t n) {
  return std::all_of(p, p + n, [](unsigned char b) { return b == 0xFF; });
}

// One head's [rows][D] values, each stored element times `descale` (fp8: what it stands for).
std::vector<double> head_slice(const std::vector<unsigned char>& bytes, DType t, int64_t head, int64_t rows,
                               int64_t d, double descale = 1.0) {
  std::vector<double> out(rows * d);
  for (int64_t i = 0; i < rows * d; ++i) out[i] = element(bytes.data(), t, head * rows * d + i) * descale;
  return out;
}

// Evenly spaced heads, always including the first and the last; none when max_heads < 0.
std::vector<int64_t> pick_heads(int64_t total, int max_heads) {
  std::vector<int64_t> heads;
  if (max_heads < 0) return heads;
  if (max_heads == 0 || total <= max_heads) {
    for (int64_t i = 0; i < total; ++i) heads.push_back(i);
  } else if (max_heads == 1) {
    heads.push_back(0);
  } else {
    for (int i = 0; i < max_heads; ++i) heads.push_back(i * (total - 1) / (max_heads - 1));
  }
  return heads;
}

// ---- Strided layouts ----
// One tensor of a layout: which, its [B, heads, N, D] sizes, its strides and element size.
struct Placed {
  LayoutTensor which;
  int64_t dims[4];
  TensorStrides strides;
  std::size_t element;
};

std::vector<Placed> placed(const AttentionParams& s, const StridedLayout& l, std::initializer_list<LayoutTensor> list) {
  std::vector<Placed> out;
  for (LayoutTensor t : list) {
    const bool query = t == kLayoutQ || t == kLayoutO || t == kLayoutDO || t == kLayoutDQ;
    const TensorStrides st = t == kLayoutQ || t == kLayoutDQ   ? l.q
                             : t == kLayoutK || t == kLayoutDK ? l.k
                             : t == kLayoutV || t == kLayoutDV ? l.v
                                                               : l.o;
    const DType type = t == kLayoutO ? output_dtype(s) : dtype_of(s);
    out.push_back({t,
                   {s.batch, query ? s.heads : kv_head_count(s), query ? s.seq_q : s.seq_k, s.head_dim},
                   st,
                   dtype_size(type)});
  }
  return out;
}

// A layout's buffers for one launch: host images (poison, with the inputs where the layout puts them),
// their device copies, and after the launch what changed.
class LayoutRun {
 public:
  // inputs[i]: the contiguous bytes of tensors[i], or null for an output (left poisoned).
  LayoutRun(const StridedLayout& l, std::vector<Placed> tensors, const std::vector<const std::vector<unsigned char>*>& inputs)
      : l_(l), tensors_(std::move(tensors)) {
    std::vector<std::size_t> element(l.buffer_elems.size(), 1);
    for (const Placed& p : tensors_) element.at(spot(p).buffer) = p.element;
    for (std::size_t b = 0; b < l.buffer_elems.size(); ++b)
      before_.emplace_back(std::size_t(l.buffer_elems[b]) * element[b], 0xFF);
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      if (inputs[i]) {
        const Placed& p = tensors_[i];
        scatter_strided(inputs[i]->data(), before_[spot(p).buffer].data(), p.dims, p.element, spot(p).offset, p.strides);
      }
    for (const auto& image : before_) device_.emplace_back(image);
  }

  void* ptr(LayoutTensor t) const {
    const Placed& p = find(t);
    return device_[spot(p).buffer].get() + spot(p).offset * int64_t(p.element);
  }

  std::vector<std::vector<unsigned char>> download() const {
    std::vector<std::vector<unsigned char>> after;
    for (const auto& d : device_) after.push_back(d.download());
    return after;
  }

  // Tensor t out of its view in `after`, contiguous.
  std::vector<unsigned char> gather(const std::vector<std::vector<unsigned char>>& after, LayoutTensor t) const {
    const Placed& p = find(t);
    std::vector<unsigned char> bhnd(std::size_t(p.dims[0] * p.dims[1] * p.dims[2] * p.dims[3]) * p.element);
    gather_strided(after[spot(p).buffer].data(), bhnd.data(), p.dims, p.element, spot(p).offset, p.strides);
    return bhnd;
  }

  // Whether a byte outside the views of `outputs` differs from what the launch found there.
  bool outside_written(const std::vector<std::vector<unsigned char>>& after,
                       const std::vector<LayoutTensor>& outputs) const {
    std::vector<std::vector<unsigned char>> output(before_.size());
    for (std::size_t b = 0; b < before_.size(); ++b) output[b].assign(before_[b].size(), 0);
    for (LayoutTensor t : outputs) {
      const Placed& p = find(t);
      const std::vector<unsigned char> ones(std::size_t(p.dims[0] * p.dims[1] * p.dims[2] * p.dims[3]) * p.element, 1);
      scatter_strided(ones.data(), output[spot(p).buffer].data(), p.dims, p.element, spot(p).offset, p.strides);
    }
    for (std::size_t b = 0; b < before_.size(); ++b)
      for (std::size_t i = 0; i < before_[b].size(); ++i)
        if (!output[b][i] && after[b][i] != before_[b][i]) return true;
    return false;
  }

 private:
  const TensorSpot& spot(const Placed& p) const { return l_.spot[p.which]; }
  const Placed& find(LayoutTensor t) const {
    for (const Placed& p : tensors_)
      if (p.which == t) return p;
    throw std::invalid_argument("the layout run holds no such tensor");
  }

  const StridedLayout& l_;
  std::vector<Placed> tensors_;
  std::vector<std::vector<unsigned char>> before_;
  std::vector<DeviceBuffer<unsigned char>> device_;
};

// An output of a strided run: the tensor, and the contiguous buffer its view is copied into, where the
// fixture's compare() reads it.
struct LayoutOutput {
  LayoutTensor which;
  DeviceBuffer<unsigned char>* into;
};

// Every run of a fixture, forward or backward, contiguous or strided: launches `p` (a refusal comes back
// as the check's status alone), waits, and returns what `check` makes of the outputs.
template <class Check, class Params, class CheckOutputs>
Check launch_and_check(const KernelDesc& kernel, const Params& p, cudaStream_t stream, CheckOutputs check) {
  const Status st = launch(kernel, p, stream);
  if (st != Status::Success) {
    Check failed;
    failed.status = st;
    return failed;
  }
  FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  return check();
}

// The end of a strided run: launch_and_check, where the check first copies each output out of its view
// and then notes whether the launch wrote a byte outside the outputs' views.
template <class Check, class Params, class Compare>
Check launch_in_layout(const KernelDesc& kernel, const Params& p, const LayoutRun& r,
                       const std::vector<LayoutOutput>& outputs, cudaStream_t stream, Compare compare) {
  return launch_and_check<Check>(kernel, p, stream, [&] {
    const auto after = r.download();
    std::vector<LayoutTensor> written;
    for (const LayoutOutput& out : outputs) {
      out.into->upload(r.gather(after, out.which));
      written.push_back(out.which);
    }
    Check result = compare();
    result.outside_written = r.outside_written(after, written);
    return result;
  });
}

}  // namespace

void scatter_strided(const unsigned char* bhnd, unsigned char* buffer, const int64_t (&dims)[4], std::size_t element,
                     int64_t offset, const TensorStrides& st) {
  const int64_t heads = dims[1], rows = dims[2], d = dims[3];
  for (int64_t b = 0; b < dims[0]; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t n = 0; n < rows; ++n)
        std::memcpy(buffer + (offset + b * st.batch + h * st.head + n * st.row) * int64_t(element),
                    bhnd + ((b * heads + h) * rows + n) * d * int64_t(element), std::size_t(d) * element);
}

void gather_strided(const unsigned char* buffer, unsigned char* bhnd, const int64_t (&dims)[4], std::size_t element,
                    int64_t offset, const TensorStrides& st) {
  const int64_t heads = dims[1], rows = dims[2], d = dims[3];
  for (int64_t b = 0; b < dims[0]; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t n = 0; n < rows; ++n)
        std::memcpy(bhnd + ((b * heads + h) * rows + n) * d * int64_t(element),
                    buffer + (offset + b * st.batch + h * st.head + n * st.row) * int64_t(element),
                    std::size_t(d) * element);
}

StridedLayout bnhd_layout(const AttentionParams& s) {
  const int64_t b = s.batch, h = s.heads, kvh = kv_head_count(s), d = s.head_dim;
  StridedLayout l;
  l.name = "[B, N, H, D]";
  l.q = l.o = {s.seq_q * h * d, d, h * d};
  l.k = l.v = {s.seq_k * kvh * d, d, kvh * d};
  // Q, K, V, O, dO, dQ, dK, dV: a buffer each.
  for (int t = 0; t < 8; ++t) l.spot[t] = {t, 0};
  const int64_t q_elems = b * s.seq_q * h * d, kv_elems = b * s.seq_k * kvh * d;
  l.buffer_elems = {q_elems, kv_elems, kv_elems, q_elems, q_elems, q_elems, kv_elems, kv_elems};
  return l;
}

StridedLayout packed_qkv_layout(const AttentionParams& s) {
  const int64_t b = s.batch, h = s.heads, kvh = kv_head_count(s), d = s.head_dim;
  const int64_t width = (h + 2 * kvh) * d, rows = std::max(s.seq_q, s.seq_k);  // one packed row: Q, K, V heads
  const int64_t o_row = h * d + 16 / int64_t(dtype_size(output_dtype(s)));    // O's rows, 16 bytes of padding
  StridedLayout l;
  l.name = "Q, K, V slices of [B, N, H + 2·KVH, D]; O rows padded";
  l.q = {rows * width, d, width};
  l.k = l.v = l.q;
  l.o = {s.seq_q * o_row, d, o_row};
  // Buffer 0: QKV; 1: O; 2: dO; 3: dQ, dK, dV.
  l.spot[kLayoutQ] = {0, 0};
  l.spot[kLayoutK] = {0, h * d};
  l.spot[kLayoutV] = {0, (h + kvh) * d};
  l.spot[kLayoutO] = {1, 0};
  l.spot[kLayoutDO] = {2, 0};
  l.spot[kLayoutDQ] = {3, 0};
  l.spot[kLayoutDK] = {3, h * d};
  l.spot[kLayoutDV] = {3, (h + kvh) * d};
  l.buffer_elems = {b * rows * width, b * s.seq_q * o_row, b * s.seq_q * o_row, b * rows * width};
  return l;
}

AttentionParams with_strides(const AttentionParams& shape, const StridedLayout& l) {
  AttentionParams p = shape;
  const TensorStrides* from[4] = {&l.q, &l.k, &l.v, &l.o};
  int64_t* to[4] = {p.q_strides, p.k_strides, p.v_strides, p.o_strides};
  for (int i = 0; i < 4; ++i) to[i][0] = from[i]->batch, to[i][1] = from[i]->head, to[i][2] = from[i]->row;
  return p;
}

struct AttentionFixture::Impl {
  std::vector<int64_t> heads;  // flat b·H + h indices that are checked
  std::vector<std::vector<double>> ref_o, ref_lse;
  DeviceBuffer<unsigned char> q, k, v, o;
  DeviceBuffer<float> lse;
};

AttentionParams attention_shape(int64_t batch, int64_t heads, int64_t seq_q, int64_t seq_k, int64_t head_dim,
                                DType dtype, bool causal, float scale) {
  AttentionParams p{};
  p.batch = batch;
  p.heads = heads;
  p.seq_q = seq_q;
  p.seq_k = seq_k;
  p.head_dim = head_dim;
  p.scale = scale;
  p.causal = causal;
  p.dtype = static_cast<int32_t>(dtype);
  return p;
}

AttentionParams attention_on(const AttentionParams& shape, const void* q, const void* k, const void* v, void* o,
                             float* lse) {
  AttentionParams p = shape;
  p.q = q;
  p.k = k;
  p.v = v;
  p.o = o;
  p.lse = lse;
  return p;
}

AttentionFixture::AttentionFixture(const AttentionParams& s, uint64_t seed, int max_heads)
    : shape_(s), impl_(std::make_unique<Impl>()) {
  const DType dtype = dtype_of(s);
  const int64_t bh = s.batch * s.heads, group = group_size(s);
  const std::size_t nq = q_elems(s), nk = kv_elems(s);  // K, V: B·KVH heads of Nk rows
  if (dtype == DType::FP8_E4M3) {
    shape_.q_descale = kFp8Descale[0];
    shape_.k_descale = kFp8Descale[1];
    shape_.v_descale = kFp8Descale[2];
  }
  const double dq = descale(shape_.q_descale), dk = descale(shape_.k_descale), dv = descale(shape_.v_descale);
  const auto hq = draw(dtype, nq, seed, float(dq)), hk = draw(dtype, nk, seed + 1, float(dk)),
             hv = draw(dtype, nk, seed + 2, float(dv));
  Impl& m = *impl_;
  m.q = DeviceBuffer<unsigned char>(hq);
  m.k = DeviceBuffer<unsigned char>(hk);
  m.v = DeviceBuffer<unsigned char>(hv);
  m.o = DeviceBuffer<unsigned char>(nq * dtype_size(output_dtype(s)));
  m.lse = DeviceBuffer<float>(bh * s.seq_q);

  m.heads = pick_heads(bh, max_heads);
  m.ref_o.resize(m.heads.size());
  m.ref_lse.resize(m.heads.size());
  const double scale = softmax_scale(s);
  parallel_for(m.heads.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const int64_t h = m.heads[i];  // flat: b·H + head
      // Its K/V head by the definition (flashstages.h), not the kernels' shortcut h / G.
      const int64_t kv = h / s.heads * kv_head_count(s) + h % s.heads / group;
      const auto q = head_slice(hq, dtype, h, s.seq_q, s.head_dim, dq);
      const auto k = head_slice(hk, dtype, kv, s.seq_k, s.head_dim, dk);
      const auto v = head_slice(hv, dtype, kv, s.seq_k, s.head_dim, dv);
      m.ref_o[i].resize(s.seq_q * s.head_dim);
      m.ref_lse[i].resize(s.seq_q);
      ref::attention_forward_head(q.data(), k.data(), v.data(), s.seq_q, s.seq_k, s.head_dim, scale, s.causal,
                                  m.ref_o[i].data(), m.ref_lse[i].data());
    }
  });
}

AttentionFixture::~AttentionFixture() = default;

AttentionParams AttentionFixture::params() const {
  return attention_on(shape_, impl_->q.get(), impl_->k.get(), impl_->v.get(), impl_->o.get(), impl_->lse.get());
}

void AttentionFixture::poison_outputs() {
  impl_->o.poison();
  impl_->lse.poison();
}

AttentionCheck AttentionFixture::compare() const {
  const Impl& m = *impl_;
  const auto o = m.o.download();
  const auto lse = m.lse.download();
  const int64_t rows = shape_.seq_q, d = shape_.head_dim;
  AttentionCheck result;
  for (std::size_t i = 0; i < m.heads.size(); ++i) {
    const int64_t h = m.heads[i];
    for (int64_t e = 0; e < rows * d; ++e)
      result.o.add(element(o.data(), output_dtype(shape_), h * rows * d + e), m.ref_o[i][e]);
    for (int64_t r = 0; r < rows; ++r) result.lse.add(lse[h * rows + r], m.ref_lse[i][r]);
  }
  result.heads_checked = static_cast<int>(m.heads.size());
  return result;
}

AttentionCheck AttentionFixture::run(const KernelDesc& kernel, cudaStream_t stream) {
  poison_outputs();
  return launch_and_check<AttentionCheck>(kernel, params(), stream, [&] { return compare(); });
}

AttentionCheck AttentionFixture::run_strided(const KernelDesc& kernel, const StridedLayout& layout,
                                             cudaStream_t stream) {
  Impl& m = *impl_;
  const auto q = m.q.download(), k = m.k.download(), v = m.v.download();
  const LayoutRun r(layout, placed(shape_, layout, {kLayoutQ, kLayoutK, kLayoutV, kLayoutO}), {&q, &k, &v, nullptr});
  poison_outputs();
  const AttentionParams p = attention_on(with_strides(shape_, layout), r.ptr(kLayoutQ), r.ptr(kLayoutK),
                                         r.ptr(kLayoutV), r.ptr(kLayoutO), m.lse.get());
  return launch_in_layout<AttentionCheck>(kernel, p, r, {{kLayoutO, &m.o}}, stream, [&] { return compare(); });
}

bool AttentionFixture::untouched_after(const KernelDesc& kernel, const AttentionParams& bad, Status* returned) {
  Impl& m = *impl_;
  poison_outputs();
  *returned = launch(kernel, bad, nullptr);
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  const auto o = m.o.download();
  const auto lse = m.lse.download();
  return all_poison(o.data(), o.size()) &&
         all_poison(reinterpret_cast<const unsigned char*>(lse.data()), lse.size() * sizeof(float));
}

// ---- Backward ----------------------------------------------------------------------------------

double standin_lse(const AttentionParams& shape) {
  return std::fabs(double(softmax_scale(shape))) * double(shape.head_dim);
}

struct AttentionBwdFixture::Impl {
  // Flat K/V heads (b·KVH + kv head) that are checked, each with the G query heads of its group, which
  // are the flat query heads kvh·G .. kvh·G + G - 1 (common/lib/attention.h): consecutive, so their dQ
  // and delta are one span of the outputs. Multi-head attention: G = 1, a K/V head per query head.
  std::vector<int64_t> kv_heads;
  std::vector<std::vector<double>> ref_dq, ref_dk, ref_dv, ref_delta;  // dQ, delta [G, ...] of each
  DeviceBuffer<unsigned char> q, k, v, o, d_o, dq, dk, dv;
  DeviceBuffer<float> lse, delta;
};

AttentionBwdFixture::AttentionBwdFixture(const AttentionParams& s, uint64_t seed, int max_heads)
    : shape_(s), impl_(std::make_unique<Impl>()) {
  const DType dtype = dtype_of(s);
  const int64_t bh = s.batch * s.heads, bkv = s.batch * kv_head_count(s), group = group_size(s);
  const int64_t nq = s.seq_q, nk = s.seq_k, d = s.head_dim;
  const std::size_t q_n = q_elems(s), kv_n = kv_elems(s);
  const auto hq = draw(dtype, q_n, seed), hk = draw(dtype, kv_n, seed + 1), hv = draw(dtype, kv_n, seed + 2),
             h_do = draw(dtype, q_n, seed + 3);
  // The forward's outputs: stand-ins everywhere, the fp64 forward over them for the checked heads.
  auto ho = draw(dtype, q_n, seed + 4);
  std::vector<float> h_lse(bh * nq, float(standin_lse(s)));

  Impl& m = *impl_;
  m.kv_heads = pick_heads(bkv, max_heads);
  const std::size_t n_heads = m.kv_heads.size();
  m.ref_dq.resize(n_heads);
  m.ref_dk.resize(n_heads);
  m.ref_dv.resize(n_heads);
  m.ref_delta.resize(n_heads);
  const double scale = softmax_scale(s);
  parallel_for(n_heads, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const int64_t kvh = m.kv_heads[i], h0 = kvh * group;  // h0: the group's first query head
      const auto q = head_slice(hq, dtype, kvh, group * nq, d), d_o = head_slice(h_do, dtype, kvh, group * nq, d);
      const auto k = head_slice(hk, dtype, kvh, nk, d), v = head_slice(hv, dtype, kvh, nk, d);
      std::vector<double> o(nq * d), lse(nq);
      for (int64_t h = 0; h < group; ++h) {
        ref::attention_forward_head(q.data() + h * nq * d, k.data(), v.data(), nq, nk, d, scale, s.causal, o.data(),
                                    lse.data());
        // Each group owns its slices of ho and h_lse: the threads never write the same bytes.
        for (int64_t e = 0; e < nq * d; ++e) set_element(ho.data(), dtype, (h0 + h) * nq * d + e, o[e]);
        for (int64_t r = 0; r < nq; ++r) h_lse[(h0 + h) * nq + r] = float(lse[r]);
      }
      m.ref_dq[i].resize(group * nq * d);
      m.ref_dk[i].resize(nk * d);
      m.ref_dv[i].resize(nk * d);
      m.ref_delta[i].resize(group * nq);
      ref::attention_backward_group(q.data(), k.data(), v.data(), d_o.data(), group, nq, nk, d, scale, s.causal,
                                    m.ref_dq[i].data(), m.ref_dk[i].data(), m.ref_dv[i].data(),
                                    m.ref_delta[i].data());
    }
  });
  m.q = DeviceBuffer<unsigned char>(hq);
  m.k = DeviceBuffer<unsigned char>(hk);
  m.v = DeviceBuffer<unsigned char>(hv);
  m.o = DeviceBuffer<unsigned char>(ho);
  m.d_o = DeviceBuffer<unsigned char>(h_do);
  m.lse = DeviceBuffer<float>(h_lse);
  m.dq = DeviceBuffer<unsigned char>(q_n * dtype_size(dtype));
  m.dk = DeviceBuffer<unsigned char>(kv_n * dtype_size(dtype));
  m.dv = DeviceBuffer<unsigned char>(kv_n * dtype_size(dtype));
  m.delta = DeviceBuffer<float>(bh * nq);
}

AttentionBwdFixture::~AttentionBwdFixture() = default;

AttentionBwdParams AttentionBwdFixture::params() const {
  const Impl& m = *impl_;
  AttentionBwdParams p{};
  p.fwd = attention_on(shape_, m.q.get(), m.k.get(), m.v.get(), m.o.get(), m.lse.get());
  p.d_o = m.d_o.get();
  p.dq = m.dq.get();
  p.dk = m.dk.get();
  p.dv = m.dv.get();
  p.delta = m.delta.get();
  return p;
}

void AttentionBwdFixture::poison_outputs() {
  impl_->dq.poison();
  impl_->dk.poison();
  impl_->dv.poison();
  impl_->delta.poison();
}

AttentionBwdCheck AttentionBwdFixture::compare(bool with_delta) const {
  const Impl& m = *impl_;
  const DType t = dtype_of(shape_);
  const auto dq = m.dq.download(), dk = m.dk.download(), dv = m.dv.download();
  const auto delta = m.delta.download();
  const int64_t nq = shape_.seq_q, nk = shape_.seq_k, d = shape_.head_dim, group = group_size(shape_);
  AttentionBwdCheck result;
  for (std::size_t i = 0; i < m.kv_heads.size(); ++i) {
    const int64_t kvh = m.kv_heads[i];  // its group's query heads: kvh·G .. kvh·G + G - 1, one span
    for (int64_t e = 0; e < group * nq * d; ++e)
      result.dq.add(element(dq.data(), t, kvh * group * nq * d + e), m.ref_dq[i][e]);
    for (int64_t e = 0; e < nk * d; ++e) {
      result.dk.add(element(dk.data(), t, kvh * nk * d + e), m.ref_dk[i][e]);
      result.dv.add(element(dv.data(), t, kvh * nk * d + e), m.ref_dv[i][e]);
    }
    if (with_delta)
      for (int64_t r = 0; r < group * nq; ++r) result.delta.add(delta[kvh * group * nq + r], m.ref_delta[i][r]);
  }
  if (!with_delta)
    result.delta_written = !all_poison(reinterpret_cast<const unsigned char*>(delta.data()), delta.size() * 4);
  result.heads_checked = static_cast<int>(m.kv_heads.size() * group);
  return result;
}

AttentionBwdCheck AttentionBwdFixture::run(const KernelDesc& kernel, const AttentionBwdParams& p,
                                           cudaStream_t stream) {
  poison_outputs();
  return launch_and_check<AttentionBwdCheck>(kernel, p, stream, [&] { return compare(p.delta != nullptr); });
}

AttentionBwdCheck AttentionBwdFixture::run_strided(const KernelDesc& kernel, const AttentionBwdParams& given,
                                                   const StridedLayout& layout, cudaStream_t stream) {
  Impl& m = *impl_;
  const auto q = m.q.download(), k = m.k.download(), v = m.v.download(), o = m.o.download(), d_o = m.d_o.download();
  const LayoutRun r(layout,
                    placed(shape_, layout,
                           {kLayoutQ, kLayoutK, kLayoutV, kLayoutO, kLayoutDO, kLayoutDQ, kLayoutDK, kLayoutDV}),
                    {&q, &k, &v, &o, &d_o, nullptr, nullptr, nullptr});
  poison_outputs();
  AttentionBwdParams p = given;
  p.fwd = attention_on(with_strides(given.fwd, layout), r.ptr(kLayoutQ), r.ptr(kLayoutK), r.ptr(kLayoutV),
                       r.ptr(kLayoutO), given.fwd.lse);
  p.d_o = r.ptr(kLayoutDO);
  p.dq = r.ptr(kLayoutDQ);
  p.dk = r.ptr(kLayoutDK);
  p.dv = r.ptr(kLayoutDV);
  return launch_in_layout<AttentionBwdCheck>(kernel, p, r, {{kLayoutDQ, &m.dq}, {kLayoutDK, &m.dk}, {kLayoutDV, &m.dv}},
                                             stream, [&] { return compare(p.delta != nullptr); });
}

bool AttentionBwdFixture::untouched_after(const KernelDesc& kernel, const AttentionBwdParams& bad,
                                          Status* returned) {
  const Impl& m = *impl_;
  poison_outputs();
  *returned = launch(kernel, bad, nullptr);
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  const auto dq = m.dq.download(), dk = m.dk.download(), dv = m.dv.download();
  const auto delta = m.delta.download();
  return all_poison(dq.data(), dq.size()) && all_poison(dk.data(), dk.size()) && all_poison(dv.data(), dv.size()) &&
         all_poison(reinterpret_cast<const unsigned char*>(delta.data()), delta.size() * sizeof(float));
}

std::vector<unsigned char> AttentionBwdFixture::dq_bytes() const { return impl_->dq.download(); }
std::vector<unsigned char> AttentionBwdFixture::dk_bytes() const { return impl_->dk.download(); }
std::vector<unsigned char> AttentionBwdFixture::dv_bytes() const { return impl_->dv.download(); }

}  // namespace fs
