#include "common/tools/attention_tests.h"

#include <cmath>
#include <limits>

#include "common/lib/cuda_check.h"
#include "common/tools/check.h"

namespace fs::testing {

std::vector<AttentionParams> odd_shapes(DType dtype, const std::vector<int64_t>& dims) {
  struct Sizes {
    int64_t b, h, nq, nk;
  };
  const int64_t n = size_for_run(1000, 200), n_odd = size_for_run(1023, 223);
  const Sizes sizes[] = {{1, 1, 1, 1},     {2, 3, 17, 17},   {1, 2, n, n},
                         {2, 1, 17, 100},  {1, 2, n, n_odd}, {3, 1, 100, 17}};
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
  INFO(name(kernel), " ", describe(shape), " seed=", seed);
  AttentionFixture problem(shape, seed);
  const AttentionCheck c = problem.run(kernel);
  REQUIRE_MESSAGE(c.status == Status::Success, std::string(status_name(c.status)));
  INFO("O: ", c.o.str(), "  LSE: ", c.lse.str());
  CHECK(c.o.nonfinite == 0);
  CHECK(c.lse.nonfinite == 0);
  CHECK(within(c.o, attention_tolerance(dtype_of(shape))));
  CHECK(within(c.lse, lse_tolerance(dtype_of(shape))));
  if (naive && dtype_of(shape) != DType::FP32) {
    const AttentionCheck n = problem.run(*naive);
    REQUIRE(n.status == Status::Success);
    INFO("naive O: ", n.o.str(), "  naive LSE: ", n.lse.str());
    CHECK(within_naive_budget(c.o, n.o));
    CHECK(within_naive_budget(c.lse, n.lse));
  }
}

void check_rejected(const KernelDesc& kernel, const AttentionParams& ok,
                    const std::function<void(AttentionParams&)>& make_bad, Status expected) {
  AttentionFixture problem(ok, 1, /*max_heads=*/-1);
  AttentionParams bad = problem.params();
  make_bad(bad);
  Status returned = Status::Success;
  const bool untouched = problem.untouched_after(kernel, bad, &returned);
  INFO(name(kernel), " expected ", std::string(status_name(expected)), ", got ", std::string(status_name(returned)));
  CHECK(returned == expected);
  CHECK(untouched);
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
  check_rejected(kernel, ok, [](AttentionParams& p) { p.dtype = FS_INT8; }, Status::UnsupportedDtype);
  check_rejected(kernel, ok, [](AttentionParams& p) { p.dtype = 99; }, Status::UnsupportedDtype);
  // B·H·N·D·bytes past 2^63: the product must not wrap into a small, valid-looking size.
  check_rejected(kernel, ok, [](AttentionParams& p) { p.batch = int64_t(1) << 62; }, Status::InvalidSize);
  // No wrap, but more bytes than the GPU has: no pointer can really hold that, whatever it claims.
  check_rejected(kernel, ok, [](AttentionParams& p) { p.batch = int64_t(1) << 36; }, Status::InvalidSize);
}

void check_reports_cuda_error(const KernelDesc& kernel, const AttentionParams& ok) {
  AttentionFixture problem(ok, 1, /*max_heads=*/-1);
  // A blocking stream: work on the legacy default stream would have to wait for it, which a stream
  // under capture cannot allow.
  cudaStream_t capturing;
  FS_CUDA_CHECK(cudaStreamCreate(&capturing));
  FS_CUDA_CHECK(cudaStreamBeginCapture(capturing, cudaStreamCaptureModeGlobal));
  const Status st = launch(kernel, problem.params(), nullptr);
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(capturing, &graph);  // invalidated by the refused call: an error is expected
  if (graph) cudaGraphDestroy(graph);
  cudaGetLastError();
  FS_CUDA_CHECK(cudaStreamDestroy(capturing));
  INFO(name(kernel), " returned ", std::string(status_name(st)), ": ", std::string(last_cuda_error()));
  CHECK(st == Status::CudaError);
  FS_CUDA_CHECK(cudaDeviceSynchronize());  // the refusal left no sticky error behind
}

}  // namespace fs::testing
