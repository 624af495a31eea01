#include "common/tools/attention_tests.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

#include "common/lib/cuda_check.h"
#include "common/lib/numeric.h"
#include "common/lib/random.h"
#include "common/tools/check.h"
#include "common/tools/device_buffer.h"
#include "common/tools/reference.h"

namespace fs::testing {

std::vector<AttentionParams> odd_shapes(DType dtype, const std::vector<int64_t>& dims) {
  struct Sizes {
    int64_t b, h, nq, nk;
  };
  const int64_t n = size_for_run(1000, 200), n_odd = size_for_run(1023, 223);
  // One query row over many keys (decoding, every head its own K/V) and many rows over one key, with
  // B·H > 1, beside the 1 × 1 problem.
  const Sizes sizes[] = {{1, 1, 1, 1},    {2, 3, 17, 17},   {1, 2, n, n}, {2, 1, 17, 100}, {1, 2, n, n_odd},
                         {3, 1, 100, 17}, {2, 3, 1, n},     {2, 3, 17, 1}};
  std::vector<AttentionParams> out;
  for (int64_t d : dims)
    for (const Sizes& s : sizes)
      for (bool causal : {false, true}) {
        if (causal && s.nq > s.nk) continue;
        out.push_back(attention_shape(s.b, s.h, s.nq, s.nk, d, dtype, causal));
      }
  return out;
}

std::vector<AttentionParams> gqa_shapes(DType dtype, const std::vector<int64_t>& dims) {
  struct Sizes {
    int64_t b, h, kv_heads, nq, nk;
  };
  const int64_t n = size_for_run(1000, 200), n_odd = size_for_run(1023, 223);
  const int64_t long_k = size_for_run(4097, 517), longer_k = size_for_run(16384, 1100);
  const Sizes sizes[] = {{2, 4, 2, 17, 17},  {2, 4, 2, 100, n_odd}, {3, 6, 1, 17, 100},
                         {1, 4, 1, n, n},     {2, 4, 2, 1, n},       {3, 6, 1, 1, long_k},
                         {1, 8, 2, 1, longer_k}};
  std::vector<AttentionParams> out;
  for (int64_t d : dims)
    for (const Sizes& s : sizes)
      for (bool causal : {false, true}) {
        if (causal && s.nq > s.nk) continue;
        AttentionParams p = attention_shape(s.b, s.h, s.nq, s.nk, d, dtype, causal);
        p.kv_heads = s.kv_heads;
        out.push_back(p);
      }
  return out;
}

// doctest prints a char* as a pointer: messages are built from std::string.
static std::string name(const KernelDesc& k) { return k.qualified(); }

void check_against_reference(const KernelDesc& kernel, const AttentionParams& shape, uint64_t seed,
                             const KernelDesc* naive) {
  check_each_against_reference({&kernel}, shape, seed, naive);
}

void check_each_against_reference(const std::vector<const KernelDesc*>& kernels, const AttentionParams& shape,
                                  uint64_t seed, const KernelDesc* naive) {
  if (kernels.empty()) return;
  INFO(describe(shape), " seed=", seed);
  AttentionFixture problem(shape, seed);
  const bool against_naive = naive && dtype_of(shape) != DType::FP32;
  AttentionCheck n;
  if (against_naive) {
    n = problem.run(*naive);
    REQUIRE(n.status == Status::Success);
    // The yardstick is held to the same tolerances: a wrong naive run would widen every budget it sets.
    INFO("naive O: ", n.o.str(), "  naive LSE: ", n.lse.str());
    CHECK(within(n.o, attention_tolerance(dtype_of(shape))));
    CHECK(within(n.lse, lse_tolerance(dtype_of(shape))));
  }
  for (const KernelDesc* kernel : kernels) {
    INFO(name(*kernel));
    const AttentionCheck c = problem.run(*kernel);
    REQUIRE_MESSAGE(c.status == Status::Success, std::string(status_name(c.status)));
    INFO("O: ", c.o.str(), "  LSE: ", c.lse.str());
    CHECK(c.o.nonfinite == 0);
    CHECK(c.lse.nonfinite == 0);
    CHECK(within(c.o, attention_tolerance(dtype_of(shape))));
    CHECK(within(c.lse, lse_tolerance(dtype_of(shape))));
    if (against_naive) {
      INFO("naive O: ", n.o.str(), "  naive LSE: ", n.lse.str());
      CHECK(within_naive_budget(c.o, n.o));
      CHECK(within_naive_budget(c.lse, n.lse));
    }
  }
}

namespace {

// Builds a problem of shape `ok` (no reference), makes its params bad, launches: `expected` comes
// back and the outputs keep their poison. Fixture: AttentionFixture or AttentionBwdFixture.
template <class Fixture, class Params>
void check_refused(const KernelDesc& kernel, const AttentionParams& ok, const std::function<void(Params&)>& make_bad,
                   Status expected) {
  Fixture problem(ok, 1, /*max_heads=*/-1);
  Params bad = problem.params();
  make_bad(bad);
  Status returned = Status::Success;
  const bool untouched = problem.untouched_after(kernel, bad, &returned);
  INFO(name(kernel), " expected ", std::string(status_name(expected)), ", got ", std::string(status_name(returned)));
  CHECK(returned == expected);
  CHECK(untouched);
}

}  // namespace

void check_rejected(const KernelDesc& kernel, const AttentionParams& ok,
                    const std::function<void(AttentionParams&)>& make_bad, Status expected) {
  check_refused<AttentionFixture>(kernel, ok, make_bad, expected);
}

// ---- Strided layouts ----

std::vector<AttentionParams> strided_shapes(DType dtype, int64_t d) {
  struct Sizes {
    int64_t b, h, kv_heads, nq, nk;
  };
  const Sizes sizes[] = {{2, 3, 0, 17, 17}, {2, 2, 0, 17, 100}, {3, 1, 0, 100, 17}, {2, 4, 2, 33, 130}, {2, 6, 1, 1, 300}};
  std::vector<AttentionParams> out;
  for (const Sizes& s : sizes)
    for (bool causal : {false, true}) {
      if (causal && s.nq > s.nk) continue;
      AttentionParams p = attention_shape(s.b, s.h, s.nq, s.nk, d, dtype, causal);
      p.kv_heads = s.kv_heads;
      out.push_back(p);
    }
  return out;
}

void check_strided_layouts(const KernelDesc& kernel, const AttentionParams& shape, uint64_t seed,
                           const KernelDesc* naive) {
  AttentionFixture problem(shape, seed);
  AttentionCheck n;
  if (naive && dtype_of(shape) != DType::FP32) n = problem.run(*naive);
  for (const StridedLayout& layout : {bnhd_layout(shape), packed_qkv_layout(shape)}) {
    INFO(name(kernel), " ", describe(shape), " ", layout.name, " seed=", seed);
    const AttentionCheck c = problem.run_strided(kernel, layout);
    REQUIRE_MESSAGE(c.status == Status::Success, std::string(status_name(c.status)));
    INFO("O: ", c.o.str(), "  LSE: ", c.lse.str());
    CHECK(c.o.nonfinite == 0);
    CHECK(c.lse.nonfinite == 0);
    CHECK(within(c.o, attention_tolerance(dtype_of(shape))));
    CHECK(within(c.lse, lse_tolerance(dtype_of(shape))));
    CHECK_FALSE(c.outside_written);
    if (naive && dtype_of(shape) != DType::FP32) {
      REQUIRE(n.status == Status::Success);
      INFO("naive O: ", n.o.str(), "  naive LSE: ", n.lse.str());
      CHECK(within_naive_budget(c.o, n.o));
      CHECK(within_naive_budget(c.lse, n.lse));
    }
  }
}

void check_layout_refusals(const KernelDesc& kernel, const AttentionParams& ok) {
  const StridedLayout bnhd = bnhd_layout(ok);
  if (!kernel.attention.strided) {
    check_rejected(kernel, ok, [&](AttentionParams& p) { p = with_strides(p, bnhd); }, Status::UnsupportedLayout);
    return;
  }
  const int64_t d = ok.head_dim;
  check_rejected(kernel, ok, [&](AttentionParams& p) { p = with_strides(p, bnhd), p.k_strides[2] = -p.k_strides[2]; },
                 Status::InvalidStrides);
  check_rejected(kernel, ok, [&](AttentionParams& p) { p = with_strides(p, bnhd), p.q_strides[1] = d / 2; },
                 Status::InvalidStrides);  // heads half a row apart: they overlap
  check_rejected(kernel, ok, [&](AttentionParams& p) { p = with_strides(p, bnhd), p.o_strides[0] += 1; },
                 Status::InvalidStrides);  // batch entries one element off 16 bytes
}

void check_rejects_bad_inputs(const KernelDesc& kernel, const AttentionParams& ok) {
  check_rejected(kernel, ok, [](AttentionParams& p) { p.q = nullptr; }, Status::NullPointer);
  check_rejected(kernel, ok, [](AttentionParams& p) { p.v = nullptr; }, Status::NullPointer);
  check_rejected(kernel, ok, [](AttentionParams& p) { p.seq_k = 0; }, Status::InvalidSize);
  check_rejected(kernel, ok, [](AttentionParams& p) { p.heads = -1; }, Status::InvalidSize);
  check_rejected(kernel, ok, [](AttentionParams& p) { p.kv_heads = -1; }, Status::InvalidKvHeads);
  check_rejected(kernel, ok, [](AttentionParams& p) { p.kv_heads = p.heads + 1; }, Status::InvalidKvHeads);
  // 3 query heads cannot be split evenly over 2 K/V heads (refused before any read, so that the
  // buffers hold fewer heads does not matter).
  check_rejected(kernel, ok, [](AttentionParams& p) { p.heads = 3, p.kv_heads = 2; }, Status::InvalidKvHeads);
  check_rejected(kernel, ok, [](AttentionParams& p) { p.scale = std::numeric_limits<float>::infinity(); },
                 Status::InvalidScale);
  // Same buffers, read as fewer keys than queries: a causal mask would leave rows with no key.
  check_rejected(kernel, ok, [](AttentionParams& p) { p.causal = 1; p.seq_k = p.seq_q - 1; },
                 Status::UnsupportedMask);
  // fp8's dequantization scales: no scale when negative or NaN, and refused where they would be ignored
  // (any other dtype) rather than dropped.
  check_rejected(kernel, ok, [](AttentionParams& p) { p.k_descale = p.dtype == FS_FP8_E4M3 ? -1.0f : 2.0f; },
                 Status::InvalidScale);
  check_rejected(kernel, ok, [](AttentionParams& p) { p.v_descale = std::numeric_limits<float>::quiet_NaN(); },
                 Status::InvalidScale);
  check_rejected(kernel, ok, [](AttentionParams& p) { p.dtype = FS_INT8; }, Status::UnsupportedDtype);
  check_rejected(kernel, ok, [](AttentionParams& p) { p.dtype = 99; }, Status::UnsupportedDtype);
  // B·H·N·D·bytes past 2^63: the product must not wrap into a small, valid-looking size.
  check_rejected(kernel, ok, [](AttentionParams& p) { p.batch = int64_t(1) << 62; }, Status::InvalidSize);
  // No wrap, but more bytes than the GPU has: no pointer can really hold that, whatever it claims.
  check_rejected(kernel, ok, [](AttentionParams& p) { p.batch = int64_t(1) << 36; }, Status::InvalidSize);
}

namespace {

// Calls `launch` (which enqueues on the legacy default stream) while another, blocking stream is being
// captured in global mode: work on the legacy stream would have to wait for that stream, which a
// stream under capture cannot allow, so the runtime refuses it. Returns what the launcher returned;
// the capture is ended and nothing sticky is left behind.
Status launch_while_capturing(const std::function<Status()>& launch) {
  cudaStream_t capturing;
  FS_CUDA_CHECK(cudaStreamCreate(&capturing));
  FS_CUDA_CHECK(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeGlobal));
  const Status st = launch();
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(capturing, &graph);  // invalidated by the refused call: an error is expected
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  FS_CUDA_CHECK(cudaStreamDestroy(capturing));
  return st;
}

}  // namespace

void check_reports_cuda_error(const KernelDesc& kernel, const AttentionParams& ok) {
  AttentionFixture problem(ok, 1, /*max_heads=*/-1);
  const Status st = launch_while_capturing([&] { return launch(kernel, problem.params(), nullptr); });
  INFO(name(kernel), " returned ", std::string(status_name(st)), ": ", std::string(last_cuda_error()));
  CHECK(st == Status::CudaError);
  FS_CUDA_CHECK(cudaDeviceSynchronize());  // the refusal left no sticky error behind
}

// ---- Variable-length batches --------------------------------------------------------------------

namespace {

// NaN in every row past lens[b] of a padded [B, heads, rows, width] tensor, in each of its heads: the rows
// the batch does not use (none for a length past the padded size, which the kernels refuse on the device).
template <class X>
void poison_padding(const Varlen& c, std::vector<X>& x, int64_t heads, int64_t rows, int64_t width) {
  const X nan = from_float<X>(std::numeric_limits<float>::quiet_NaN());
  for (int64_t bh = 0; bh < c.batch * heads; ++bh) {
    const int64_t row0 = bh * rows, used = std::min<int64_t>(c.lens[bh / heads], rows);
    std::fill(x.begin() + (row0 + used) * width, x.begin() + (row0 + rows) * width, nan);
  }
}

// The batch's tensors on the device, with its length arrays, and the params that point at them.
template <class T>
struct VarlenBuffers {
  std::vector<T> hq, hk, hv;
  DeviceBuffer<T> q, k, v, o;
  DeviceBuffer<float> lse;
  DeviceBuffer<int32_t> lens, cu_q, cu_k;
  AttentionParams p{};

  VarlenBuffers(const Varlen& c, uint64_t seed)
      : hq(random_uniform<T>(c.q_total() * c.d, seed)), hk(random_uniform<T>(c.k_total() * c.d, seed + 1)),
        hv(random_uniform<T>(c.k_total() * c.d, seed + 2)) {
    if (!c.packed()) {
      poison_padding(c, hq, c.heads, c.seq_q, c.d);
      poison_padding(c, hk, c.kvh(), c.seq_k, c.d);
      poison_padding(c, hv, c.kvh(), c.seq_k, c.d);
    }
    q = DeviceBuffer<T>(hq);
    k = DeviceBuffer<T>(hk);
    v = DeviceBuffer<T>(hv);
    o = DeviceBuffer<T>(hq.size());
    lse = DeviceBuffer<float>(c.q_total());
    const DType dtype = std::is_same_v<T, __half> ? DType::FP16 : DType::BF16;
    p = attention_on(attention_shape(c.batch, c.heads, c.seq_q, c.seq_k, c.d, dtype, c.causal), q.get(), k.get(),
                     v.get(), o.get(), lse.get());
    p.kv_heads = c.kv_heads;
    if (c.packed()) {
      cu_q = DeviceBuffer<int32_t>(c.cu_q);
      cu_k = DeviceBuffer<int32_t>(c.cu_k);
      p.cu_seqlens_q = cu_q.get();
      p.cu_seqlens_k = cu_k.get();
    } else {
      lens = DeviceBuffer<int32_t>(c.lens);
      p.seq_lens = lens.get();
    }
    o.poison();
    lse.poison();
  }

  // Q, K, V and O laid out by position instead, through the strides: padded batches [B, N, heads, D],
  // packed ones [total, heads, D] (FlashAttention's varlen layout; the batch stride left 0, as it moves
  // nothing). The params point at copies in that layout; o_out() reads O back contiguous.
  DeviceBuffer<T> by_position_q, by_position_k, by_position_v, by_position_o;
  void lay_out_by_position(const Varlen& c) {
    const int64_t entries = c.packed() ? 1 : c.batch;
    const int64_t q_dims[4] = {entries, c.heads, c.seq_q, c.d}, k_dims[4] = {entries, c.kvh(), c.seq_k, c.d};
    const TensorStrides q_st{c.packed() ? 0 : c.seq_q * c.heads * c.d, c.d, c.heads * c.d};
    const TensorStrides k_st{c.packed() ? 0 : c.seq_k * c.kvh() * c.d, c.d, c.kvh() * c.d};
    auto place = [](const std::vector<T>& x, const int64_t(&dims)[4], const TensorStrides& st) {
      std::vector<T> y(x.size());
      scatter_strided(reinterpret_cast<const unsigned char*>(x.data()), reinterpret_cast<unsigned char*>(y.data()),
                      dims, sizeof(T), 0, st);
      return DeviceBuffer<T>(y);
    };
    by_position_q = place(hq, q_dims, q_st);
    by_position_k = place(hk, k_dims, k_st);
    by_position_v = place(hv, k_dims, k_st);
    by_position_o = DeviceBuffer<T>(hq.size());
    p.q = by_position_q.get(), p.k = by_position_k.get(), p.v = by_position_v.get(), p.o = by_position_o.get();
    const TensorStrides* from[4] = {&q_st, &k_st, &k_st, &q_st};
    int64_t* to[4] = {p.q_strides, p.k_strides, p.v_strides, p.o_strides};
    for (int i = 0; i < 4; ++i) to[i][0] = from[i]->batch, to[i][1] = from[i]->head, to[i][2] = from[i]->row;
    o_dims_[0] = q_dims[0], o_dims_[1] = q_dims[1], o_dims_[2] = q_dims[2], o_dims_[3] = q_dims[3];
    o_strides_ = q_st;
  }
  DeviceBuffer<T>& o_buffer() { return by_position_o.get() ? by_position_o : o; }
  std::vector<T> o_out() const {
    if (!by_position_o.get()) return o.download();
    const std::vector<T> laid = by_position_o.download();
    std::vector<T> out(laid.size());
    gather_strided(reinterpret_cast<const unsigned char*>(laid.data()), reinterpret_cast<unsigned char*>(out.data()),
                   o_dims_, sizeof(T), 0, o_strides_);
    return out;
  }

 private:
  int64_t o_dims_[4] = {};
  TensorStrides o_strides_{};
};

template <class T>
void check_varlen_batch(const KernelDesc& kernel, const Varlen& c, uint64_t seed, bool by_position = false) {
  VarlenBuffers<T> buf(c, seed);
  if (by_position) buf.lay_out_by_position(c);
  INFO(name(kernel), std::string(c.packed() ? " packed " : " padded "), by_position ? "by position " : "",
       describe(buf.p), " seed=", seed);
  for (bool tight : {false, true}) {
    if (tight && !c.packed()) break;
    AttentionParams p = buf.p;
    if (tight) REQUIRE(fs::check_varlen(&p, nullptr) == Status::Success);
    buf.o_buffer().poison();
    buf.lse.poison();
    const Status st = launch(kernel, p, nullptr);
    REQUIRE_MESSAGE(st == Status::Success, std::string(status_name(st)));
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    const auto out_o = buf.o_out();
    const auto out_lse = buf.lse.download();

    ErrorStats err_o, err_lse;
    int64_t wrong_padding = 0;
    const double scale = 1.0 / std::sqrt(double(c.d));
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < c.heads; ++h) {
        const int64_t nq = c.nq(b), nk = c.nk(b), q0 = c.q_row0(b, h), k0 = c.k_row0(b, h);
        std::vector<double> rq(nq * c.d), rk(nk * c.d), rv(nk * c.d), ro(nq * c.d), rl(nq);
        for (int64_t i = 0; i < nq * c.d; ++i) rq[i] = to_double(buf.hq[q0 * c.d + i]);
        for (int64_t i = 0; i < nk * c.d; ++i)
          rk[i] = to_double(buf.hk[k0 * c.d + i]), rv[i] = to_double(buf.hv[k0 * c.d + i]);
        const bool has_keys = nk > 0;
        if (has_keys)
          ref::attention_forward_head(rq.data(), rk.data(), rv.data(), nq, nk, c.d, scale, c.causal, ro.data(),
                                      rl.data());
        for (int64_t r = 0; r < c.rows(b); ++r) {
          const float got_lse = out_lse[q0 + r];
          if (r < nq && has_keys) {
            for (int64_t e = 0; e < c.d; ++e) err_o.add(to_double(out_o[(q0 + r) * c.d + e]), ro[r * c.d + e]);
            err_lse.add(got_lse, rl[r]);
          } else {
            for (int64_t e = 0; e < c.d; ++e) wrong_padding += to_double(out_o[(q0 + r) * c.d + e]) != 0.0;
            wrong_padding += !(std::isinf(got_lse) && got_lse < 0);
          }
        }
      }
    INFO("max_seq_q=", p.max_seq_q, "  O: ", err_o.str(), "  LSE: ", err_lse.str(), "  wrong padding values: ",
         wrong_padding);
    CHECK(err_o.count > 0);
    CHECK(err_o.nonfinite == 0);
    CHECK(within(err_o, attention_tolerance(dtype_of(p))));
    CHECK(within(err_lse, lse_tolerance(dtype_of(p))));
    CHECK(wrong_padding == 0);
  }
}

// The layouts check_varlen_layouts and check_varlen_grouped run.
Varlen padded_layout(int64_t heads, int64_t d, bool causal) {
  Varlen c{3, heads, d, causal, {200, 0, 77}};
  c.seq_q = 200;
  c.seq_k = 230;  // keys past seq_lens[b] exist (NaN) but must not be read
  return c;
}
// Non-causal: entry 1 has queries but no keys (O = 0, LSE = -inf).
Varlen packed_layout(int64_t heads, int64_t d) {
  return Varlen{3, heads, d, false, {}, 330, 350, {0, 70, 100, 330}, {0, 100, 100, 350}};
}
// Causal: no entry has more queries than keys, and one has none at all.
Varlen packed_causal_layout(int64_t heads, int64_t d) {
  return Varlen{3, heads, d, true, {}, 300, 400, {0, 70, 70, 300}, {0, 100, 150, 400}};
}

using LayoutCheck = std::function<void(const Varlen&, DType)>;

// Padded batches causal and not, in fp16 and bf16; packed in fp16, packed causal in bf16: what
// check_varlen_layouts and check_bwd_varlen_layouts run, in this order.
void each_layout(int64_t d, const LayoutCheck& check) {
  for (bool causal : {false, true})
    for (DType t : {DType::FP16, DType::BF16}) check(padded_layout(2, d, causal), t);
  check(packed_layout(2, d), DType::FP16);
  check(packed_causal_layout(2, d), DType::BF16);
}

// 4 query heads over 2 K/V heads, then over 1: padded causal in fp16, packed in bf16.
void each_grouped_layout(int64_t d, const LayoutCheck& check) {
  for (int64_t kv_heads : {2, 1}) {
    Varlen padded = padded_layout(4, d, /*causal=*/true), packed = packed_layout(4, d);
    padded.kv_heads = packed.kv_heads = kv_heads;
    check(padded, DType::FP16);
    check(packed, DType::BF16);
  }
}

// The layouts a strided check walks, each addressed by position (every tensor with strides of its own):
// padded causal in fp16, packed in fp16, packed causal in bf16, then 4 query heads over 2 K/V heads.
void each_layout_by_position(int64_t d, const LayoutCheck& check) {
  check(padded_layout(2, d, /*causal=*/true), DType::FP16);
  check(packed_layout(2, d), DType::FP16);
  check(packed_causal_layout(2, d), DType::BF16);
  Varlen grouped = packed_layout(4, d);
  grouped.kv_heads = 2;
  check(grouped, DType::BF16);
}

// A layout whose lengths break a rule, and what a launch does with each entry.
struct BadLayout {
  const char* what;
  Varlen layout;
  int64_t max_seq_q, max_seq_k;  // packed: as given to the launch
  Status named;                  // what fs_check_varlen returns
  std::vector<bool> skipped;     // per entry: left unwritten
};

// The rules forward and backward share. Dense sizes Nq = 17, Nk = 40 for the padded case; totals for
// the packed ones.
std::vector<BadLayout> bad_layouts() {
  const Varlen long_lens{2, 2, 64, false, {17, 18}, 17, 40};  // 18 > min(Nq, Nk) = 17
  const Varlen short_total{2, 2, 64, false, {}, 17, 40, {0, 10, 16}, {0, 5, 40}};  // ends before Nq = 17
  const Varlen decreasing{2, 2, 64, false, {}, 17, 40, {0, 20, 17}, {0, 5, 40}};   // 20 > the total, then down
  const Varlen causal_more_q{2, 2, 64, true, {}, 17, 40, {0, 10, 17}, {0, 5, 40}}; // entry 0: 10 queries, 5 keys
  const Varlen too_long{2, 2, 64, false, {}, 17, 40, {0, 10, 17}, {0, 5, 40}};      // entry 0 longer than max_seq_q
  return {
      {"padded, a length past min(Nq, Nk)", long_lens, 0, 0, Status::InvalidSeqLens, {false, true}},
      {"packed, offsets that end before the total", short_total, 0, 0, Status::InvalidSeqLens, {false, false}},
      {"packed, offsets past the total and decreasing", decreasing, 0, 0, Status::InvalidSeqLens, {true, true}},
      {"packed causal, an entry with more queries than keys", causal_more_q, 0, 0, Status::UnsupportedMask,
       {true, false}},
      {"packed, an entry longer than max_seq_q", too_long, 8, 0, Status::Success, {true, false}},
  };
}

// The rows entry b owns of a query-side tensor (Q, O, dQ: [B, H, Nq, ·] padded, [H, total, ·] packed) or,
// with `keys`, of a key-side one (K, V, dK, dV, with KVH heads), as far as they lie inside it: every
// head's, as flat row indices. A padded entry owns its padding rows too, which a launch zeroes unless it
// skips the entry.
std::vector<int64_t> owned_rows(const Varlen& c, int64_t b, bool keys) {
  const int64_t heads = keys ? c.kvh() : c.heads, n = keys ? c.seq_k : c.seq_q;
  std::vector<int64_t> rows;
  if (!c.packed()) {
    for (int64_t r = b * heads * n; r < (b + 1) * heads * n; ++r) rows.push_back(r);
    return rows;
  }
  const std::vector<int32_t>& cu = keys ? c.cu_k : c.cu_q;
  const int64_t first = std::clamp<int64_t>(cu[b], 0, n), last = std::clamp<int64_t>(cu[b + 1], first, n);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t r = first; r < last; ++r) rows.push_back(h * n + r);
  return rows;
}

// Entry b's rows of `out` (rows of c.d elements; key-side with `keys`) all keep their poison (NaN in
// the first element) if the launch skipped the entry, and none does if it computed it.
template <class T>
void check_entry_written(const Varlen& c, int64_t b, bool skipped, const std::vector<T>& out, bool keys,
                         const char* tensor) {
  const std::vector<int64_t> rows = owned_rows(c, b, keys);
  const auto poisoned = std::count_if(rows.begin(), rows.end(), [&](int64_t r) {
    return std::isnan(to_float(out[r * c.d]));
  });
  INFO("entry ", b, ", ", std::string(tensor), ": ", poisoned, " of ", rows.size(), " rows unwritten");
  CHECK(poisoned == (skipped ? std::ptrdiff_t(rows.size()) : 0));
}

}  // namespace

void check_varlen_batch(const KernelDesc& kernel, const Varlen& batch, DType dtype, uint64_t seed) {
  REQUIRE((dtype == DType::FP16 || dtype == DType::BF16));
  if (dtype == DType::FP16)
    check_varlen_batch<__half>(kernel, batch, seed);
  else
    check_varlen_batch<__nv_bfloat16>(kernel, batch, seed);
}

void check_varlen_layouts(const KernelDesc& kernel, int64_t d, uint64_t seed) {
  each_layout(d, [&](const Varlen& c, DType t) { check_varlen_batch(kernel, c, t, ++seed); });
}

void check_varlen_grouped(const KernelDesc& kernel, int64_t d, uint64_t seed) {
  each_grouped_layout(d, [&](const Varlen& c, DType t) { check_varlen_batch(kernel, c, t, ++seed); });
}

void check_varlen_by_position(const KernelDesc& kernel, int64_t d, uint64_t seed) {
  each_layout_by_position(d, [&](const Varlen& c, DType t) {
    if (t == DType::FP16)
      check_varlen_batch<__half>(kernel, c, ++seed, /*by_position=*/true);
    else
      check_varlen_batch<__nv_bfloat16>(kernel, c, ++seed, /*by_position=*/true);
  });
}

void check_bad_layouts(const KernelDesc& kernel) {
  for (const BadLayout& bad : bad_layouts()) {
    INFO(name(kernel), " ", std::string(bad.what));
    const Varlen& c = bad.layout;
    VarlenBuffers<__half> buf(c, 9000);
    AttentionParams p = buf.p;
    p.max_seq_q = bad.max_seq_q;
    p.max_seq_k = bad.max_seq_k;
    AttentionParams checked = p;
    CHECK(fs::check_varlen(&checked, nullptr) == bad.named);
    REQUIRE(launch(kernel, p, nullptr) == Status::Success);
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    const auto out = buf.o.download();
    const auto lse = buf.lse.download();
    Varlen rows = c;  // LSE: one float per query row
    rows.d = 1;
    for (int64_t b = 0; b < c.batch; ++b) {
      check_entry_written(c, b, bad.skipped[b], out, /*keys=*/false, "O");
      check_entry_written(rows, b, bad.skipped[b], lse, /*keys=*/false, "LSE");
    }
  }
}

// ---- Backward ------------------------------------------------------------------------------------

namespace {

void check_gradients(const AttentionBwdCheck& c, DType t) {
  const Tolerance tol = backward_tolerance(t);
  INFO("dQ: ", c.dq.str(), "  dK: ", c.dk.str(), "  dV: ", c.dv.str(), "  delta: ", c.delta.str());
  CHECK(c.dq.count > 0);
  CHECK(within_gradient(c.dq, tol));
  CHECK(within_gradient(c.dk, tol));
  CHECK(within_gradient(c.dv, tol));
  if (c.delta.count > 0) CHECK(within_gradient(c.delta, tol));
  CHECK_FALSE(c.delta_written);
}

}  // namespace

void check_bwd_against_reference(const KernelDesc& kernel, const AttentionParams& shape, uint64_t seed,
                                 const KernelDesc* naive) {
  INFO("seed=", seed);
  AttentionBwdFixture problem(shape, seed);
  check_bwd_against_reference(kernel, problem, naive);
}

void check_bwd_against_reference(const KernelDesc& kernel, AttentionBwdFixture& problem, const KernelDesc* naive) {
  INFO(name(kernel), " ", describe(problem.shape()));
  const DType t = dtype_of(problem.shape());
  const AttentionBwdCheck c = problem.run(kernel);
  REQUIRE_MESSAGE(c.status == Status::Success, std::string(status_name(c.status)));
  check_gradients(c, t);
  // The 2× rule against the naive backward, for every launch below too (each mode is its own code path).
  const bool against_naive = naive && t != DType::FP32;
  AttentionBwdCheck n;
  if (against_naive) {
    n = problem.run(*naive);
    REQUIRE(n.status == Status::Success);
  }
  auto within_budget = [&](const AttentionBwdCheck& r, bool with_delta) {
    if (!against_naive) return;
    INFO("naive dQ: ", n.dq.str(), "  dK: ", n.dk.str(), "  dV: ", n.dv.str(), "  delta: ", n.delta.str());
    CHECK(within_naive_budget(r.dq, n.dq));
    CHECK(within_naive_budget(r.dk, n.dk));
    CHECK(within_naive_budget(r.dv, n.dv));
    if (with_delta) CHECK(within_naive_budget(r.delta, n.delta));
  };
  within_budget(c, true);
  {
    INFO("without delta");
    AttentionBwdParams p = problem.params();
    p.delta = nullptr;
    const AttentionBwdCheck without = problem.run(kernel, p);
    REQUIRE(without.status == Status::Success);
    check_gradients(without, t);
    within_budget(without, false);
  }
  {
    INFO("deterministic");
    AttentionBwdParams p = problem.params();
    p.deterministic = 1;
    const AttentionBwdCheck first = problem.run(kernel, p);
    REQUIRE(first.status == Status::Success);
    check_gradients(first, t);
    within_budget(first, true);
    // dQ bitwise the same on every run in this mode; dK and dV always are (flashstages.h).
    const std::vector<unsigned char> dq = problem.dq_bytes(), dk = problem.dk_bytes(), dv = problem.dv_bytes();
    const AttentionBwdCheck second = problem.run(kernel, p);
    REQUIRE(second.status == Status::Success);
    CHECK(problem.dq_bytes() == dq);
    CHECK(problem.dk_bytes() == dk);
    CHECK(problem.dv_bytes() == dv);
  }
}

void check_bwd_extreme_logits(const KernelDesc& kernel, const AttentionParams& shape, uint64_t seed) {
  INFO(name(kernel), " ", describe(shape), " seed=", seed);
  AttentionBwdFixture problem(shape, seed);
  const AttentionBwdCheck c = problem.run(kernel);
  REQUIRE_MESSAGE(c.status == Status::Success, std::string(status_name(c.status)));
  INFO("dQ: ", c.dq.str(), "  dK: ", c.dk.str(), "  dV: ", c.dv.str(), "  delta: ", c.delta.str());
  CHECK(c.dq.nonfinite == 0);
  CHECK(c.dk.nonfinite == 0);
  CHECK(c.dv.nonfinite == 0);
  CHECK(c.delta.nonfinite == 0);
}

void check_bwd_rejected(const KernelDesc& kernel, const AttentionParams& ok,
                        const std::function<void(AttentionBwdParams&)>& make_bad, Status expected) {
  check_refused<AttentionBwdFixture>(kernel, ok, make_bad, expected);
}

void check_bwd_strided_layouts(const KernelDesc& kernel, const AttentionParams& shape, uint64_t seed) {
  const DType t = dtype_of(shape);
  AttentionBwdFixture problem(shape, seed);
  for (const StridedLayout& layout : {bnhd_layout(shape), packed_qkv_layout(shape)}) {
    INFO(name(kernel), " ", describe(shape), " ", layout.name, " seed=", seed);
    const AttentionBwdCheck c = problem.run_strided(kernel, problem.params(), layout);
    REQUIRE_MESSAGE(c.status == Status::Success, std::string(status_name(c.status)));
    check_gradients(c, t);
    CHECK_FALSE(c.outside_written);
    {
      INFO("without delta");
      AttentionBwdParams p = problem.params();
      p.delta = nullptr;
      const AttentionBwdCheck without = problem.run_strided(kernel, p, layout);
      REQUIRE(without.status == Status::Success);
      check_gradients(without, t);
      CHECK_FALSE(without.outside_written);
    }
    {
      INFO("deterministic");
      AttentionBwdParams p = problem.params();
      p.deterministic = 1;
      const AttentionBwdCheck first = problem.run_strided(kernel, p, layout);
      REQUIRE(first.status == Status::Success);
      check_gradients(first, t);
      CHECK_FALSE(first.outside_written);
      const std::vector<unsigned char> dq = problem.dq_bytes();
      const AttentionBwdCheck second = problem.run_strided(kernel, p, layout);
      REQUIRE(second.status == Status::Success);
      CHECK(problem.dq_bytes() == dq);
    }
  }
}

void check_bwd_layout_refusals(const KernelDesc& kernel, const AttentionParams& ok) {
  const StridedLayout bnhd = bnhd_layout(ok);
  using P = AttentionBwdParams;
  if (!kernel.attention.strided) {
    check_bwd_rejected(kernel, ok, [&](P& p) { p.fwd = with_strides(p.fwd, bnhd); }, Status::UnsupportedLayout);
    return;
  }
  check_bwd_rejected(kernel, ok, [&](P& p) { p.fwd = with_strides(p.fwd, bnhd), p.fwd.v_strides[0] = -1; },
                     Status::InvalidStrides);
  check_bwd_rejected(kernel, ok, [&](P& p) { p.fwd = with_strides(p.fwd, bnhd), p.fwd.q_strides[0] += 4; },
                     Status::InvalidStrides);  // batch entries 8 bytes off 16 (dQ's too)
  // dV half a head after dK, both [B, N, KVH, D]: interleaved, but sharing elements.
  check_bwd_rejected(kernel, ok,
                     [&](P& p) {
                       p.fwd = with_strides(p.fwd, bnhd);
                       p.dv = static_cast<char*>(p.dk) + ok.head_dim;  // D/2 16-bit elements on
                     },
                     Status::MisalignedPointer);
}

void check_bwd_rejects_bad_inputs(const KernelDesc& kernel, const AttentionParams& ok) {
  using P = AttentionBwdParams;
  auto rejected = [&](const std::function<void(P&)>& bad, Status expected) {
    check_bwd_rejected(kernel, ok, bad, expected);
  };
  // The forward problem's own rules.
  rejected([](P& p) { p.fwd.q = nullptr; }, Status::NullPointer);
  rejected([](P& p) { p.fwd.o = nullptr; }, Status::NullPointer);
  rejected([](P& p) { p.fwd.seq_k = 0; }, Status::InvalidSize);
  rejected([](P& p) { p.fwd.heads = -1; }, Status::InvalidSize);
  rejected([](P& p) { p.fwd.scale = std::numeric_limits<float>::quiet_NaN(); }, Status::InvalidScale);
  rejected([](P& p) { p.fwd.causal = 1, p.fwd.seq_k = p.fwd.seq_q - 1; }, Status::UnsupportedMask);
  rejected([](P& p) { p.fwd.dtype = FS_INT8; }, Status::UnsupportedDtype);
  rejected([](P& p) { p.fwd.dtype = 99; }, Status::UnsupportedDtype);
  rejected([](P& p) { p.fwd.batch = int64_t(1) << 62; }, Status::InvalidSize);
  rejected([](P& p) { p.fwd.batch = int64_t(1) << 36; }, Status::InvalidSize);
  rejected([](P& p) { p.fwd.q = static_cast<const char*>(p.fwd.q) + 1; }, Status::MisalignedPointer);
  rejected([](P& p) { p.fwd.kv_heads = -1; }, Status::InvalidKvHeads);
  rejected([](P& p) { p.fwd.kv_heads = p.fwd.heads + 1; }, Status::InvalidKvHeads);
  rejected([](P& p) { p.fwd.heads = 3, p.fwd.kv_heads = 2; }, Status::InvalidKvHeads);
  // The backward's: what it reads and writes besides the forward's tensors.
  rejected([](P& p) { p.fwd.lse = nullptr; }, Status::NullPointer);
  rejected([](P& p) { p.d_o = nullptr; }, Status::NullPointer);
  rejected([](P& p) { p.dq = nullptr; }, Status::NullPointer);
  rejected([](P& p) { p.dk = nullptr; }, Status::NullPointer);
  rejected([](P& p) { p.dv = nullptr; }, Status::NullPointer);
  rejected([](P& p) { p.d_o = static_cast<const char*>(p.d_o) + 1; }, Status::MisalignedPointer);
  rejected([](P& p) { p.dq = static_cast<char*>(p.dq) + 1; }, Status::MisalignedPointer);
  rejected([](P& p) { p.dv = static_cast<char*>(p.dv) + 1; }, Status::MisalignedPointer);
  rejected([](P& p) { p.delta = reinterpret_cast<float*>(reinterpret_cast<char*>(p.delta) + 2); },
           Status::MisalignedPointer);
  // Outputs on top of inputs or of each other: in place of Q, half a tensor into dO, dK = dV, delta
  // over LSE. (The launch would read what it had already overwritten, or race with itself.)
  rejected([](P& p) { p.dq = const_cast<void*>(p.fwd.q); }, Status::MisalignedPointer);
  rejected([](P& p) { p.dq = static_cast<char*>(const_cast<void*>(p.d_o)) + 256; }, Status::MisalignedPointer);
  rejected([](P& p) { p.dv = p.dk; }, Status::MisalignedPointer);
  rejected([](P& p) { p.dk = const_cast<void*>(p.fwd.v); }, Status::MisalignedPointer);
  rejected([](P& p) { p.delta = p.fwd.lse; }, Status::MisalignedPointer);
  rejected([](P& p) { p.dv = p.fwd.o; }, Status::MisalignedPointer);
  // Length arrays in device memory (dO's, never read: every launch below is refused first).
  auto device_ints = [](const P& p) { return static_cast<const int32_t*>(p.d_o); };
  if (!kernel.attention.varlen) {
    // Device arrays that would be valid: refused because this version takes no variable lengths.
    rejected([&](P& p) { p.fwd.seq_lens = device_ints(p); }, Status::InvalidSeqLens);
    rejected([&](P& p) { p.fwd.cu_seqlens_q = p.fwd.cu_seqlens_k = device_ints(p); }, Status::InvalidSeqLens);
  } else {
    // Fields that cannot describe a layout, whatever the arrays hold: padded and packed at once, packed
    // queries without packed keys, a longest entry outside 0 .. the total (for max_seq_k that is the
    // backward's own field: it sizes the grid of key blocks).
    rejected([&](P& p) { p.fwd.seq_lens = p.fwd.cu_seqlens_q = p.fwd.cu_seqlens_k = device_ints(p); },
             Status::InvalidSeqLens);
    rejected([&](P& p) { p.fwd.cu_seqlens_q = device_ints(p); }, Status::InvalidSeqLens);
    rejected([&](P& p) { p.fwd.cu_seqlens_q = p.fwd.cu_seqlens_k = device_ints(p), p.fwd.max_seq_k = p.fwd.seq_k + 1; },
             Status::InvalidSeqLens);
    rejected([&](P& p) { p.fwd.cu_seqlens_q = p.fwd.cu_seqlens_k = device_ints(p), p.fwd.max_seq_q = -1; },
             Status::InvalidSeqLens);
  }
}

void check_bwd_reports_cuda_error(const KernelDesc& kernel, const AttentionParams& ok) {
  AttentionBwdFixture problem(ok, 1, /*max_heads=*/-1);
  const Status st = launch_while_capturing([&] { return launch(kernel, problem.params(), nullptr); });
  INFO(name(kernel), " returned ", std::string(status_name(st)), ": ", std::string(last_cuda_error()));
  CHECK(st == Status::CudaError);
  FS_CUDA_CHECK(cudaDeviceSynchronize());  // the refusal left no sticky error behind
}

void check_bwd_c_entry(const BwdEntry& entry) {
  INFO(entry.name);
  fs_attention_bwd_params p{};
  p.fwd.batch = p.fwd.heads = p.fwd.seq_q = p.fwd.seq_k = 1;
  p.fwd.head_dim = 64;
  p.fwd.dtype = entry.dtype;
  // Addresses with no memory behind them, 64 KiB apart: every case below must be refused (or, without a
  // GPU, fail in the runtime) before anything is read or written.
  p.fwd.q = reinterpret_cast<const void*>(0x10000);
  p.fwd.k = reinterpret_cast<const void*>(0x20000);
  p.fwd.v = reinterpret_cast<const void*>(0x30000);
  p.fwd.o = reinterpret_cast<void*>(0x40000);
  p.fwd.lse = reinterpret_cast<float*>(0x50000);
  p.d_o = reinterpret_cast<const void*>(0x60000);
  p.dq = reinterpret_cast<void*>(0x70000);
  p.dk = reinterpret_cast<void*>(0x80000);
  p.dv = reinterpret_cast<void*>(0x90000);
  auto with = [&](auto change) {
    fs_attention_bwd_params bad = p;
    change(bad);
    return entry.launch(&bad, nullptr);
  };
  CHECK(entry.launch(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(with([](auto& b) { b.fwd.lse = nullptr; }) == FS_ERR_NULL_POINTER);
  CHECK(with([](auto& b) { b.dv = nullptr; }) == FS_ERR_NULL_POINTER);
  CHECK(with([](auto& b) { b.fwd.seq_q = 0; }) == FS_ERR_INVALID_SIZE);
  CHECK(with([](auto& b) { b.fwd.scale = std::numeric_limits<float>::infinity(); }) == FS_ERR_INVALID_SCALE);
  CHECK(with([&](auto& b) { b.fwd.dtype = entry.refused_dtype; }) == FS_ERR_UNSUPPORTED_DTYPE);
  CHECK(with([&](auto& b) { b.fwd.head_dim = entry.refused_head_dim; }) == FS_ERR_UNSUPPORTED_HEAD_DIM);
  CHECK(with([](auto& b) { b.fwd.causal = 1, b.fwd.seq_q = 2; }) == FS_ERR_UNSUPPORTED_MASK);
  CHECK(with([&](auto& b) { b.dq = static_cast<char*>(b.dq) + entry.dq_misaligned_by; }) ==
        FS_ERR_MISALIGNED_POINTER);
  CHECK(with([](auto& b) { b.delta = reinterpret_cast<float*>(0xA0002); }) == FS_ERR_MISALIGNED_POINTER);
  const int32_t* lens = reinterpret_cast<const int32_t*>(0xB0000);
  if (entry.varlen) {
    // Fields that cannot describe a layout: refused by name before any device call (the arrays are
    // never read).
    CHECK(with([&](auto& b) { b.fwd.seq_lens = b.fwd.cu_seqlens_q = b.fwd.cu_seqlens_k = lens; }) ==
          FS_ERR_INVALID_SEQLENS);  // padded and packed at once
    CHECK(with([&](auto& b) { b.fwd.cu_seqlens_q = lens; }) == FS_ERR_INVALID_SEQLENS);  // no packed keys
    CHECK(with([&](auto& b) { b.fwd.cu_seqlens_q = b.fwd.cu_seqlens_k = lens, b.fwd.max_seq_k = b.fwd.seq_k + 1; }) ==
          FS_ERR_INVALID_SEQLENS);  // an entry with more keys than the total
  } else {
    CHECK(with([&](auto& b) { b.fwd.seq_lens = lens; }) == FS_ERR_INVALID_SEQLENS);  // takes none
  }
  CHECK(with([](auto& b) { b.fwd.kv_heads = 2; }) == FS_ERR_INVALID_KV_HEADS);  // more K/V heads than heads
  CHECK(with([](auto& b) { b.fwd.heads = 3, b.fwd.kv_heads = 2; }) == FS_ERR_INVALID_KV_HEADS);
  if (missing_gpu()) {
    // Valid arguments reach the runtime, which has no device to give: a named error, not a crash.
    CHECK(entry.launch(&p, nullptr) == FS_ERR_CUDA);
    // So does a valid grouping (MQA: 2 query heads on 1 K/V head): every version sums dK, dV over it.
    CHECK(with([](auto& b) { b.fwd.heads = 2, b.fwd.kv_heads = 1; }) == FS_ERR_CUDA);
  } else {
    record_skip();
    MESSAGE("SKIPPED the no-device path: this machine has a GPU (the GPU cases cover FS_ERR_CUDA)");
  }
}

// ---- Variable-length backward --------------------------------------------------------------------

namespace {

// A batch's backward problem on the device: Q, K, V and the length arrays as the forward's check holds
// them, dO, and the forward's O and LSE as inputs. Until varlen_bwd_reference() replaces them, O and LSE
// are stand-ins, as AttentionBwdFixture gives the heads it does not check: O random, LSE =
// standin_lse(). Padded batches: every input NaN past lens[b].
template <class T>
struct VarlenBwdBuffers {
  VarlenBuffers<T> in;  // its O and LSE are read here, never written
  std::vector<T> h_do, ho;
  std::vector<float> h_lse;
  DeviceBuffer<T> d_o, dq, dk, dv;
  DeviceBuffer<float> delta;
  AttentionBwdParams p{};

  VarlenBwdBuffers(const Varlen& c, uint64_t seed)
      : in(c, seed), h_do(random_uniform<T>(c.q_total() * c.d, seed + 3)),
        ho(random_uniform<T>(c.q_total() * c.d, seed + 4)), h_lse(c.q_total(), float(standin_lse(in.p))) {
    if (!c.packed()) {
      poison_padding(c, h_do, c.heads, c.seq_q, c.d);
      poison_padding(c, ho, c.heads, c.seq_q, c.d);
      poison_padding(c, h_lse, c.heads, c.seq_q, 1);
    }
    d_o = DeviceBuffer<T>(h_do);
    upload_forward();
    dq = DeviceBuffer<T>(h_do.size());
    dk = DeviceBuffer<T>(c.k_total() * c.d);
    dv = DeviceBuffer<T>(c.k_total() * c.d);
    delta = DeviceBuffer<float>(c.q_total());
    p.fwd = in.p;
    p.d_o = d_o.get();
    p.dq = dq.get();
    p.dk = dk.get();
    p.dv = dv.get();
    p.delta = delta.get();
  }

  void upload_forward() {
    in.o.upload(ho);
    in.lse.upload(h_lse);
  }
  void poison_outputs() {
    dq.poison();
    dk.poison();
    dv.poison();
    delta.poison();
    for (DeviceBuffer<T>* out : {&by_position_dq, &by_position_dk, &by_position_dv})
      if (out->get()) out->poison();
  }

  // Every tensor laid out by position (VarlenBuffers::lay_out_by_position: [B, N, H, D] or [total, H,
  // D]), O as upload_forward left it; the params point at the copies. gather_outputs() reads dQ, dK, dV
  // back into dq, dk, dv, contiguous, where the comparison reads them.
  DeviceBuffer<T> by_position_o, by_position_do, by_position_dq, by_position_dk, by_position_dv;
  void lay_out_by_position(const Varlen& c) {
    const int64_t entries = c.packed() ? 1 : c.batch;
    q_dims_[0] = k_dims_[0] = entries, q_dims_[1] = c.heads, k_dims_[1] = c.kvh();
    q_dims_[2] = c.seq_q, k_dims_[2] = c.seq_k, q_dims_[3] = k_dims_[3] = c.d;
    q_st_ = {c.packed() ? 0 : c.seq_q * c.heads * c.d, c.d, c.heads * c.d};
    k_st_ = {c.packed() ? 0 : c.seq_k * c.kvh() * c.d, c.d, c.kvh() * c.d};
    in.lay_out_by_position(c);
    auto place = [](const std::vector<T>& x, const int64_t(&dims)[4], const TensorStrides& st) {
      std::vector<T> y(x.size());
      scatter_strided(reinterpret_cast<const unsigned char*>(x.data()), reinterpret_cast<unsigned char*>(y.data()),
                      dims, sizeof(T), 0, st);
      return DeviceBuffer<T>(y);
    };
    by_position_o = place(ho, q_dims_, q_st_);
    by_position_do = place(h_do, q_dims_, q_st_);
    by_position_dq = DeviceBuffer<T>(dq.size());
    by_position_dk = DeviceBuffer<T>(dk.size());
    by_position_dv = DeviceBuffer<T>(dv.size());
    p.fwd = in.p;  // Q, K, V by position, their strides, O's
    p.fwd.o = by_position_o.get();
    p.fwd.lse = in.lse.get();
    p.d_o = by_position_do.get();
    p.dq = by_position_dq.get();
    p.dk = by_position_dk.get();
    p.dv = by_position_dv.get();
  }
  void gather_outputs() {
    if (!by_position_dq.get()) return;
    auto gather = [](const DeviceBuffer<T>& from, DeviceBuffer<T>& to, const int64_t(&dims)[4],
                     const TensorStrides& st) {
      const std::vector<T> laid = from.download();
      std::vector<T> out(laid.size());
      gather_strided(reinterpret_cast<const unsigned char*>(laid.data()), reinterpret_cast<unsigned char*>(out.data()),
                     dims, sizeof(T), 0, st);
      to.upload(out);
    };
    gather(by_position_dq, dq, q_dims_, q_st_);
    gather(by_position_dk, dk, k_dims_, k_st_);
    gather(by_position_dv, dv, k_dims_, k_st_);
  }

 private:
  int64_t q_dims_[4] = {}, k_dims_[4] = {};
  TensorStrides q_st_{}, k_st_{};
};

// The fp64 backward of every entry b and K/V head kv, at [b·KVH + kv]: dQ [G, nq, D] and delta [G, nq] of
// the group's G query heads, dK and dV [nk, D] summed over them.
struct VarlenBwdReference {
  std::vector<std::vector<double>> dq, dk, dv, delta;
};

// Computes it, and puts the forward that the backward starts from in place of the stand-ins: for every
// row that takes part, the fp64 forward's O (rounded to T) and LSE (fp32); for the rows of an entry with
// no key, O = 0 and LSE = -inf, as the forward writes them. Padding keeps its NaN.
template <class T>
VarlenBwdReference varlen_bwd_reference(const Varlen& c, VarlenBwdBuffers<T>& buf) {
  const int64_t d = c.d, group = c.heads / c.kvh();
  const double scale = softmax_scale(buf.p.fwd);
  VarlenBwdReference ref;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t kv = 0; kv < c.kvh(); ++kv) {
      const int64_t nq = c.nq(b), nk = c.nk(b), h0 = kv * group, k0 = c.k_row0(b, h0);
      std::vector<double> q(group * nq * d), d_o(group * nq * d), k(nk * d), v(nk * d);
      for (int64_t i = 0; i < nk * d; ++i)
        k[i] = to_double(buf.in.hk[k0 * d + i]), v[i] = to_double(buf.in.hv[k0 * d + i]);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t q0 = c.q_row0(b, h0 + g);
        double* qg = q.data() + g * nq * d;
        for (int64_t i = 0; i < nq * d; ++i)
          qg[i] = to_double(buf.in.hq[q0 * d + i]), d_o[g * nq * d + i] = to_double(buf.h_do[q0 * d + i]);
        std::vector<double> o(nq * d, 0.0), lse(nq, -std::numeric_limits<double>::infinity());
        if (nk > 0)
          ref::attention_forward_head(qg, k.data(), v.data(), nq, nk, d, scale, c.causal, o.data(), lse.data());
        for (int64_t i = 0; i < nq * d; ++i) buf.ho[q0 * d + i] = from_float<T>(float(o[i]));
        for (int64_t r = 0; r < nq; ++r) buf.h_lse[q0 + r] = float(lse[r]);
      }
      std::vector<double> dq(group * nq * d), dk(nk * d), dv(nk * d), delta(group * nq);
      ref::attention_backward_group(q.data(), k.data(), v.data(), d_o.data(), group, nq, nk, d, scale, c.causal,
                                    dq.data(), dk.data(), dv.data(), delta.data());
      ref.dq.push_back(std::move(dq));
      ref.dk.push_back(std::move(dk));
      ref.dv.push_back(std::move(dv));
      ref.delta.push_back(std::move(delta));
    }
  buf.upload_forward();
  return ref;
}

// A launch's outputs against the reference, every row of every entry: the rows that take part into the
// error statistics; the others (padding, dQ and delta of an entry with no key, dK and dV of an entry
// with no query) counted in wrong_zeros unless exactly 0. Delta only when the launch asked for it, and
// otherwise its buffer must still hold the poison.
struct VarlenBwdResult {
  AttentionBwdCheck check;
  int64_t wrong_zeros = 0;
};

template <class T>
VarlenBwdResult compare_varlen_bwd(const Varlen& c, const VarlenBwdBuffers<T>& buf, const VarlenBwdReference& ref,
                                   bool with_delta) {
  const auto dq = buf.dq.download(), dk = buf.dk.download(), dv = buf.dv.download();
  const auto delta = buf.delta.download();
  const int64_t d = c.d, group = c.heads / c.kvh();
  VarlenBwdResult out;
  AttentionBwdCheck& r = out.check;
  // Row `row` of `x` against ref_row, or, with no reference row, exactly 0.
  auto row_of = [&](ErrorStats& err, const std::vector<T>& x, int64_t row, const double* ref_row) {
    for (int64_t e = 0; e < d; ++e) {
      const double got = to_double(x[row * d + e]);
      if (ref_row)
        err.add(got, ref_row[e]);
      else
        out.wrong_zeros += got != 0.0;
    }
  };
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t kv = 0; kv < c.kvh(); ++kv) {
      const std::size_t i = b * c.kvh() + kv;
      const int64_t nq = c.nq(b), nk = c.nk(b), h0 = kv * group, k0 = c.k_row0(b, h0);
      for (int64_t g = 0; g < group; ++g) {
        const int64_t q0 = c.q_row0(b, h0 + g);
        for (int64_t row = 0; row < c.rows(b); ++row) {
          const bool real = row < nq && nk > 0;
          const int64_t at = g * nq + row;  // in the reference's [G, nq] rows
          row_of(r.dq, dq, q0 + row, real ? ref.dq[i].data() + at * d : nullptr);
          if (!with_delta) continue;
          if (real)
            r.delta.add(delta[q0 + row], ref.delta[i][at]);
          else
            out.wrong_zeros += delta[q0 + row] != 0.0f;
        }
      }
      for (int64_t row = 0; row < c.k_rows(b); ++row) {
        const bool real = row < nk && nq > 0;
        row_of(r.dk, dk, k0 + row, real ? ref.dk[i].data() + row * d : nullptr);
        row_of(r.dv, dv, k0 + row, real ? ref.dv[i].data() + row * d : nullptr);
      }
    }
  if (!with_delta) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(delta.data());
    r.delta_written =
        std::any_of(bytes, bytes + delta.size() * sizeof(float), [](unsigned char x) { return x != 0xFF; });
  }
  return out;
}

template <class T>
void check_bwd_varlen_batch(const KernelDesc& kernel, const Varlen& c, uint64_t seed, bool by_position = false) {
  VarlenBwdBuffers<T> buf(c, seed);
  const VarlenBwdReference ref = varlen_bwd_reference(c, buf);
  if (by_position) buf.lay_out_by_position(c);
  const DType t = dtype_of(buf.p.fwd);
  INFO(name(kernel), std::string(c.packed() ? " packed " : " padded "), by_position ? "by position " : "",
       describe(buf.p.fwd), " seed=", seed);
  // Poisons, launches, compares every row.
  auto run = [&](const AttentionBwdParams& p) {
    buf.poison_outputs();
    const Status st = launch(kernel, p, nullptr);
    REQUIRE_MESSAGE(st == Status::Success, std::string(status_name(st)));
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    buf.gather_outputs();
    const VarlenBwdResult r = compare_varlen_bwd(c, buf, ref, p.delta != nullptr);
    INFO("values that should be exactly 0 and are not: ", r.wrong_zeros);
    check_gradients(r.check, t);
    CHECK(r.wrong_zeros == 0);
  };
  for (bool tight : {false, true}) {
    if (tight && !c.packed()) break;
    AttentionBwdParams p = buf.p;
    if (tight) {
      REQUIRE(fs::check_varlen(&p.fwd, nullptr) == Status::Success);
      int64_t longest_q = 0, longest_k = 0;
      for (int64_t b = 0; b < c.batch; ++b)
        longest_q = std::max(longest_q, c.nq(b)), longest_k = std::max(longest_k, c.nk(b));
      CHECK(p.fwd.max_seq_q == longest_q);
      CHECK(p.fwd.max_seq_k == longest_k);
    }
    INFO("max_seq_q=", p.fwd.max_seq_q, " max_seq_k=", p.fwd.max_seq_k);
    run(p);
    {
      INFO("without delta");
      AttentionBwdParams without = p;
      without.delta = nullptr;
      run(without);
    }
    {
      INFO("deterministic");
      AttentionBwdParams deterministic = p;
      deterministic.deterministic = 1;
      run(deterministic);
      const std::vector<T> first = buf.dq.download();
      run(deterministic);
      const std::vector<T> second = buf.dq.download();
      CHECK(std::memcmp(first.data(), second.data(), first.size() * sizeof(T)) == 0);
    }
  }
}

}  // namespace

void check_bwd_varlen_batch(const KernelDesc& kernel, const Varlen& batch, DType dtype, uint64_t seed) {
  REQUIRE((dtype == DType::FP16 || dtype == DType::BF16));
  if (dtype == DType::FP16)
    check_bwd_varlen_batch<__half>(kernel, batch, seed);
  else
    check_bwd_varlen_batch<__nv_bfloat16>(kernel, batch, seed);
}

void check_bwd_varlen_layouts(const KernelDesc& kernel, int64_t d, uint64_t seed) {
  each_layout(d, [&](const Varlen& c, DType t) { check_bwd_varlen_batch(kernel, c, t, ++seed); });
}

void check_bwd_varlen_by_position(const KernelDesc& kernel, int64_t d, uint64_t seed) {
  each_layout_by_position(d, [&](const Varlen& c, DType t) {
    if (t == DType::FP16)
      check_bwd_varlen_batch<__half>(kernel, c, ++seed, /*by_position=*/true);
    else
      check_bwd_varlen_batch<__nv_bfloat16>(kernel, c, ++seed, /*by_position=*/true);
  });
}

void check_bwd_varlen_grouped(const KernelDesc& kernel, int64_t d, uint64_t seed) {
  each_grouped_layout(d, [&](const Varlen& c, DType t) { check_bwd_varlen_batch(kernel, c, t, ++seed); });
}

void check_bwd_bad_layouts(const KernelDesc& kernel) {
  std::vector<BadLayout> cases = bad_layouts();
  // The backward's own rule: max_seq_k sizes its grid of key blocks, so entry 1's 35 keys do not fit in 8.
  const Varlen too_many_keys{2, 2, 64, false, {}, 17, 40, {0, 10, 17}, {0, 5, 40}};
  cases.push_back({"packed, an entry longer than max_seq_k", too_many_keys, 0, 8, Status::Success, {false, true}});
  for (const BadLayout& bad : cases) {
    INFO(name(kernel), " ", std::string(bad.what));
    const Varlen& c = bad.layout;
    VarlenBwdBuffers<__half> buf(c, 9000);
    AttentionBwdParams p = buf.p;
    p.fwd.max_seq_q = bad.max_seq_q;
    p.fwd.max_seq_k = bad.max_seq_k;
    buf.poison_outputs();
    REQUIRE(launch(kernel, p, nullptr) == Status::Success);
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    const auto dq = buf.dq.download(), dk = buf.dk.download(), dv = buf.dv.download();
    for (int64_t b = 0; b < c.batch; ++b) {
      check_entry_written(c, b, bad.skipped[b], dq, /*keys=*/false, "dQ");
      check_entry_written(c, b, bad.skipped[b], dk, /*keys=*/true, "dK");
      check_entry_written(c, b, bad.skipped[b], dv, /*keys=*/true, "dV");
    }
  }
}

}  // namespace fs::testing
