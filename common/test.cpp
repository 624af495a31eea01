// Tests of common/: the fp64 references against hand-computed cases, the FLOP formulas, validation
// (every status code a bad input can produce), comparison, random data, parallel_for, the values the
// executables' flags take. CPU only.
// (test_kernels.cpp tests the registry, the static switch, the device check and graph capture.)
#include <CLI/CLI.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/lib/attention.h"
#include "common/lib/flops.h"
#include "common/lib/gemm.h"
#include "common/lib/random.h"
#include "common/lib/split_kv.h"
#include "common/lib/tensor_map.h"
#include "common/tools/compare.h"
#include "common/tools/gpu_test.h"
#include "common/tools/parallel.h"
#include "common/tools/reference.h"
#include "common/tools/runner.h"

namespace {

// Fake device pointers: validation never dereferences them, so CPU tests can pass them.
const void* fake(std::uintptr_t addr) { return reinterpret_cast<const void*>(addr); }

fs::AttentionParams valid_params() {
  fs::AttentionParams p{};
  p.batch = 2;
  p.heads = 3;
  p.seq_q = 17;
  p.seq_k = 19;
  p.head_dim = 64;
  p.dtype = FS_FP32;
  p.q = fake(0x10000);
  p.k = fake(0x20000);
  p.v = fake(0x30000);
  p.o = const_cast<void*>(fake(0x40000));
  p.lse = reinterpret_cast<float*>(0x50000);
  return p;
}

// d loss / d x[i] by a central difference (loss reads x).
template <class Loss>
double central_difference(Loss& loss, std::vector<double>& x, std::size_t i) {
  const double h = 1e-6, keep = x[i];
  x[i] = keep + h;
  const double up = loss();
  x[i] = keep - h;
  const double down = loss();
  x[i] = keep;
  return (up - down) / (2 * h);
}

}  // namespace

FS_CPU_TEST_CASE("reference forward: one key gives O = V and LSE = the single score") {
  const double q[2] = {1.0, 2.0}, k[2] = {0.5, -1.0}, v[2] = {3.0, -4.0};
  double o[2], lse[1];
  fs::ref::attention_forward_head(q, k, v, 1, 1, 2, 0.5, false, o, lse);
  CHECK(o[0] == 3.0);
  CHECK(o[1] == -4.0);
  CHECK(lse[0] == doctest::Approx(0.5 * (0.5 - 2.0)));
}

FS_CPU_TEST_CASE("reference forward: two keys / hand-computed softmax") {
  // q = [1, 0], k0 = [1, 0], k1 = [0, 1], scale 1: scores 1 and 0.
  const double q[2] = {1, 0}, k[4] = {1, 0, 0, 1}, v[4] = {1, 2, 3, 4};
  double o[2], lse[1];
  fs::ref::attention_forward_head(q, k, v, 1, 2, 2, 1.0, false, o, lse);
  const double p0 = std::exp(1.0) / (std::exp(1.0) + 1.0), p1 = 1.0 - p0;
  CHECK(o[0] == doctest::Approx(p0 * 1 + p1 * 3));
  CHECK(o[1] == doctest::Approx(p0 * 2 + p1 * 4));
  CHECK(lse[0] == doctest::Approx(std::log(std::exp(1.0) + 1.0)));
}

FS_CPU_TEST_CASE("reference forward: causal mask aligns to the bottom-right corner") {
  // Nq = 2, Nk = 3: query 0 sees keys 0..1, query 1 sees keys 0..2.
  CHECK(fs::ref::visible(0, 1, 2, 3, true));
  CHECK_FALSE(fs::ref::visible(0, 2, 2, 3, true));
  CHECK(fs::ref::visible(1, 2, 2, 3, true));
  const double q[2] = {0, 0}, k[3] = {0, 0, 0}, v[3] = {1, 2, 30};  // D = 1, equal scores
  double o[2], lse[2];
  fs::ref::attention_forward_head(q, k, v, 2, 3, 1, 1.0, true, o, lse);
  CHECK(o[0] == doctest::Approx(1.5));       // mean of keys 0, 1
  CHECK(o[1] == doctest::Approx(11.0));      // mean of all three
  CHECK(lse[0] == doctest::Approx(std::log(2.0)));
  CHECK(lse[1] == doctest::Approx(std::log(3.0)));
}

FS_CPU_TEST_CASE("reference backward matches finite differences of the forward pass") {
  const int64_t nq = 3, nk = 4, d = 2;
  auto q = fs::random_uniform<double>(nq * d, 1), k = fs::random_uniform<double>(nk * d, 2),
       v = fs::random_uniform<double>(nk * d, 3), d_o = fs::random_uniform<double>(nq * d, 4);
  std::vector<double> dq(nq * d), dk(nk * d), dv(nk * d), delta(nq), o(nq * d), lse(nq);
  const double scale = 0.7;
  fs::ref::attention_backward_head(q.data(), k.data(), v.data(), d_o.data(), nq, nk, d, scale, true, dq.data(),
                                   dk.data(), dv.data(), delta.data());
  // L = Σ dO ∘ O; its gradient with respect to each input is what the backward pass returns.
  auto loss = [&] {
    fs::ref::attention_forward_head(q.data(), k.data(), v.data(), nq, nk, d, scale, true, o.data(), lse.data());
    double l = 0;
    for (int64_t i = 0; i < nq * d; ++i) l += d_o[i] * o[i];
    return l;
  };
  auto numeric = [&](std::vector<double>& x, std::size_t i) { return central_difference(loss, x, i); };
  for (std::size_t i = 0; i < q.size(); ++i) CHECK(dq[i] == doctest::Approx(numeric(q, i)).epsilon(1e-6));
  for (std::size_t i = 0; i < k.size(); ++i) CHECK(dk[i] == doctest::Approx(numeric(k, i)).epsilon(1e-6));
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(dv[i] == doctest::Approx(numeric(v, i)).epsilon(1e-6));
  loss();
  for (int64_t i = 0; i < nq; ++i) {
    double expect = 0;
    for (int64_t c = 0; c < d; ++c) expect += d_o[i * d + c] * o[i * d + c];
    CHECK(delta[i] == doctest::Approx(expect));
  }
}

FS_CPU_TEST_CASE("reference GEMM: transposes / alpha and beta / and beta = 0 ignores C") {
  // A = [[1, 2], [3, 4]] (2×2), B = [[5, 6], [7, 8]].
  const double a[4] = {1, 2, 3, 4}, at[4] = {1, 3, 2, 4}, b[4] = {5, 6, 7, 8}, bt[4] = {5, 7, 6, 8};
  double c[4] = {1, 1, 1, 1};
  fs::ref::gemm(false, false, 2, 2, 2, 1.0, a, 2, b, 2, 0.0, c, 2);
  CHECK(c[0] == 19);
  CHECK(c[1] == 22);
  CHECK(c[2] == 43);
  CHECK(c[3] == 50);
  double ct[4] = {1, 2, 3, 4};
  fs::ref::gemm(true, true, 2, 2, 2, 2.0, at, 2, bt, 2, -1.0, ct, 2);
  CHECK(ct[0] == 2 * 19 - 1);
  CHECK(ct[3] == 2 * 50 - 4);
  double nan_c[1] = {std::numeric_limits<double>::quiet_NaN()};
  fs::ref::gemm(false, false, 1, 1, 1, 1.0, a, 1, b, 1, 0.0, nan_c, 1);
  CHECK(nan_c[0] == 5);
}

FS_CPU_TEST_CASE("FLOP formulas: forward 4·B·H·Nq·Nk·D / causal half or visible pairs / backward 2.5× / GEMM 2·M·N·K") {
  CHECK(fs::attention_fwd_flops(2, 16, 8192, 8192, 128, false) == 4.0 * 2 * 16 * 8192.0 * 8192 * 128);
  CHECK(fs::attention_fwd_flops(2, 16, 8192, 8192, 128, true) == 2.0 * 2 * 16 * 8192.0 * 8192 * 128);
  // Bottom-right causal with Nq ≠ Nk: the visible pairs, counted row by row.
  auto count_pairs = [](int64_t nq, int64_t nk) {
    double pairs = 0;
    for (int64_t i = 0; i < nq; ++i) pairs += double(std::clamp<int64_t>(i + nk - nq + 1, 0, nk));
    return pairs;
  };
  for (auto [nq, nk] : {std::pair<int64_t, int64_t>{512, 16384}, {1, 8192}, {100, 20000}, {17, 5}, {3, 1}}) {
    CAPTURE(nq);
    CAPTURE(nk);
    CHECK(fs::causal_visible_pairs(nq, nk) == count_pairs(nq, nk));
    CHECK(fs::attention_fwd_flops(2, 3, nq, nk, 64, true) == 4.0 * 2 * 3 * 64 * count_pairs(nq, nk));
  }
  CHECK(fs::attention_fwd_flops(1, 1, 1, 8192, 128, true) == 4.0 * 8192 * 128);  // decode sees every key
  fs::AttentionParams p = valid_params();
  CHECK(fs::attention_bwd_flops(p) == 2.5 * fs::attention_fwd_flops(p));
  CHECK(fs::gemm_flops(4096, 4096, 4096) == 2.0 * 4096.0 * 4096 * 4096);
  // fp16: Q and O are 2·17·64 elements per head, K and V 2·19·64, LSE 17 floats per head.
  p.dtype = FS_FP16;
  CHECK(fs::attention_fwd_min_bytes(p) == 2.0 * 6 * (2 * 17 * 64 + 2 * 19 * 64) + 4.0 * 6 * 17);
  // Multi-query: K and V have one head per batch entry (2 of them, not 6); the FLOPs do not change.
  p.kv_heads = 1;
  CHECK(fs::attention_fwd_min_bytes(p) == 2.0 * (6 * 2 * 17 * 64 + 2 * 2 * 19 * 64) + 4.0 * 6 * 17);
  CHECK(fs::attention_fwd_flops(p) == 4.0 * 2 * 3 * 17 * 19 * 64);
}

FS_CPU_TEST_CASE("grouped-query heads: counts and the flat-index shortcut bh / G and sizes and describe()") {
  fs::AttentionParams p = valid_params();  // B = 2, H = 3
  CHECK(fs::kv_head_count(p) == 3);        // 0: one K/V head per query head
  CHECK(fs::group_size(p) == 1);
  p.heads = 12;
  for (int64_t kv : {1, 2, 3, 4, 6, 12}) {
    CAPTURE(kv);
    p.kv_heads = kv;
    const int64_t g = fs::group_size(p);
    CHECK(g * kv == 12);
    CHECK(fs::kv_elems(p) == 2 * kv * 19 * 64);
    // Query head h of entry b reads K/V head b·KVH + h / G: over the flat index bh = b·H + h that is bh / G.
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t h = 0; h < p.heads; ++h) CHECK((b * p.heads + h) / g == b * kv + h / g);
  }
  // The largest tensor: Q (12 heads × 17 rows) against K (1 head × 19 rows), fp32.
  p.kv_heads = 1;
  CHECK(fs::largest_tensor_bytes(p) == 2.0 * 12 * 17 * 64 * 4);
  p.seq_k = 1000;  // now K, V: 1 × 1000 rows > 12 × 17
  CHECK(fs::largest_tensor_bytes(p) == 2.0 * 1 * 1000 * 64 * 4);
  CHECK(fs::describe(p).find("H=12 KVH=1 Nq=17") != std::string::npos);
  p.kv_heads = 12;  // as many as the query heads: multi-head, not shown
  CHECK(fs::describe(p).find("KVH") == std::string::npos);
}

FS_CPU_TEST_CASE("head slices (stages 01 and 02): each slice's K/V base and head map reach K/V head bh / G") {
  // 80000 query heads in slices of 65535; G = 4 does not divide 65535, so the second slice starts in
  // the middle of a group (at query head 65535, the last of group 16383).
  fs::AttentionParams p = valid_params();
  p.batch = 2;
  p.heads = 40000;
  p.kv_heads = 10000;
  p.seq_q = 1;
  p.seq_k = 3;
  p.head_dim = 2;
  const float* k = static_cast<const float*>(p.k);
  const float* q = static_cast<const float*>(p.q);
  const int64_t kv_head_elems = p.seq_k * p.head_dim, g = fs::group_size(p);
  std::vector<int64_t> starts;
  const fs::Status st = fs::for_each_head_slice<float>(p, [&](const fs::HeadSlice<float>& s) {
    const int64_t bh0 = (s.q - q) / (p.seq_q * p.head_dim);
    starts.push_back(bh0);
    for (int64_t z : {int64_t(0), int64_t(1), int64_t(2), int64_t(3), int64_t(s.heads) - 1}) {
      CAPTURE(bh0);
      CAPTURE(z);
      CHECK((s.k - k) / kv_head_elems + s.kv_head(z) == (bh0 + z) / g);
      CHECK(s.v - static_cast<const float*>(p.v) == s.k - k);
    }
    return fs::Status::Success;
  });
  CHECK(st == fs::Status::Success);
  CHECK(starts == std::vector<int64_t>{0, 65535});
}

FS_CPU_TEST_CASE("validation: each bad input gets its own code / in a fixed order") {
  fs::AttentionSupport support;
  support.dtypes = fs::dtype_bit(fs::DType::FP32);
  support.max_head_dim = 256;
  support.alignment = 16;
  CHECK(fs::validate(valid_params(), support) == fs::Status::Success);

  auto with = [&](auto change) {
    fs::AttentionParams p = valid_params();
    change(p);
    return fs::validate(p, support);
  };
  CHECK(with([](auto& p) { p.q = nullptr; }) == fs::Status::NullPointer);
  CHECK(with([](auto& p) { p.o = nullptr; }) == fs::Status::NullPointer);
  CHECK(with([](auto& p) { p.batch = 0; }) == fs::Status::InvalidSize);
  CHECK(with([](auto& p) { p.seq_k = -5; }) == fs::Status::InvalidSize);
  CHECK(with([](auto& p) { p.head_dim = 0; }) == fs::Status::InvalidSize);
  CHECK(with([](auto& p) { p.scale = std::numeric_limits<float>::quiet_NaN(); }) == fs::Status::InvalidScale);
  CHECK(with([](auto& p) { p.scale = std::numeric_limits<float>::infinity(); }) == fs::Status::InvalidScale);
  CHECK(with([](auto& p) { p.scale = -0.5f; }) == fs::Status::Success);
  CHECK(with([](auto& p) { p.dtype = FS_FP16; }) == fs::Status::UnsupportedDtype);
  CHECK(with([](auto& p) { p.dtype = 7; }) == fs::Status::UnsupportedDtype);
  CHECK(with([](auto& p) { p.head_dim = 257; }) == fs::Status::UnsupportedHeadDim);
  CHECK(with([](auto& p) { p.dtype = FS_INT8; }) == fs::Status::UnsupportedDtype);
  // Sizes whose byte count passes 2^63 in any factor: the product must not wrap.
  for (int64_t fs_attention_params::*field : {&fs_attention_params::batch, &fs_attention_params::heads,
                                              &fs_attention_params::seq_q, &fs_attention_params::seq_k}) {
    CHECK(with([&](auto& p) { p.*field = int64_t(1) << 62; }) == fs::Status::InvalidSize);
    CHECK(with([&](auto& p) { p.*field = std::numeric_limits<int64_t>::max(); }) == fs::Status::InvalidSize);
  }
  CHECK(with([](auto& p) { p.causal = 1; p.seq_q = 20; }) == fs::Status::UnsupportedMask);
  CHECK(with([](auto& p) { p.causal = 1; }) == fs::Status::Success);  // Nq = 17 <= Nk = 19
  CHECK(with([](auto& p) { p.k = fake(0x20004); }) == fs::Status::MisalignedPointer);
  CHECK(with([](auto& p) { p.lse = reinterpret_cast<float*>(0x50002); }) == fs::Status::MisalignedPointer);
  CHECK(with([](auto& p) { p.lse = nullptr; }) == fs::Status::Success);
  CHECK(with([](auto& p) { p.seq_lens = reinterpret_cast<const int32_t*>(0x60000); }) == fs::Status::InvalidSeqLens);
  CHECK(with([](auto& p) { p.cu_seqlens_k = reinterpret_cast<const int32_t*>(0x60000); }) == fs::Status::InvalidSeqLens);
  // kv_heads: 0 (multi-head), or a divisor of heads = 3.
  CHECK(with([](auto& p) { p.kv_heads = 3; }) == fs::Status::Success);
  CHECK(with([](auto& p) { p.kv_heads = 1; }) == fs::Status::Success);
  CHECK(with([](auto& p) { p.kv_heads = -1; }) == fs::Status::InvalidKvHeads);
  CHECK(with([](auto& p) { p.kv_heads = 4; }) == fs::Status::InvalidKvHeads);  // more than heads
  CHECK(with([](auto& p) { p.kv_heads = 2; }) == fs::Status::InvalidKvHeads);  // 3 % 2 != 0
  CHECK(with([](auto& p) { p.kv_heads = std::numeric_limits<int64_t>::min(); }) == fs::Status::InvalidKvHeads);
  // K/V sizes are checked with their own head count: Q fits, K would pass 2^63 only with H heads.
  CHECK(with([](auto& p) { p.heads = 4, p.kv_heads = 1, p.seq_k = int64_t(1) << 52; }) == fs::Status::Success);
  CHECK(with([](auto& p) { p.heads = 4, p.seq_k = int64_t(1) << 52; }) == fs::Status::InvalidSize);
  // A null pointer is reported before a bad size, a bad size before bad kv_heads, bad kv_heads before
  // a bad scale, a bad scale before a bad dtype.
  CHECK(with([](auto& p) { p.q = nullptr; p.batch = 0; }) == fs::Status::NullPointer);
  CHECK(with([](auto& p) { p.batch = 0; p.dtype = FS_FP16; }) == fs::Status::InvalidSize);
  CHECK(with([](auto& p) { p.heads = 0; p.kv_heads = 2; }) == fs::Status::InvalidSize);
  CHECK(with([](auto& p) { p.kv_heads = 2; p.scale = std::numeric_limits<float>::quiet_NaN(); }) ==
        fs::Status::InvalidKvHeads);

  const fs::AttentionSupport listed =
      fs::attention_support<fs::Dtypes<fs::DType::FP32>, fs::HeadDims<32, 64, 128>>(16, /*varlen=*/false);
  fs::AttentionParams p = valid_params();
  p.head_dim = 48;
  CHECK(fs::validate(p, listed) == fs::Status::UnsupportedHeadDim);
  p.head_dim = 128;
  CHECK(fs::validate(p, listed) == fs::Status::Success);
}

FS_CPU_TEST_CASE("validation: a packed batch's longest entry outside 0 .. the total is refused before any device call") {
  // A kernel that takes variable lengths; the offsets are fake device pointers: the bounds on max_seq_q
  // and max_seq_k (the backward's, which sizes its grid of key blocks) are checked before the runtime is
  // asked about the arrays, so no GPU is needed.
  fs::AttentionSupport support;
  support.dtypes = fs::dtype_bit(fs::DType::FP32);
  support.max_head_dim = 256;
  support.alignment = 16;
  support.varlen = true;
  auto packed = [&](auto change) {
    fs::AttentionParams p = valid_params();
    p.cu_seqlens_q = p.cu_seqlens_k = reinterpret_cast<const int32_t*>(0x60000);
    change(p);
    return fs::validate(p, support);
  };
  CHECK(packed([](auto& p) { p.max_seq_k = -1; }) == fs::Status::InvalidSeqLens);
  CHECK(packed([](auto& p) { p.max_seq_k = p.seq_k + 1; }) == fs::Status::InvalidSeqLens);
  CHECK(packed([](auto& p) { p.max_seq_k = std::numeric_limits<int64_t>::min(); }) == fs::Status::InvalidSeqLens);
  CHECK(packed([](auto& p) { p.max_seq_q = -1; }) == fs::Status::InvalidSeqLens);
  CHECK(packed([](auto& p) { p.max_seq_q = p.seq_q + 1; }) == fs::Status::InvalidSeqLens);
}

namespace {

// Strides {batch, head, row} into a params field.
void set_strides(int64_t (&field)[3], int64_t batch, int64_t head, int64_t row) {
  field[0] = batch, field[1] = head, field[2] = row;
}

// valid_params() (B = 2, H = 3, Nq = 17, Nk = 19, D = 64) laid out [B, N, H, D].
fs::AttentionParams bnhd_params() {
  fs::AttentionParams p = valid_params();
  const int64_t h = p.heads, d = p.head_dim;
  set_strides(p.q_strides, p.seq_q * h * d, d, h * d);
  set_strides(p.o_strides, p.seq_q * h * d, d, h * d);
  set_strides(p.k_strides, p.seq_k * h * d, d, h * d);
  set_strides(p.v_strides, p.seq_k * h * d, d, h * d);
  return p;
}

}  // namespace

FS_CPU_TEST_CASE("validation: strides / zeros are the contiguous layout and bad strides are named") {
  // One kernel that takes strides and one that does not, both with 16-byte rows.
  fs::AttentionSupport contiguous;
  contiguous.dtypes = fs::dtype_bit(fs::DType::FP32);
  contiguous.max_head_dim = 256;
  contiguous.alignment = 16;
  fs::AttentionSupport strided = contiguous;
  strided.strided = true;

  // Zeros: the contiguous layout, which every kernel takes.
  const fs::AttentionParams zero = valid_params();
  CHECK(fs::is_contiguous(zero));
  const fs::TensorStrides q = fs::strides_of(zero, fs::Tensor::Q), k = fs::strides_of(zero, fs::Tensor::K);
  CHECK((q.batch == 3 * 17 * 64 && q.head == 17 * 64 && q.row == 64));
  CHECK((k.batch == 3 * 19 * 64 && k.head == 19 * 64 && k.row == 64));
  CHECK(fs::validate(zero, contiguous) == fs::Status::Success);
  CHECK(fs::validate(zero, strided) == fs::Status::Success);
  // The contiguous layout spelled out is the contiguous layout.
  fs::AttentionParams spelled = zero;
  set_strides(spelled.q_strides, 3 * 17 * 64, 17 * 64, 64);
  set_strides(spelled.o_strides, 3 * 17 * 64, 17 * 64, 64);
  CHECK(fs::is_contiguous(spelled));
  CHECK(fs::validate(spelled, contiguous) == fs::Status::Success);

  // [B, N, H, D]: a kernel that takes strides runs it, one that does not refuses it by name.
  const fs::AttentionParams bnhd = bnhd_params();
  CHECK_FALSE(fs::is_contiguous(bnhd));
  CHECK(fs::validate(bnhd, strided) == fs::Status::Success);
  CHECK(fs::validate(bnhd, contiguous) == fs::Status::UnsupportedLayout);
  CHECK(fs::extent_elems(bnhd, fs::Tensor::Q) == 2 * 17 * 3 * 64);  // the same elements, in another order
  CHECK(fs::largest_tensor_bytes(bnhd) == fs::largest_tensor_bytes(zero));
  // One tensor strided is enough.
  fs::AttentionParams only_o = zero;
  set_strides(only_o.o_strides, 17 * 3 * 64, 64, 3 * 64);
  CHECK(fs::validate(only_o, contiguous) == fs::Status::UnsupportedLayout);

  auto with = [&](const fs::AttentionSupport& s, auto change) {
    fs::AttentionParams p = bnhd_params();
    change(p);
    return fs::validate(p, s);
  };
  // A stride whose count is 1 moves nothing: ignored (B = 1), so any value passes, even misaligned.
  CHECK(with(strided, [](auto& p) { p.batch = 1, p.q_strides[0] = 7; }) == fs::Status::Success);
  CHECK(with(contiguous, [](auto& p) {
          p = valid_params();
          p.batch = 1;
          set_strides(p.q_strides, 12345, 17 * 64, 64);
        }) == fs::Status::Success);
  // Negative, overlapping, too large: InvalidStrides, before whether the kernel takes strides at all.
  CHECK(with(strided, [](auto& p) { p.k_strides[2] = -192; }) == fs::Status::InvalidStrides);
  CHECK(with(contiguous, [](auto& p) { p.k_strides[2] = -192; }) == fs::Status::InvalidStrides);
  CHECK(with(strided, [](auto& p) { p.q_strides[1] = 0; }) == fs::Status::InvalidStrides);       // heads on one row
  CHECK(with(strided, [](auto& p) { p.q_strides[2] = 64 * 2; }) == fs::Status::InvalidStrides);  // rows over heads
  CHECK(with(strided, [](auto& p) { p.v_strides[2] = 48; }) == fs::Status::InvalidStrides);      // rows overlap
  CHECK(with(strided, [](auto& p) { p.o_strides[0] = 16 * 3 * 64; }) == fs::Status::InvalidStrides);  // batches
  CHECK(with(strided, [](auto& p) { p.q_strides[0] = int64_t(1) << 62; }) == fs::Status::InvalidStrides);
  CHECK(with(strided, [](auto& p) { p.q_strides[2] = std::numeric_limits<int64_t>::max() / 8; }) ==
        fs::Status::InvalidStrides);
  // Sorted by size the rules are the same: heads outermost ([N, B, H, D]-like orders) are fine.
  CHECK(with(strided, [](auto& p) { set_strides(p.q_strides, 64, 2 * 17 * 64, 2 * 64); }) == fs::Status::Success);
  // Gaps are fine: rows of a packed QKV tensor [B, N, 3, H, D], Q's slice.
  CHECK(with(strided, [](auto& p) { set_strides(p.q_strides, 17 * 9 * 64, 64, 9 * 64); }) == fs::Status::Success);
  // A stride off the kernel's 16 bytes: 4-byte elements, 196 per row is 784 bytes, 195 is 780.
  CHECK(with(strided, [](auto& p) { set_strides(p.q_strides, 17 * 196, 64, 196); }) == fs::Status::Success);
  CHECK(with(strided, [](auto& p) { set_strides(p.q_strides, 17 * 196, 64, 195); }) == fs::Status::InvalidStrides);
  fs::AttentionSupport element_aligned = strided;
  element_aligned.alignment = 0;
  CHECK(with(element_aligned, [](auto& p) { set_strides(p.q_strides, 17 * 196, 64, 195); }) == fs::Status::Success);
  // Bad strides before the layout, the layout before the alignment.
  CHECK(with(contiguous, [](auto& p) { set_strides(p.q_strides, 17 * 196, 64, 195); }) ==
        fs::Status::UnsupportedLayout);
  // Packed batches: [H, total, D], the batch stride moves nothing.
  auto packed = [&](auto change) {
    fs::AttentionParams p = valid_params();
    p.cu_seqlens_q = p.cu_seqlens_k = reinterpret_cast<const int32_t*>(0x60000);
    change(p);
    return p;
  };
  const fs::AttentionParams thd = packed([](auto& p) {  // [total, H, D]: rows of all heads side by side
    set_strides(p.q_strides, 0, 64, 3 * 64);
    set_strides(p.o_strides, 999, 64, 3 * 64);
    set_strides(p.k_strides, 0, 64, 3 * 64);
    set_strides(p.v_strides, 0, 64, 3 * 64);
  });
  CHECK(fs::extent_elems(thd, fs::Tensor::Q) == 17 * 3 * 64);
  CHECK(fs::strides_of(thd, fs::Tensor::O).batch == 3 * 17 * 64);  // the contiguous layout's: it moves nothing
  CHECK(fs::extent_elems(thd, fs::Tensor::O) == 17 * 3 * 64);
}

FS_CPU_TEST_CASE("backward validation: strided gradients may interleave in one tensor / never share an element") {
  fs::AttentionSupport support;
  support.dtypes = fs::dtype_bit(fs::DType::FP32);
  support.max_head_dim = 256;
  support.alignment = 16;
  support.strided = true;
  // B = 2, H = 3, Nq = Nk = 17, D = 64, fp32. Q, K, V slices of one packed [B, N, 3, H, D] tensor at
  // 0x100000, dQ, dK, dV of another at 0x200000; O, dO [B, N, H, D].
  const int64_t width = 3 * 3 * 64, rows = 17;  // a packed row: Q's, K's, V's heads
  fs::AttentionBwdParams ok{};
  ok.fwd = valid_params();
  ok.fwd.seq_k = rows;
  set_strides(ok.fwd.q_strides, rows * width, 64, width);
  set_strides(ok.fwd.k_strides, rows * width, 64, width);
  set_strides(ok.fwd.v_strides, rows * width, 64, width);
  set_strides(ok.fwd.o_strides, rows * 3 * 64, 64, 3 * 64);
  const std::uintptr_t qkv = 0x100000, dqkv = 0x200000, slice = 3 * 64 * 4;  // bytes from Q's slice to K's
  ok.fwd.q = fake(qkv), ok.fwd.k = fake(qkv + slice), ok.fwd.v = fake(qkv + 2 * slice);
  ok.fwd.o = const_cast<void*>(fake(0x300000));
  ok.d_o = fake(0x400000);
  ok.dq = const_cast<void*>(fake(dqkv));
  ok.dk = const_cast<void*>(fake(dqkv + slice));
  ok.dv = const_cast<void*>(fake(dqkv + 2 * slice));
  ok.delta = reinterpret_cast<float*>(0x500000);
  CHECK(fs::validate(ok, support) == fs::Status::Success);
  CHECK(fs::check_outputs_apart(ok) == fs::Status::Success);  // dQ, dK, dV interleave without meeting

  auto apart = [&](auto change) {
    fs::AttentionBwdParams p = ok;
    change(p);
    return fs::check_outputs_apart(p);
  };
  // dK 16 bytes into dQ's slice: they share elements.
  CHECK(apart([&](auto& p) { p.dk = const_cast<void*>(fake(dqkv + 16)); }) == fs::Status::MisalignedPointer);
  // dK one whole packed row further on: still no element in common (each slice is one of every row).
  CHECK(apart([&](auto& p) { p.dk = const_cast<void*>(fake(dqkv + slice + width * 4)); }) == fs::Status::Success);
  // dV on dQ's own slice, a packed row later: row n of dV is row n + 1 of dQ.
  CHECK(apart([&](auto& p) { p.dv = const_cast<void*>(fake(dqkv + width * 4)); }) == fs::Status::MisalignedPointer);
  // dQ over the inputs' packed tensor: the same layout, the same elements.
  CHECK(apart([&](auto& p) { p.dq = const_cast<void*>(fake(qkv)); }) == fs::Status::MisalignedPointer);
  // dK in another layout whose span crosses dQ's: taken as an overlap.
  CHECK(apart([&](auto& p) {
          set_strides(p.fwd.k_strides, rows * 3 * 64, 64, 3 * 64);
          p.fwd.k = fake(0x600000);
        }) == fs::Status::MisalignedPointer);
  // The same layout far away: apart.
  CHECK(apart([&](auto& p) {
          set_strides(p.fwd.k_strides, rows * 3 * 64, 64, 3 * 64);
          p.fwd.k = fake(0x600000);
          p.dk = const_cast<void*>(fake(0x700000));
        }) == fs::Status::Success);

  // One K/V head and Nk = 29 > Nq = 17: Q, K, V slices of [B, 29, 3 + 2, D], dQ, dK, dV of another. The
  // counts differ (Q 17 rows of 3 heads, K 29 rows of one), the strides agree: still apart.
  fs::AttentionBwdParams g = ok;
  const int64_t g_width = 5 * 64, g_rows = 29;
  g.fwd.kv_heads = 1, g.fwd.seq_k = g_rows;
  set_strides(g.fwd.q_strides, g_rows * g_width, 64, g_width);
  set_strides(g.fwd.k_strides, g_rows * g_width, 64, g_width);
  set_strides(g.fwd.v_strides, g_rows * g_width, 64, g_width);
  const std::uintptr_t g_qkv = 0x100000, g_dqkv = 0x800000, k_slice = 3 * 64 * 4, v_slice = 4 * 64 * 4;
  g.fwd.q = fake(g_qkv), g.fwd.k = fake(g_qkv + k_slice), g.fwd.v = fake(g_qkv + v_slice);
  g.dq = const_cast<void*>(fake(g_dqkv));
  g.dk = const_cast<void*>(fake(g_dqkv + k_slice));
  g.dv = const_cast<void*>(fake(g_dqkv + v_slice));
  CHECK(fs::validate(g, support) == fs::Status::Success);
  CHECK(fs::check_outputs_apart(g) == fs::Status::Success);
  g.dv = const_cast<void*>(fake(g_dqkv + k_slice + 64));  // 16 elements into dK's head
  CHECK(fs::check_outputs_apart(g) == fs::Status::MisalignedPointer);
  g.dv = const_cast<void*>(fake(g_dqkv + 2 * 64 * 4));  // dQ's third head
  CHECK(fs::check_outputs_apart(g) == fs::Status::MisalignedPointer);
}

FS_CPU_TEST_CASE("reference backward of a group: dK and dV sum over the query heads that share K and V") {
  // Two query heads on one K/V head; L = Σ over both heads of dO ∘ O. Its gradient with respect to K and
  // V, by finite differences, is what attention_backward_group returns; dQ and delta are each head's own.
  const int64_t group = 2, nq = 3, nk = 4, d = 2;
  auto q = fs::random_uniform<double>(group * nq * d, 11), k = fs::random_uniform<double>(nk * d, 12),
       v = fs::random_uniform<double>(nk * d, 13), d_o = fs::random_uniform<double>(group * nq * d, 14);
  std::vector<double> dq(group * nq * d), dk(nk * d), dv(nk * d), delta(group * nq);
  const double scale = -0.6;
  fs::ref::attention_backward_group(q.data(), k.data(), v.data(), d_o.data(), group, nq, nk, d, scale, false,
                                    dq.data(), dk.data(), dv.data(), delta.data());
  auto loss = [&] {
    std::vector<double> o(nq * d), lse(nq);
    double l = 0;
    for (int64_t h = 0; h < group; ++h) {
      fs::ref::attention_forward_head(q.data() + h * nq * d, k.data(), v.data(), nq, nk, d, scale, false, o.data(),
                                      lse.data());
      for (int64_t i = 0; i < nq * d; ++i) l += d_o[h * nq * d + i] * o[i];
    }
    return l;
  };
  auto numeric = [&](std::vector<double>& x, std::size_t i) { return central_difference(loss, x, i); };
  for (std::size_t i = 0; i < q.size(); ++i) CHECK(dq[i] == doctest::Approx(numeric(q, i)).epsilon(1e-6));
  for (std::size_t i = 0; i < k.size(); ++i) CHECK(dk[i] == doctest::Approx(numeric(k, i)).epsilon(1e-6));
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(dv[i] == doctest::Approx(numeric(v, i)).epsilon(1e-6));
  // Each head's delta is its own: the second head's equals a one-head backward of that head alone.
  std::vector<double> dq1(nq * d), dk1(nk * d), dv1(nk * d), delta1(nq);
  fs::ref::attention_backward_head(q.data() + nq * d, k.data(), v.data(), d_o.data() + nq * d, nq, nk, d, scale,
                                   false, dq1.data(), dk1.data(), dv1.data(), delta1.data());
  for (int64_t i = 0; i < nq; ++i) CHECK(delta[nq + i] == delta1[i]);
}

FS_CPU_TEST_CASE("backward validation: the forward's rules then lse and dO and the gradients and outputs apart from inputs") {
  fs::AttentionSupport support;
  support.dtypes = fs::dtype_bit(fs::DType::FP32);
  support.max_head_dim = 256;
  support.alignment = 16;
  // Q, O, dO, dQ: 2·3·17·64·4 = 26112 bytes each; K, V, dK, dV: 2·3·19·64·4 = 29184; LSE, delta 408.
  fs::AttentionBwdParams ok{};
  ok.fwd = valid_params();
  ok.d_o = fake(0x60000);
  ok.dq = const_cast<void*>(fake(0x70000));
  ok.dk = const_cast<void*>(fake(0x80000));
  ok.dv = const_cast<void*>(fake(0x90000));
  ok.delta = reinterpret_cast<float*>(0xA0000);
  CHECK(fs::validate(ok, support) == fs::Status::Success);
  CHECK(fs::check_outputs_apart(ok) == fs::Status::Success);
  auto with = [&](auto change) {
    fs::AttentionBwdParams p = ok;
    change(p);
    return fs::validate(p, support);
  };
  CHECK(with([](auto& p) { p.fwd.v = nullptr; }) == fs::Status::NullPointer);
  CHECK(with([](auto& p) { p.fwd.seq_q = 0; }) == fs::Status::InvalidSize);
  CHECK(with([](auto& p) { p.fwd.dtype = FS_BF16; }) == fs::Status::UnsupportedDtype);
  CHECK(with([](auto& p) { p.fwd.kv_heads = p.fwd.heads + 1; }) == fs::Status::InvalidKvHeads);  // the forward's rule
  CHECK(with([](auto& p) { p.fwd.kv_heads = p.fwd.heads; }) == fs::Status::Success);  // = 0: one K/V head each
  // A valid grouping: every backward sums dK, dV over each group.
  CHECK(with([](auto& p) { p.fwd.heads = 6, p.fwd.kv_heads = 3; }) == fs::Status::Success);
  CHECK(with([](auto& p) { p.fwd.lse = nullptr; }) == fs::Status::NullPointer);  // optional forward, required here
  CHECK(with([](auto& p) { p.d_o = nullptr; }) == fs::Status::NullPointer);
  CHECK(with([](auto& p) { p.dk = nullptr; }) == fs::Status::NullPointer);
  CHECK(with([](auto& p) { p.delta = nullptr; }) == fs::Status::Success);  // delta is optional
  CHECK(with([](auto& p) { p.dv = static_cast<char*>(p.dv) + 8; }) == fs::Status::MisalignedPointer);
  CHECK(with([](auto& p) { p.delta = reinterpret_cast<float*>(0xA0001); }) == fs::Status::MisalignedPointer);
  // A null pointer comes before a misaligned one, as in the forward.
  CHECK(with([](auto& p) { p.dq = nullptr, p.dv = static_cast<char*>(p.dv) + 8; }) == fs::Status::NullPointer);

  auto apart = [&](auto change) {
    fs::AttentionBwdParams p = ok;
    change(p);
    return fs::check_outputs_apart(p);
  };
  CHECK(apart([](auto& p) { p.dq = const_cast<void*>(p.fwd.q); }) == fs::Status::MisalignedPointer);
  CHECK(apart([](auto& p) { p.dk = p.dv; }) == fs::Status::MisalignedPointer);
  CHECK(apart([](auto& p) { p.delta = p.fwd.lse; }) == fs::Status::MisalignedPointer);
  // dQ over the last 16 bytes of dO (0x60000 + 26112 bytes), then right after it.
  CHECK(apart([](auto& p) { p.dq = const_cast<void*>(fake(0x60000 + 26112 - 16)); }) == fs::Status::MisalignedPointer);
  CHECK(apart([](auto& p) { p.dq = const_cast<void*>(fake(0x60000 + 26112)); }) == fs::Status::Success);
  // dK right after dV (29184 bytes) is apart, 16 bytes earlier it is not.
  CHECK(apart([](auto& p) { p.dk = static_cast<char*>(p.dv) + 29184; }) == fs::Status::Success);
  CHECK(apart([](auto& p) { p.dk = static_cast<char*>(p.dv) + 29184 - 16; }) == fs::Status::MisalignedPointer);
  // Multi-query: K, V, dK, dV hold one head per batch entry, 2·1·19·64·4 = 9728 bytes: dK right after dV
  // is apart at that distance, not at the multi-head one.
  CHECK(apart([](auto& p) { p.fwd.kv_heads = 1, p.dk = static_cast<char*>(p.dv) + 9728; }) == fs::Status::Success);
  CHECK(apart([](auto& p) { p.fwd.kv_heads = 1, p.dk = static_cast<char*>(p.dv) + 9728 - 16; }) ==
        fs::Status::MisalignedPointer);
  // An output that spans past the end of the address space is not wrapped back to small addresses.
  CHECK(apart([](auto& p) { p.dv = reinterpret_cast<void*>(UINTPTR_MAX - 0xFF); }) == fs::Status::Success);
  CHECK(apart([](auto& p) { p.delta = nullptr, p.dq = reinterpret_cast<void*>(0xA0000); }) == fs::Status::Success);
}

FS_CPU_TEST_CASE("validation: a GEMM kernel's operand alignment refuses bases and row strides off its multiple") {
  // 16-byte operands, as stage 07's TMA loads need: A and B only (C is stored by ordinary stores).
  fs::GemmParams p{};
  p.m = 17, p.n = 24, p.k = 40;
  p.ab_dtype = FS_FP16, p.c_dtype = FS_FP32;
  p.a = fake(0x10000), p.b = fake(0x20000), p.c = const_cast<void*>(fake(0x30004));
  p.lda = 40, p.ldb = 24, p.ldc = 25;  // 80 and 48 bytes: multiples of 16; ldc is free
  const fs::GemmSupport tma{fs::dtype_bit(fs::DType::FP16), fs::dtype_bit(fs::DType::FP32), 16};
  const fs::GemmSupport plain{tma.ab_dtypes, tma.c_dtypes};
  auto with = [&](const fs::GemmSupport& s, auto change) {
    fs::GemmParams q = p;
    change(q);
    return fs::validate(q, s);
  };
  const auto same = [](fs::GemmParams&) {};
  CHECK(with(tma, same) == fs::Status::Success);
  CHECK(with(tma, [](auto& q) { q.a = fake(0x10008); }) == fs::Status::MisalignedPointer);   // 8-byte base
  CHECK(with(tma, [](auto& q) { q.b = fake(0x20002); }) == fs::Status::MisalignedPointer);
  CHECK(with(tma, [](auto& q) { q.lda = 44; }) == fs::Status::InvalidLeadingDim);            // 88 bytes
  CHECK(with(tma, [](auto& q) { q.k = 17, q.lda = 17; }) == fs::Status::InvalidLeadingDim);  // tight, odd
  CHECK(with(tma, [](auto& q) { q.trans_b = 1, q.ldb = 41; }) == fs::Status::InvalidLeadingDim);
  CHECK(with(tma, [](auto& q) { q.trans_a = 1, q.lda = 24; }) == fs::Status::Success);  // K×M, 48-byte rows
  // A base off by one element is the element check's, before the wider one; the other kernels ask neither.
  CHECK(with(tma, [](auto& q) { q.a = fake(0x10001); }) == fs::Status::MisalignedPointer);
  CHECK(with(plain, [](auto& q) { q.a = fake(0x10008), q.lda = 44; }) == fs::Status::Success);
  // A leading dimension too small is still that, whatever its alignment.
  CHECK(with(tma, [](auto& q) { q.lda = 32; }) == fs::Status::InvalidLeadingDim);
}

FS_CPU_TEST_CASE("validation: a GEMM kernel that takes one pair of transposes refuses the other three by name") {
  // Stage 07's int8 version: A stored M×K (lda >= K), B stored N×K (ldb >= K), both k-contiguous.
  fs::GemmParams p{};
  p.m = 17, p.n = 24, p.k = 48;
  p.trans_b = 1;
  p.ab_dtype = FS_INT8, p.c_dtype = FS_INT32;
  p.a = fake(0x10000), p.b = fake(0x20000), p.c = const_cast<void*>(fake(0x30004));
  p.lda = 48, p.ldb = 48, p.ldc = 25;
  const fs::GemmSupport tn{fs::dtype_bit(fs::DType::INT8), fs::dtype_bit(fs::DType::INT32), 16,
                           fs::layout_bit(false, true)};
  CHECK(tn.takes_layout(false, true));
  CHECK(!tn.takes_layout(false, false));
  CHECK(fs::GemmSupport{}.layouts == fs::kAllLayouts);  // every other kernel: all four
  auto with = [&](auto change) {
    fs::GemmParams q = p;
    change(q);
    return fs::validate(q, tn);
  };
  CHECK(with([](auto&) {}) == fs::Status::Success);
  // Leading dimensions wide enough for every layout (48 covers M, N and K), so only the layout is wrong.
  CHECK(with([](auto& q) { q.trans_b = 0; }) == fs::Status::UnsupportedLayout);
  CHECK(with([](auto& q) { q.trans_a = 1; }) == fs::Status::UnsupportedLayout);
  CHECK(with([](auto& q) { q.trans_a = 1, q.trans_b = 0; }) == fs::Status::UnsupportedLayout);
  // Any non-zero flag is a transpose, as everywhere else.
  CHECK(with([](auto& q) { q.trans_b = 7; }) == fs::Status::Success);
  // The order: dtypes before the layout, the layout before the alignment.
  CHECK(with([](auto& q) { q.trans_b = 0, q.ab_dtype = FS_FP16; }) == fs::Status::UnsupportedDtype);
  CHECK(with([](auto& q) { q.trans_b = 0, q.a = fake(0x10008); }) == fs::Status::UnsupportedLayout);
  CHECK(with([](auto& q) { q.a = fake(0x10008); }) == fs::Status::MisalignedPointer);
  CHECK(with([](auto& q) { q.lda = 56; }) == fs::Status::InvalidLeadingDim);  // 56-byte rows: not TMA's 16
}

FS_CPU_TEST_CASE("TMA tensor maps: each of TMA's limits returns its code before the driver is asked") {
  fs::TensorMap2d t;
  t.base = fake(0x10000);
  t.dtype = fs::DType::BF16;
  t.cols = 1000, t.rows = 17, t.ld = 1000;  // 2000-byte rows
  t.box_cols = 64, t.box_rows = 128;
  CHECK(fs::check_tensor_map(t) == fs::Status::Success);
  auto with = [&](auto change) {
    fs::TensorMap2d u = t;
    change(u);
    return fs::check_tensor_map(u);
  };
  CHECK(with([](auto& u) { u.base = fake(0x10008); }) == fs::Status::MisalignedPointer);
  CHECK(with([](auto& u) { u.ld = 1001; }) == fs::Status::InvalidLeadingDim);  // 2002 bytes
  CHECK(with([](auto& u) { u.ld = 999; }) == fs::Status::InvalidLeadingDim);   // shorter than a row
  CHECK(with([](auto& u) { u.ld = int64_t(1) << 39; }) == fs::Status::InvalidLeadingDim);  // 2^40 bytes
  CHECK(with([](auto& u) { u.ld = (int64_t(1) << 39) - 8; }) == fs::Status::Success);
  CHECK(with([](auto& u) { u.ld = std::numeric_limits<int64_t>::max(); }) == fs::Status::InvalidLeadingDim);
  CHECK(with([](auto& u) { u.rows = 0; }) == fs::Status::InvalidSize);
  // One row of 2^31 elements: TMA could address it, the kernels' signed 32-bit coordinates cannot.
  CHECK(with([](auto& u) { u.rows = 1, u.cols = u.ld = int64_t(1) << 31; }) == fs::Status::InvalidSize);
  CHECK(with([](auto& u) { u.rows = 1, u.cols = u.ld = (int64_t(1) << 31) - 8; }) == fs::Status::Success);

  // Rank 4 (stage 07 attention: a plane per (head, batch entry), each with its stride): [B, N, H, D],
  // the head stride far below a plane, is a valid map.
  fs::TensorMap4d f;
  f.plane = t;
  f.plane.cols = 64, f.plane.ld = 8 * 64;  // 8 heads' rows side by side
  f.heads = 8, f.head_ld = 64;
  f.batches = 2, f.batch_ld = t.rows * 8 * 64;
  CHECK(fs::check_tensor_map(f) == fs::Status::Success);
  auto with4 = [&](auto change) {
    fs::TensorMap4d u = f;
    change(u);
    return fs::check_tensor_map(u);
  };
  CHECK(with4([](auto& u) { u.plane.base = fake(0x10008); }) == fs::Status::MisalignedPointer);
  CHECK(with4([](auto& u) { u.heads = 0; }) == fs::Status::InvalidSize);
  CHECK(with4([](auto& u) { u.batches = int64_t(1) << 31; }) == fs::Status::InvalidSize);
  CHECK(with4([](auto& u) { u.head_ld = 63; }) == fs::Status::InvalidLeadingDim);  // 126 bytes
  CHECK(with4([](auto& u) { u.batch_ld = 0; }) == fs::Status::InvalidLeadingDim);
  CHECK(with4([](auto& u) { u.batch_ld = int64_t(1) << 39; }) == fs::Status::InvalidLeadingDim);  // 2^40 bytes
}

FS_CPU_TEST_CASE("status codes: every code has a distinct name and a message") {
  for (int code = FS_SUCCESS; code <= FS_ERR_INVALID_STRIDES; ++code) {
    CHECK(std::strncmp(fs_status_name(code), "FS_", 3) == 0);
    CHECK(std::strlen(fs_status_message(code)) > 5);
    for (int other = FS_SUCCESS; other < code; ++other) CHECK(std::strcmp(fs_status_name(code), fs_status_name(other)) != 0);
  }
  CHECK(std::string(fs_status_name(FS_ERR_INVALID_KV_HEADS)) == "FS_ERR_INVALID_KV_HEADS");
  CHECK(std::string(fs_status_name(FS_ERR_UNSUPPORTED_LAYOUT)) == "FS_ERR_UNSUPPORTED_LAYOUT");
  CHECK(std::string(fs_status_name(FS_ERR_INVALID_STRIDES)) == "FS_ERR_INVALID_STRIDES");
  CHECK(std::string(fs_status_name(FS_ERR_INVALID_STRIDES + 1)) == "FS_UNKNOWN_STATUS");
  CHECK(std::string(fs_status_name(-1)) == "FS_UNKNOWN_STATUS");
}

FS_CPU_TEST_CASE("comparison: max abs / relative L2 / NaN and exact mismatches") {
  fs::ErrorStats e;
  e.add(1.0, 1.0);
  e.add(2.5, 2.0);
  CHECK(e.max_abs == 0.5);
  CHECK(e.rel_l2 == doctest::Approx(0.5 / std::sqrt(5.0)));
  CHECK(e.mismatches == 1);
  CHECK(fs::within(e, {0.5, 1.0}));
  CHECK_FALSE(fs::within(e, {0.4, 1.0}));
  e.add(std::numeric_limits<double>::quiet_NaN(), 0.0);
  CHECK(e.nonfinite == 1);
  CHECK_FALSE(fs::within(e, {1e9, 1e9}));

  fs::ErrorStats naive, kernel;
  naive.add(1.001, 1.0);
  kernel.add(1.0019, 1.0);
  CHECK(fs::within_naive_budget(kernel, naive));
  kernel.add(1.0025, 1.0);
  CHECK_FALSE(fs::within_naive_budget(kernel, naive));
}

FS_CPU_TEST_CASE("random data: reproducible / in range / never all zero / small integers are integers") {
  const auto a = fs::random_uniform<float>(1000, 42), b = fs::random_uniform<float>(1000, 42),
             c = fs::random_uniform<float>(1000, 43);
  CHECK(a == b);
  CHECK(a != c);
  int zeros = 0;
  for (float x : a) {
    CHECK(x >= -1.0f);
    CHECK(x < 1.0f);
    zeros += x == 0.0f;
  }
  CHECK(zeros < 5);
  const auto ints = fs::random_ints<__half>(1000, 7, -3, 3);
  int seen_min = 0, seen_max = 0;
  for (__half h : ints) {
    const float x = fs::to_float(h);
    CHECK(x == std::round(x));
    CHECK(x >= -3.0f);
    CHECK(x <= 3.0f);
    seen_min += x == -3.0f;
    seen_max += x == 3.0f;
  }
  CHECK(seen_min > 0);
  CHECK(seen_max > 0);
}

FS_CPU_TEST_CASE("parallel_for covers every index exactly once in contiguous chunks") {
  for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(3), std::size_t(1000)}) {
    std::vector<int> hits(count, 0);
    std::mutex lock;
    std::vector<std::pair<std::size_t, std::size_t>> chunks;
    fs::parallel_for(count, [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) ++hits[i];  // chunks are disjoint: no race
      std::lock_guard<std::mutex> guard(lock);
      chunks.emplace_back(begin, end);
    });
    for (int h : hits) CHECK(h == 1);
    std::size_t covered = 0;
    for (const auto& [begin, end] : chunks) {
      CHECK(begin < end);
      covered += end - begin;
    }
    CHECK(covered == count);
  }
}

FS_CPU_TEST_CASE("split-KV heuristic: fill whole waves / never split a full grid / keep slices long") {
  // A full grid is never split.
  CHECK(fs::split_kv_heuristic(132, 256, 132) == 1);
  CHECK(fs::split_kv_heuristic(2048, 128, 264) == 1);
  // Stage 04 v6 at B = 1, H = 16, Nq = 512, Br = 128: 64 tiles; two blocks per SM on 132 SMs: 4 splits fill 256 of
  // 264 slots (97%), the fewest that do.
  CHECK(fs::split_kv_heuristic(64, 256, 264) == 4);
  // One block per SM: 2 splits already fill 128 of 132.
  CHECK(fs::split_kv_heuristic(64, 256, 132) == 2);
  // 100 tiles on 132 slots: 1 split fills 76%; 5 splits 500 of 528 (95%) within 5% of the best
  // (13 splits, 1300 of 1320).
  CHECK(fs::split_kv_heuristic(100, 1000, 132) == 5);
  // Slices of at least 4 key blocks: 8 key blocks allow at most 2 splits; 3 allow none.
  CHECK(fs::split_kv_heuristic(16, 8, 132) == 2);
  CHECK(fs::split_kv_heuristic(16, 3, 132) == 1);
  // Decoding, Nq = 1: one query tile per head. B = 1, H = 32 against Nk = 16384 (256 key blocks of 64):
  // 8 splits fill 256 of 264 slots, 4 fill 128 of 132; with 8 query heads 16 splits, the cap, fill
  // 128 of 264. (The grid has a tile per query head, whether or not heads share K/V: GQA changes
  // nothing here.)
  CHECK(fs::split_kv_heuristic(32, 256, 264) == 8);
  CHECK(fs::split_kv_heuristic(32, 256, 132) == 4);
  CHECK(fs::split_kv_heuristic(8, 256, 264) == 16);
  // At most 16 splits, however empty the GPU.
  CHECK(fs::split_kv_heuristic(1, 100000, 1000) == 16);
  CHECK(fs::split_kv_heuristic(0, 100, 132) == 1);
}

FS_CPU_TEST_CASE("last-wave split: shorten the last wave / leave whole waves and uneven tiles and short slices alone") {
  // Key blocks of 64 keys, as stage 07's v8 takes them at D = 128.
  auto split = [](int64_t tiles, int64_t key_blocks, int64_t slots, bool equal) {
    const fs::LastWaveSplit w = fs::last_wave_split(tiles, 64 * key_blocks, slots, equal);
    return std::pair<int64_t, int>(w.tiles, w.splits);
  };
  // Stage 07's v8 at D = 128, N = 8192, B = 2, H = 16: 1376 tiles of 192 rows on 132 SMs are 10 whole waves
  // and 56 tiles of 128 key blocks; 2 splits (slices of 64 blocks, the most) make the grid 10.5 tiles long.
  CHECK(split(1376, 128, 132, true) == std::pair<int64_t, int>{56, 2});
  // N = 16384: 256 key blocks allow 4 splits; 2 are within 2% of the best (10.5 again).
  CHECK(split(1376, 256, 132, true) == std::pair<int64_t, int>{56, 2});
  // N = 4096: 1408 tiles, 88 left over, but 64 key blocks: slices would be shorter than 64 blocks.
  CHECK(split(1408, 64, 132, true) == std::pair<int64_t, int>{0, 1});
  // Many key blocks: 100 tiles left over; 9 splits are 900 blocks, 7 waves of 1/9 of a tile (0.78), within
  // 2% of the best of 1 to 16 splits (13: 1300 blocks, 10 waves of 1/13, 0.77).
  CHECK(split(100, 2000, 132, true) == std::pair<int64_t, int>{100, 9});
  // Whole waves only; no tiles; no slots.
  CHECK(split(1320, 128, 132, true) == std::pair<int64_t, int>{0, 1});
  CHECK(split(0, 128, 132, true) == std::pair<int64_t, int>{0, 1});
  CHECK(split(10, 128, 0, true) == std::pair<int64_t, int>{0, 1});
  // Causal or variable-length tiles: whole waves of them do not end together, so no split...
  CHECK(split(1376, 128, 132, false) == std::pair<int64_t, int>{0, 1});
  // ...except in a grid of fewer tiles than slots, split whole: 32 tiles against 32768 keys (512 key
  // blocks), 4 splits are 128 blocks, one wave of a quarter tile.
  CHECK(split(32, 512, 132, false) == std::pair<int64_t, int>{32, 4});
  CHECK(split(32, 512, 132, true) == std::pair<int64_t, int>{32, 4});
  // Fewer than 128 key blocks allow no split.
  CHECK(split(48, 127, 132, true) == std::pair<int64_t, int>{0, 1});
  // 128 decoding tiles on 132 SMs: one wave whatever the split.
  CHECK(split(128, 1024, 132, true) == std::pair<int64_t, int>{0, 1});
}

FS_CPU_TEST_CASE("command line: integers are decimal / switches take 0 or 1 or false or true / the rest is refused") {
  // What a flag's value turns into, or "refused" with CLI11's message when the flag's validator refuses it.
  auto read = [](std::vector<std::string> args) {
    CLI::App app{"test"};
    int64_t seq = 4096;
    int trans = 0;
    bool causal = false, check = true;
    app.add_option("--seq", seq)->transform(fs::decimal_in(1, std::numeric_limits<int64_t>::max()));
    app.add_option("--trans", trans)->transform(fs::decimal_in(0, 1));
    app.add_flag("--causal", causal)->check(fs::switch_value());
    app.add_option("--check", check)->check(fs::switch_value());
    std::reverse(args.begin(), args.end());  // CLI11 takes a vector in reverse order
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      return "refused: " + std::string(e.what());
    }
    return std::to_string(seq) + " " + std::to_string(trans) + " " + std::to_string(causal) + std::to_string(check);
  };
  CHECK(read({}) == "4096 0 01");
  CHECK(read({"--seq", "17", "--trans", "1", "--causal", "--check", "0"}) == "17 1 10");
  CHECK(read({"--seq", "010"}) == "10 0 01");  // decimal, not octal 8
  for (const char* bad : {"0x10", "1_000", "1'000", "0b11", "0o17", "+5", " 12", "12 ", "1e3", "1.0", "", "ten"})
    CHECK(read({"--seq", bad}) == "refused: --seq: expects a decimal integer, got '" + std::string(bad) + "'");
  CHECK(read({"--seq", "0"}) == "refused: --seq: must be at least 1, got 0");
  CHECK(read({"--seq", "99999999999999999999"}) == "refused: --seq: must be at least 1, got 99999999999999999999");
  CHECK(read({"--trans", "2"}) == "refused: --trans: must be 0 to 1, got 2");
  CHECK(read({"--trans", "0x1"}) == "refused: --trans: expects a decimal integer, got '0x1'");
  // Switches: the bare flag, 0, 1, false, true; the last one given counts.
  CHECK(read({"--causal=1"}) == "4096 0 11");
  CHECK(read({"--causal=true"}) == "4096 0 11");
  CHECK(read({"--causal=0"}) == "4096 0 01");
  CHECK(read({"--causal=false"}) == "4096 0 01");
  CHECK(read({"--causal", "--causal=0"}) == "4096 0 01");
  CHECK(read({"--check", "false"}) == "4096 0 00");
  for (const std::string bad : {"2", "-1", "yes", "on", "TRUE", "01"}) {
    CHECK(read({"--causal=" + bad}) == "refused: --causal: takes 0, 1, false or true, got '" + bad + "'");
    CHECK(read({"--check", bad}) == "refused: --check: takes 0, 1, false or true, got '" + bad + "'");
  }
}
