#include "gemm_check.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "cuda_check.h"
#include "device_buffer.h"
#include "numeric.h"
#include "parallel.h"
#include "random.h"
#include "reference.h"

namespace fs {

namespace {

// Calls f(T{}) with the element type of an fs_dtype.
template <class F>
void with_type(int32_t dtype, F&& f) {
  switch (dtype) {
    case FS_FP32: f(float{}); break;
    case FS_FP16: f(__half{}); break;
    case FS_BF16: f(__nv_bfloat16{}); break;
    case FS_INT8: f(int8_t{}); break;
    case FS_INT32: f(int32_t{}); break;
    default: throw std::invalid_argument("unknown dtype " + std::to_string(dtype));
  }
}

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
  const std::size_t size = gemm_dtype_size(dtype);
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
  std::vector<double> out(bytes.size() / gemm_dtype_size(dtype));
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

std::string describe(const GemmShape& s) {
  std::string d = "M=" + std::to_string(s.m) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k) +
                  (s.trans_a ? " A^T" : "") + (s.trans_b ? " B^T" : "") + " " + gemm_dtype_name(s.ab_dtype) +
                  "->" + gemm_dtype_name(s.c_dtype) + " alpha=" + std::to_string(s.alpha) +
                  " beta=" + std::to_string(s.beta) + (s.integers ? " integers" : "");
  if (s.pad_a || s.pad_b || s.pad_c)
    d += " ld+" + std::to_string(s.pad_a) + "/" + std::to_string(s.pad_b) + "/" + std::to_string(s.pad_c);
  if (s.shift) d += " shift=" + std::to_string(s.shift);
  return d;
}

bool gemm_passed(const GemmShape& s, const GemmCheck& c) {
  if (c.status != Status::Success || !c.outside_untouched || c.c.nonfinite != 0) return false;
  const bool exact = s.integers || s.ab_dtype == FS_INT8;
  return exact ? c.c.mismatches == 0 : within(c.c, sgemm_tolerance(s.k));
}

struct GemmProblem::Impl {
  Layout la, lb, lc;
  std::vector<unsigned char> c_init;  // C's buffer as every run must find it
  DeviceBuffer<unsigned char> a, b, c;
  std::vector<int64_t> rows;          // checked rows of C
  std::vector<double> ref;            // (rows, N): the reference, rounded to C's type
};

GemmProblem::GemmProblem(const GemmShape& s, uint64_t seed, int64_t check_rows)
    : shape_(s), impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.la = {s.trans_a ? s.k : s.m, s.trans_a ? s.m : s.k, (s.trans_a ? s.m : s.k) + s.pad_a, s.shift};
  m.lb = {s.trans_b ? s.n : s.k, s.trans_b ? s.k : s.n, (s.trans_b ? s.k : s.n) + s.pad_b, s.shift};
  m.lc = {s.m, s.n, s.n + s.pad_c, s.shift};
  const auto ha = make_matrix(m.la, s.ab_dtype, seed, s.integers);
  const auto hb = make_matrix(m.lb, s.ab_dtype, seed + 1, s.integers);
  if (s.beta != 0.0f) {
    m.c_init = make_matrix(m.lc, s.c_dtype, seed + 2, s.integers);
  } else {
    m.c_init.assign(std::size_t(m.lc.elems()) * gemm_dtype_size(s.c_dtype), poison_byte(s.c_dtype));
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

GemmProblem::~GemmProblem() = default;

GemmParams GemmProblem::params() const {
  const Impl& m = *impl_;
  const std::size_t in = gemm_dtype_size(shape_.ab_dtype), out = gemm_dtype_size(shape_.c_dtype);
  GemmParams p{};
  p.m = shape_.m;
  p.n = shape_.n;
  p.k = shape_.k;
  p.trans_a = shape_.trans_a;
  p.trans_b = shape_.trans_b;
  p.ab_dtype = shape_.ab_dtype;
  p.c_dtype = shape_.c_dtype;
  p.alpha = shape_.alpha;
  p.beta = shape_.beta;
  p.a = m.a.get() + shape_.shift * in;
  p.lda = m.la.ld;
  p.b = m.b.get() + shape_.shift * in;
  p.ldb = m.lb.ld;
  p.c = m.c.get() + shape_.shift * out;
  p.ldc = m.lc.ld;
  return p;
}

void GemmProblem::reset_c() { impl_->c.upload(impl_->c_init); }

GemmCheck GemmProblem::run(const std::function<Status(const GemmParams&)>& launch) {
  Impl& m = *impl_;
  reset_c();
  GemmCheck result;
  result.status = launch(params());
  if (result.status != Status::Success) return result;
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  auto out = m.c.download();
  const std::size_t size = gemm_dtype_size(shape_.c_dtype);

  for (std::size_t r = 0; r < m.rows.size(); ++r) {
    const int64_t i = m.rows[r];
    with_type(shape_.c_dtype, [&](auto zero) {
      using T = decltype(zero);
      for (int64_t j = 0; j < shape_.n; ++j) {
        T x;
        std::memcpy(&x, &out[std::size_t(m.lc.at(i, j)) * size], sizeof(T));
        result.c.add(to_double(x), m.ref[r * shape_.n + j]);
      }
    });
  }
  result.rows_checked = int64_t(m.rows.size());

  // Outside the result: put the M×N elements back to their initial bytes; the rest must already be.
  for (int64_t i = 0; i < shape_.m; ++i) {
    const std::size_t first = std::size_t(m.lc.at(i, 0)) * size;
    std::memcpy(&out[first], &m.c_init[first], std::size_t(shape_.n) * size);
  }
  result.outside_untouched = out == m.c_init;
  return result;
}

GemmCheck GemmProblem::run(const GemmKernel& kernel) {
  return run([&](const GemmParams& p) { return kernel.launch(p, nullptr); });
}

bool GemmProblem::untouched_after(const GemmKernel& kernel, const GemmParams& bad, Status* returned) {
  reset_c();
  *returned = kernel.launch(bad, nullptr);
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  return impl_->c.download() == impl_->c_init;
}

}  // namespace fs
