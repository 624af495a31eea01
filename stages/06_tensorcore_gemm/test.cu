// Stage 06 tests: every version against the fp64 reference at odd sizes (M, N, K from 1, 17, 1000), for
// every transpose pair, with tight and padded leading dimensions; exact on integer inputs for fp16 and
// int8; alpha and beta (a NaN-poisoned C with beta = 0 must not leak through); the element-copy
// fallbacks; and every status code a launcher can return, with C left untouched.
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "cuda_check.h"
#include "gemm.h"
#include "gemm_check.h"
#include "gpu_test.h"

using namespace fs;

namespace {

const GemmKernel* const kSimt[] = {&kGemmV1, &kGemmV2, &kGemmV3, &kGemmV4, &kGemmV5};
const GemmKernel* const kFp16[] = {&kGemmV6, &kGemmV7};
const GemmKernel* const kAll[] = {&kGemmV1, &kGemmV2, &kGemmV3, &kGemmV4, &kGemmV5,
                                  &kGemmV6, &kGemmV7, &kGemmV8};

struct Mnk {
  int64_t m, n, k;
};
// Each of M, N, K takes 1, 17 and 1000, in every pairing; 300×520×200 adds whole interior tiles in
// both directions next to tails, and K = 1000 runs v7/v8's 4-stage pipeline around several times.
const Mnk kOddSizes[] = {{1, 1, 1},       {17, 17, 17},    {1, 17, 1000},    {17, 1000, 1},  {1000, 1, 17},
                         {1000, 17, 1000}, {17, 1000, 1000}, {1000, 1000, 17}, {300, 520, 200}};

// Padding that makes a leading dimension a multiple of 16 elements, and at least 16 more than needed:
// the 16-byte copy paths run, next to tails, and row padding (NaN) is really there to be misread.
int64_t aligned_pad(int64_t row) { return (row + 15) / 16 * 16 + 16 - row; }

GemmShape base_shape(const GemmKernel& k) {
  GemmShape s;
  s.ab_dtype = k.support.ab_dtype;
  s.c_dtype = k.support.ab_dtype == FS_INT8 ? FS_INT32 : FS_FP32;
  s.integers = k.support.ab_dtype != FS_FP32;  // fp16 and int8: exact checks
  return s;
}

void check(const GemmKernel& kernel, const GemmShape& shape, uint64_t seed) {
  INFO(kernel.stage, "/", kernel.version, " ", describe(shape), " seed=", seed);
  GemmProblem problem(shape, seed);
  const GemmCheck c = problem.run(kernel);
  REQUIRE_MESSAGE(c.status == Status::Success, status_name(c.status));
  INFO("C: ", c.c.str(), " mismatches=", c.c.mismatches, " of ", c.c.count);
  CHECK(c.outside_untouched);
  CHECK(c.c.nonfinite == 0);
  if (shape.integers || shape.ab_dtype == FS_INT8) CHECK(c.c.mismatches == 0);
  else CHECK(within(c.c, sgemm_tolerance(shape.k)));
}

// Every odd size, every transpose pair, tight and padded leading dimensions.
void check_odd_sizes(const GemmKernel& kernel, const GemmShape& base, uint64_t seed) {
  for (const Mnk& mnk : kOddSizes)
    for (int t = 0; t < 4; ++t)
      for (bool padded : {false, true}) {
        GemmShape s = base;
        s.m = mnk.m;
        s.n = mnk.n;
        s.k = mnk.k;
        s.trans_a = t & 2;
        s.trans_b = t & 1;
        if (padded) {
          s.pad_a = aligned_pad(s.trans_a ? s.m : s.k);
          s.pad_b = aligned_pad(s.trans_b ? s.k : s.n);
          s.pad_c = 3;
        }
        check(kernel, s, ++seed);
      }
}

// alpha and beta ≠ 0 read C; each value is exact on integer inputs (alpha, beta integers).
void check_alpha_beta(const GemmKernel& kernel, GemmShape s, float alpha, float beta, uint64_t seed) {
  s.alpha = alpha;
  s.beta = beta;
  for (const Mnk& mnk : {Mnk{17, 1000, 17}, Mnk{300, 520, 200}})
    for (int t = 0; t < 4; ++t) {
      s.m = mnk.m;
      s.n = mnk.n;
      s.k = mnk.k;
      s.trans_a = t & 2;
      s.trans_b = t & 1;
      s.pad_c = 5;
      check(kernel, s, ++seed);
    }
}

// A bad input built from a valid 17×17×17 problem returns `expected` and leaves C as it was.
void check_rejected(const GemmKernel& kernel, const GemmShape& ok, const std::function<void(GemmParams&)>& make_bad,
                    Status expected) {
  GemmProblem problem(ok, 1, /*check_rows=*/-1);
  GemmParams bad = problem.params();
  make_bad(bad);
  Status returned = Status::Success;
  const bool untouched = problem.untouched_after(kernel, bad, &returned);
  INFO(kernel.stage, "/", kernel.version, " ", describe(ok), ": expected ", status_name(expected), ", got ",
       status_name(returned));
  CHECK(returned == expected);
  CHECK(untouched);
}

template <class T>
const T* shifted(const void* p, int bytes) {
  return reinterpret_cast<const T*>(static_cast<const char*>(p) + bytes);
}

}  // namespace

FS_CPU_TEST_CASE("stage06 validation returns each named code in order") {
  // Host-only: validation runs before any CUDA call, so fake (aligned, non-null) pointers do.
  GemmParams p{};
  p.m = p.n = p.k = 17;
  p.ab_dtype = p.c_dtype = FS_FP32;
  p.alpha = 1.0f;
  p.a = p.b = p.c = reinterpret_cast<void*>(std::uintptr_t(0x10000));
  p.lda = p.ldb = p.ldc = 17;
  const GemmSupport fp32{FS_FP32, gemm_dtype_bit(FS_FP32)};
  CHECK(validate_gemm(p, fp32) == Status::Success);
  auto with = [&](const std::function<void(GemmParams&)>& change) {
    GemmParams q = p;
    change(q);
    return validate_gemm(q, fp32);
  };
  CHECK(with([](GemmParams& q) { q.b = nullptr; }) == Status::NullPointer);
  CHECK(with([](GemmParams& q) { q.b = nullptr; q.m = 0; }) == Status::NullPointer);  // nulls come first
  CHECK(with([](GemmParams& q) { q.k = -3; }) == Status::InvalidSize);
  CHECK(with([](GemmParams& q) { q.n = 0; q.ldc = 0; }) == Status::InvalidSize);      // sizes before ld
  CHECK(with([](GemmParams& q) { q.trans_a = 1; q.m = 18; }) == Status::InvalidLeadingDim);  // lda < M
  CHECK(with([](GemmParams& q) { q.trans_b = 1; q.ldb = 16; }) == Status::InvalidLeadingDim);  // ldb < K
  CHECK(with([](GemmParams& q) { q.ldc = 16; q.c_dtype = FS_FP16; }) == Status::InvalidLeadingDim);
  CHECK(with([](GemmParams& q) { q.c_dtype = FS_INT32; }) == Status::UnsupportedDtype);
  CHECK(with([](GemmParams& q) { q.c_dtype = -1; }) == Status::UnsupportedDtype);
  CHECK(with([](GemmParams& q) { q.c_dtype = 99; }) == Status::UnsupportedDtype);
  CHECK(with([](GemmParams& q) { q.a = shifted<char>(q.a, 2); }) == Status::MisalignedPointer);
  CHECK(with([](GemmParams& q) { q.c = const_cast<char*>(shifted<char>(q.c, 1)); }) == Status::MisalignedPointer);
  // The C entries reject a null params pointer.
  CHECK(fs_gemm_v1(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v7(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v8(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  // Every version validates before anything else (no GPU is touched on these paths).
  for (const GemmKernel* k : kAll) {
    INFO(k->version);
    GemmParams q = p;
    q.ab_dtype = k->support.ab_dtype;
    q.c_dtype = FS_BF16;  // no version writes bf16
    CHECK(k->launch(q, nullptr) == Status::UnsupportedDtype);
    q.k = 0;
    CHECK(k->launch(q, nullptr) == Status::InvalidSize);
  }
}

FS_GPU_TEST_CASE("stage06 SIMT v1-v5 match fp64 at odd sizes for every transpose") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 6000;
  for (const GemmKernel* k : kSimt) check_odd_sizes(*k, base_shape(*k), seed += 100);
}

FS_GPU_TEST_CASE("stage06 WMMA fp16 v6 v7 are exact on small integers with fp32 and fp16 output") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 7000;
  for (const GemmKernel* k : kFp16)
    for (int32_t c_dtype : {FS_FP32, FS_FP16}) {
      GemmShape s = base_shape(*k);
      s.c_dtype = c_dtype;
      check_odd_sizes(*k, s, seed += 100);
    }
}

FS_GPU_TEST_CASE("stage06 WMMA fp16 v6 v7 stay within the fp32 tolerance on fractional inputs") {
  FS_SKIP_WITHOUT_GPU();
  // fp16 inputs are exact in fp64, products exact in fp32: the error is the fp32 accumulation's.
  uint64_t seed = 7500;
  for (const GemmKernel* k : kFp16)
    for (const Mnk& mnk : {Mnk{1000, 17, 1000}, Mnk{300, 520, 200}}) {
      GemmShape s = base_shape(*k);
      s.integers = false;
      s.m = mnk.m;
      s.n = mnk.n;
      s.k = mnk.k;
      check(*k, s, ++seed);
    }
}

FS_GPU_TEST_CASE("stage06 WMMA int8 v8 is exact over the whole int8 range") {
  FS_SKIP_WITHOUT_GPU();
  check_odd_sizes(kGemmV8, base_shape(kGemmV8), 8000);
}

FS_GPU_TEST_CASE("stage06 alpha and beta read C when beta is not zero") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 9000;
  for (const GemmKernel* k : kSimt) check_alpha_beta(*k, base_shape(*k), 0.75f, -1.25f, seed += 100);
  for (const GemmKernel* k : kFp16) {
    GemmShape s = base_shape(*k);
    check_alpha_beta(*k, s, 2.0f, -3.0f, seed += 100);
    s.c_dtype = FS_FP16;
    check_alpha_beta(*k, s, -1.0f, 2.0f, seed += 100);
  }
  check_alpha_beta(kGemmV8, base_shape(kGemmV8), 3.0f, -2.0f, seed += 100);
  // alpha = 0 keeps beta·C alone.
  for (const GemmKernel* k : kAll) check_alpha_beta(*k, base_shape(*k), 0.0f, 1.0f, seed += 100);
}

FS_GPU_TEST_CASE("stage06 misaligned bases take the element-copy path and stay correct") {
  FS_SKIP_WITHOUT_GPU();
  // Shifting every base by one element breaks 16-byte alignment (v3-v5 float4, v7-v8 cp.async) while
  // keeping element alignment: the kernels must notice and copy element by element.
  uint64_t seed = 9500;
  for (const GemmKernel* k : kAll)
    for (int t = 0; t < 4; ++t) {
      GemmShape s = base_shape(*k);
      s.m = 300;
      s.n = 520;
      s.k = 200;
      s.trans_a = t & 2;
      s.trans_b = t & 1;
      s.shift = 1;
      s.beta = 1.0f;
      check(*k, s, ++seed);
    }
}

FS_GPU_TEST_CASE("stage06 every version rejects bad inputs and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  for (const GemmKernel* k : kAll) {
    GemmShape ok = base_shape(*k);
    ok.m = ok.n = ok.k = 17;
    const auto& K = *k;
    check_rejected(K, ok, [](GemmParams& p) { p.a = nullptr; }, Status::NullPointer);
    check_rejected(K, ok, [](GemmParams& p) { p.b = nullptr; }, Status::NullPointer);
    check_rejected(K, ok, [](GemmParams& p) { p.c = nullptr; }, Status::NullPointer);
    check_rejected(K, ok, [](GemmParams& p) { p.m = 0; }, Status::InvalidSize);
    check_rejected(K, ok, [](GemmParams& p) { p.n = -1; }, Status::InvalidSize);
    check_rejected(K, ok, [](GemmParams& p) { p.k = 0; }, Status::InvalidSize);
    check_rejected(K, ok, [](GemmParams& p) { p.lda = p.k - 1; }, Status::InvalidLeadingDim);
    check_rejected(K, ok, [](GemmParams& p) { p.trans_a = 1; p.m = p.lda + 1; }, Status::InvalidLeadingDim);
    check_rejected(K, ok, [](GemmParams& p) { p.ldb = p.n - 1; }, Status::InvalidLeadingDim);
    check_rejected(K, ok, [](GemmParams& p) { p.trans_a = p.trans_b = 1; p.k = p.ldb + 1; }, Status::InvalidLeadingDim);
    check_rejected(K, ok, [](GemmParams& p) { p.ldc = p.n - 1; }, Status::InvalidLeadingDim);
    check_rejected(K, ok, [](GemmParams& p) { p.ab_dtype = FS_BF16; }, Status::UnsupportedDtype);
    check_rejected(K, ok, [](GemmParams& p) { p.c_dtype = FS_BF16; }, Status::UnsupportedDtype);
    check_rejected(K, ok, [](GemmParams& p) { p.c = static_cast<char*>(p.c) + 1; }, Status::MisalignedPointer);
    if (k->support.ab_dtype != FS_INT8)  // an int8 pointer is always element-aligned
      check_rejected(K, ok, [](GemmParams& p) { p.b = shifted<char>(p.b, 1); }, Status::MisalignedPointer);
  }
}

FS_GPU_TEST_CASE("stage06 every version reports FS_ERR_CUDA when the runtime refuses the work") {
  FS_SKIP_WITHOUT_GPU();
  for (const GemmKernel* k : kAll) {
    GemmShape ok = base_shape(*k);
    ok.m = ok.n = ok.k = 17;
    GemmProblem problem(ok, 1, /*check_rows=*/-1);
    // Work on the legacy default stream would have to wait for a blocking stream that is capturing
    // in global mode (an implicit dependency on the capture): the runtime refuses the launch. (With a
    // non-blocking capturing stream there is no such dependency, and the launch is legal.)
    cudaStream_t capturing;
    FS_CUDA_CHECK(cudaStreamCreateWithFlags(&capturing, cudaStreamDefault));
    FS_CUDA_CHECK(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeGlobal));
    const Status st = k->launch(problem.params(), nullptr);
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(capturing, &graph);  // invalidated by the refused call: an error is expected
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    FS_CUDA_CHECK(cudaStreamDestroy(capturing));
    INFO(k->stage, "/", k->version, " returned ", status_name(st), ": ", last_cuda_error());
    CHECK(st == Status::CudaError);
    FS_CUDA_CHECK(cudaDeviceSynchronize());  // the refusal left no sticky error behind
  }
}
