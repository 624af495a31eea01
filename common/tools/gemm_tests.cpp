#include "common/tools/gemm_tests.h"

#include <cuda_runtime.h>

#include <string>

#include "common/lib/cuda_check.h"
#include "common/tools/check.h"

namespace fs::testing {

namespace {

template <class T>
const T* shifted(const void* p, int bytes) {
  return reinterpret_cast<const T*>(static_cast<const char*>(p) + bytes);
}

}  // namespace

GemmCase sized(GemmCase g, const Mnk& mnk, int transposes) {
  g.shape.m = mnk.m;
  g.shape.n = mnk.n;
  g.shape.k = mnk.k;
  g.shape.trans_a = transposes & 2;
  g.shape.trans_b = transposes & 1;
  return g;
}

int64_t padded_ld(int64_t row) { return (row + 15) / 16 * 16 + 16; }

void check_gemm(const KernelDesc& kernel, const GemmCase& g, uint64_t seed, int64_t check_rows) {
  INFO(kernel.qualified(), " ", describe(g), " seed=", seed);
  GemmFixture problem(g, seed, check_rows);
  const GemmCheck c = problem.run(kernel);
  REQUIRE_MESSAGE(c.status == Status::Success, std::string(status_name(c.status)));
  INFO("C: ", c.c.str(), " mismatches=", c.c.mismatches, " of ", c.c.count);
  CHECK(c.outside_untouched);
  CHECK(c.c.nonfinite == 0);
  if (g.integers || g.shape.ab_dtype == FS_INT8) CHECK(c.c.mismatches == 0);
  else CHECK(within(c.c, sgemm_tolerance(g.shape.k)));
}

void check_gemm_rejected(const KernelDesc& kernel, const GemmCase& ok, const std::function<void(GemmParams&)>& make_bad,
                         Status expected) {
  GemmFixture problem(ok, 1, /*check_rows=*/-1);
  GemmParams bad = problem.params();
  make_bad(bad);
  Status returned = Status::Success;
  const bool untouched = problem.untouched_after(kernel, bad, &returned);
  INFO(kernel.qualified(), " ", describe(ok), ": expected ", std::string(status_name(expected)), ", got ",
       std::string(status_name(returned)));
  CHECK(returned == expected);
  CHECK(untouched);
}

void check_gemm_rejects_bad_inputs(const KernelDesc& K, const GemmCase& ok) {
  // A dtype the mask lacks: the code a launcher must refuse.
  auto not_in = [](uint32_t mask) {
    for (DType t : kAllDtypes)
      if (!in_set(mask, int32_t(t))) return int32_t(t);
    return int32_t(-1);
  };
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.a = nullptr; }, Status::NullPointer);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.b = nullptr; }, Status::NullPointer);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.c = nullptr; }, Status::NullPointer);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.m = 0; }, Status::InvalidSize);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.n = -1; }, Status::InvalidSize);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.k = 0; }, Status::InvalidSize);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.m = int64_t(1) << 62; }, Status::InvalidSize);  // M·ldc·4 wraps
  // No wrap, but more bytes than the GPU has: no pointer can really hold that, whatever it claims.
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.m = int64_t(1) << 40; }, Status::InvalidSize);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.lda = p.k - 1; }, Status::InvalidLeadingDim);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.trans_a = 1; p.m = p.lda + 1; }, Status::InvalidLeadingDim);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.ldb = p.n - 1; }, Status::InvalidLeadingDim);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.trans_a = p.trans_b = 1; p.k = p.ldb + 1; },
                      Status::InvalidLeadingDim);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.ldc = p.n - 1; }, Status::InvalidLeadingDim);
  const int32_t bad_ab = not_in(K.gemm.ab_dtypes), bad_c = not_in(K.gemm.c_dtypes);
  check_gemm_rejected(K, ok, [=](GemmParams& p) { p.ab_dtype = bad_ab; }, Status::UnsupportedDtype);
  check_gemm_rejected(K, ok, [=](GemmParams& p) { p.c_dtype = bad_c; }, Status::UnsupportedDtype);
  check_gemm_rejected(K, ok, [](GemmParams& p) { p.c = static_cast<char*>(p.c) + 1; }, Status::MisalignedPointer);
  if (ok.shape.ab_dtype != FS_INT8)  // an int8 pointer is always element-aligned
    check_gemm_rejected(K, ok, [](GemmParams& p) { p.b = shifted<char>(p.b, 1); }, Status::MisalignedPointer);
}

void check_gemm_reports_cuda_error(const KernelDesc& kernel, const GemmCase& ok) {
  GemmFixture problem(ok, 1, /*check_rows=*/-1);
  // Work on the legacy default stream would have to wait for a blocking stream that is capturing
  // in global mode (an implicit dependency on the capture): the runtime refuses the launch. (With a
  // non-blocking capturing stream there is no such dependency, and the launch is legal.)
  cudaStream_t capturing;
  FS_CUDA_CHECK(cudaStreamCreateWithFlags(&capturing, cudaStreamDefault));
  FS_CUDA_CHECK(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeGlobal));
  const Status st = launch(kernel, problem.params(), nullptr);
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(capturing, &graph);  // invalidated by the refused call: an error is expected
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  FS_CUDA_CHECK(cudaStreamDestroy(capturing));
  INFO(kernel.qualified(), " returned ", std::string(status_name(st)), ": ", std::string(last_cuda_error()));
  CHECK(st == Status::CudaError);
  FS_CUDA_CHECK(cudaDeviceSynchronize());  // the refusal left no sticky error behind
}

}  // namespace fs::testing
