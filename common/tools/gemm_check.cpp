#include "common/tools/gemm_check.h"

#include <algorithm>
#include <stdexcept>
#include <cstring>
#include <type_traits>
#include <vector>

#include "common/lib/dispatch.h"

#include "common/lib/numeric.h"
#include "common/lib/random.h"
#include "common/tools/check.h"
#include "common/tools/device_buffer.h"
#include "common/tools/parallel.h"
#include "common/tools/reference.h"

namespace fs {

namespace {

// Calls f(T{}) with the element type of an fs_dtype.
template <class F>
void with_type(int32_t dtype, F&& f) {
  const Status st = Dtypes<DType::FP32, DType::FP16, DType::BF16, DType::INT8, DType::INT32>::dispatch(
      dtype, [&](auto t) {
        f(typename decltype(t)::type{});
        return Status::Success;
      });
  if (st != Status::Success) throw std::invalid_argument("unknown dtype " + std::to_string(dtype));
}

std::size_t element_size(int32_t dtype) { return dtype_size(static_cast<DType>(dtype)); }

// A matrix as stored: `rows` rows of `cols` used elements, `ld` apart, from element `shift` of its
// buffer, which ends right after the last used element.
struct Layout {
  int64_t rows, cols, ld, shift;
  int64_t elems() const { return shift + (rows - 1) * ld + cols; }
  int64_t at(int64_t r, int64_t c) const { return shift + r * ld + c; }
};

// Bytes that read as NaN in fp32/fp16/bf16 (0xFF), or as a value no integer result of the tests can
// take (0x7F7F7F7F in int32, 127 in int8).
unsigned char poison_byte(int32_t dtype) { return dtype == FS_INT8 || dtype == FS_INT32 ? 0x7F : 0xFF; }

template <class T>
std::vector<T> draw(std::size_t n, uint64_t seed, bool integers) {
  if constexpr (std::is_same_v<T, int8_t>) return random_ints<T>(n, seed, -128, 127);
  else if constexpr (std::is_same_v<T, int32_t>) return random_ints<T>(n, seed, -1000, 1000);
  else if (integers) return random_ints<T>(n, seed, -2, 2);
  else return random_uniform<T>(n, seed);
}

// The buffer of one matrix: poison everywhere, then rows × cols drawn values at their stored places.
std::vector<unsigned char> make_matrix(const Layout& l, int32_t dtype, uint64_t seed, bool integers) {
  const std::size_t size = element_size(dtype);
  std::vector<unsigned char> bytes(std::size_t(l.elems()) * size, poison_byte(dtype));
  with_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    const auto values = draw<T>(std::size_t(l.rows * l.cols), seed, integers);
    for (int64_t r = 0; r < l.rows; ++r)
      std::memcpy(&bytes[std::size_t(l.at(r, 0)) * size], &values[std::size_t(r * l.cols)],
                  std::size_t(l.cols) * size);
  });
  return bytes;
}

std::vector<double> to_doubles(const std::vector<unsigned char>& bytes, int32_t dtype) {
  std::vector<double> out(bytes.size() / element_size(dtype));
  with_type(dtype, [&](auto zero) {
    using T = decltype(zero);
    for (std::size_t i = 0; i < out.size(); ++i) {
      T x;
      std::memcpy(&x, &bytes[i * sizeof(T)], sizeof(T));
      out[i] = to_double(x);
    }
  });
  return out;
}

// The reference value as C's type holds it: the exact result rounded once.
double round_to(int32_t dtype, double v) {
  switch (dtype) {
    case FS_FP16: return to_double(__float2half_rn(static_cast<float>(v)));
    case FS_BF16: return to_double(__float2bfloat16_rn(static_cast<float>(v)));
    case FS_FP32: return static_cast<double>(static_cast<float>(v));
    default: return v;
  }
}

// Evenly spaced rows, always including the first and the last.
std::vector<int64_t> pick_rows(int64_t m, int64_t count) {
  std::vector<int64_t> rows;
  if (count < 0) return rows;
  if (count == 0 || count >= m) count = m;
  for (int64_t i = 0; i < count; ++i) rows.push_back(count == 1 ? 0 : i * (m - 1) / (count - 1));
  return rows;
}

}  // namespace

GemmCase gemm_case(int64_t m, int64_t n, int64_t k, DType ab, DType c, bool trans_a, bool trans_b) {
  GemmCase g;
  g.shape.m = m;
  g.shape.n = n;
  g.shape.k = k;
  g.shape.trans_a = trans_a;
  g.shape.trans_b = trans_b;
  g.shape.ab_dtype = static_cast<int32_t>(ab);
  g.shape.c_dtype = static_cast<int32_t>(c);
  g.shape.alpha = 1.0f;
  return g;
}

namespace {

// The stored row each leading dimension must cover, and the leading dimensions a case asks for.
int64_t a_row(const GemmParams& s) { return s.trans_a ? s.m : s.k; }
int64_t b_row(const GemmParams& s) { return s.trans_b ? s.k : s.n; }
int64_t ld_or(int64_t ld, int64_t row) { return ld > 0 ? ld : row; }

}  // namespace

std::string describe(const GemmCase& c) {
  const GemmParams& s = c.shape;
  std::string d = describe(s) + (c.integers ? " integers" : "");
  const int64_t lda = ld_or(s.lda, a_row(s)), ldb = ld_or(s.ldb, b_row(s)), ldc = ld_or(s.ldc, s.n);
  if (lda != a_row(s) || ldb != b_row(s) || ldc != s.n)
    d += " ld=" + std::to_string(lda) + "/" + std::to_string(ldb) + "/" + std::to_string(ldc);
  if (c.shift) d += " shift=" + std::to_string(c.shift);
  return d;
}

bool gemm_passed(const GemmCase& g, const GemmCheck& c) {
  if (c.status != Status::Success || !c.outside_untouched || c.c.nonfinite != 0) return false;
  const bool exact = g.integers || g.shape.ab_dtype == FS_INT8;
  return exact ? c.c.mismatches == 0 : within(c.c, sgemm_tolerance(g.shape.k));
}

struct GemmFixture::Impl {
  Layout la, lb, lc;
  std::vector<unsigned char> c_init;  // C's buffer as every run must find it
  DeviceBuffer<unsigned char> a, b, c;
  std::vector<int64_t> rows;          // checked rows of C
  std::vector<double> ref;            // (rows, N): the reference, rounded to C's type
};

GemmFixture::GemmFixture(const GemmCase& g, uint64_t seed, int64_t check_rows)
    : case_(g), impl_(std::make_unique<Impl>()) {
  const GemmParams& s = g.shape;
  Impl& m = *impl_;
  m.la = {s.trans_a ? s.k : s.m, a_row(s), ld_or(s.lda, a_row(s)), g.shift};
  m.lb = {s.trans_b ? s.n : s.k, b_row(s), ld_or(s.ldb, b_row(s)), g.shift};
  m.lc = {s.m, s.n, ld_or(s.ldc, s.n), g.shift};
  const auto ha = make_matrix(m.la, s.ab_dtype, seed, g.integers);
  const auto hb = make_matrix(m.lb, s.ab_dtype, seed + 1, g.integers);
  if (s.beta != 0.0f) {
    m.c_init = make_matrix(m.lc, s.c_dtype, seed + 2, g.integers);
  } else {
    m.c_init.assign(std::size_t(m.lc.elems()) * element_size(s.c_dtype), poison_byte(s.c_dtype));
  }
  m.a = DeviceBuffer<unsigned char>(ha);
  m.b = DeviceBuffer<unsigned char>(hb);
  m.c = DeviceBuffer<unsigned char>(m.c_init.size());

  m.rows = pick_rows(s.m, check_rows);
  if (m.rows.empty()) return;
  const auto a = to_doubles(ha, s.ab_dtype), b = to_doubles(hb, s.ab_dtype), c0 = to_doubles(m.c_init, s.c_dtype);
  m.ref.resize(m.rows.size() * std::size_t(s.n));
  // The fp64 reference is the slow part: the checked rows are split among threads, each running
  // ref::gemm on its rows of op(A) (gathered into an untransposed block) against all of op(B).
  parallel_for(m.rows.size(), [&](std::size_t first, std::size_t last) {
    const std::size_t count = last - first;
    std::vector<double> a_rows(count * std::size_t(s.k)), c_rows(count * std::size_t(s.n));
    for (std::size_t r = 0; r < count; ++r) {
      const int64_t i = m.rows[first + r];
      for (int64_t p = 0; p < s.k; ++p) a_rows[r * s.k + p] = a[m.la.at(s.trans_a ? p : i, s.trans_a ? i : p)];
      for (int64_t j = 0; j < s.n; ++j) c_rows[r * s.n + j] = c0[m.lc.at(i, j)];
    }
    ref::gemm(false, s.trans_b, int64_t(count), s.n, s.k, s.alpha, a_rows.data(), s.k, b.data() + m.lb.shift,
              m.lb.ld, s.beta, c_rows.data(), s.n);
    for (std::size_t e = 0; e < c_rows.size(); ++e) m.ref[first * s.n + e] = round_to(s.c_dtype, c_rows[e]);
  });
}

GemmFixture::~GemmFixture() = default;

GemmParams GemmFixture::params() const {
  const Impl& m = *impl_;
  const std::size_t in = element_size(case_.shape.ab_dtype), out = element_size(case_.shape.c_dtype);
  GemmParams p = case_.shape;
  p.a = m.a.get() + case_.shift * in;
  p.lda = m.la.ld;
  p.b = m.b.get() + case_.shift * in;
  p.ldb = m.lb.ld;
  p.c = m.c.get() + case_.shift * out;
  p.ldc = m.lc.ld;
  return p;
}

void GemmFixture::reset_c() { impl_->c.upload(impl_->c_init); }

GemmCheck GemmFixture::compare() const {
  const Impl& m = *impl_;
  const GemmParams& s = case_.shape;
  auto out = m.c.download();
  const std::size_t size = element_size(s.c_dtype);
  GemmCheck result;
  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    const int64_t i = m.rows[r];
    with_type(s.c_dtype, [&](auto zero) {
      using T = decltype(zero);
      for (int64_t j = 0; j < s.n; ++j) {
        T x;
        std::memcpy(&x, &out[std::size_t(m.lc.at(i, j)) * size], sizeof(T));
        result.c.add(to_double(x), m.ref[r * s.n + j]);
      }
    });
  }
  result.rows_checked = int64_t(m.rows.size());

  // Outside the result: put the M×N elements back to their initial bytes; the rest must already be.
  for (int64_t i = 0; i < s.m; ++i) {
    const std::size_t first = std::size_t(m.lc.at(i, 0)) * size;
    std::memcpy(&out[first], &m.c_init[first], std::size_t(s.n) * size);
  }
  result.outside_untouched = out == m.c_init;
  return result;
}

GemmCheck GemmFixture::run(const std::function<Status(const GemmParams&)>& launch_fn) {
  reset_c();
  const Status st = launch_fn(params());
  if (st != Status::Success) {
    GemmCheck failed;
    failed.status = st;
    return failed;
  }
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  return compare();
}

GemmCheck GemmFixture::run(const KernelDesc& kernel) {
  return run([&](const GemmParams& p) { return launch(kernel, p, nullptr); });
}

bool GemmFixture::untouched_after(const KernelDesc& kernel, const GemmParams& bad, Status* returned) {
  reset_c();
  *returned = launch(kernel, bad, nullptr);
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  return impl_->c.download() == impl_->c_init;
}

}  // namespace fs
