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
  INFO(name(kernel), " ", describe(shape), " seed=", seed);
  const DType t = dtype_of(shape);
  AttentionBwdFixture problem(shape, seed);
  const AttentionBwdCheck c = problem.run(kernel);
  REQUIRE_MESSAGE(c.status == Status::Success, std::string(status_name(c.status)));
  check_gradients(c, t);
  if (naive && t != DType::FP32) {
    const AttentionBwdCheck n = problem.run(*naive);
    REQUIRE(n.status == Status::Success);
    INFO("naive dQ: ", n.dq.str(), "  dK: ", n.dk.str(), "  dV: ", n.dv.str(), "  delta: ", n.delta.str());
    CHECK(within_naive_budget(c.dq, n.dq));
    CHECK(within_naive_budget(c.dk, n.dk));
    CHECK(within_naive_budget(c.dv, n.dv));
    CHECK(within_naive_budget(c.delta, n.delta));
  }
  {
    INFO("without delta");
    AttentionBwdParams p = problem.params();
    p.delta = nullptr;
    const AttentionBwdCheck without = problem.run(kernel, p);
    REQUIRE(without.status == Status::Success);
    check_gradients(without, t);
  }
  {
    INFO("deterministic");
    AttentionBwdParams p = problem.params();
    p.deterministic = 1;
    const AttentionBwdCheck first = problem.run(kernel, p);
    REQUIRE(first.status == Status::Success);
    check_gradients(first, t);
    const std::vector<unsigned char> dq = problem.dq_bytes();
    const AttentionBwdCheck second = problem.run(kernel, p);
    REQUIRE(second.status == Status::Success);
    CHECK(problem.dq_bytes() == dq);
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
  if (!kernel.attention.varlen) {
    // Device arrays that would be valid: refused because this version takes no variable lengths.
    rejected([](P& p) { p.fwd.seq_lens = static_cast<const int32_t*>(const_cast<void*>(p.d_o)); },
             Status::InvalidSeqLens);
    rejected([](P& p) {
      p.fwd.cu_seqlens_q = p.fwd.cu_seqlens_k = static_cast<const int32_t*>(const_cast<void*>(p.d_o));
    }, Status::InvalidSeqLens);
  }
}

void check_bwd_reports_cuda_error(const KernelDesc& kernel, const AttentionParams& ok) {
  AttentionBwdFixture problem(ok, 1, /*max_heads=*/-1);
  const Status st = launch_while_capturing([&] { return launch(kernel, problem.params(), nullptr); });
  INFO(name(kernel), " returned ", std::string(status_name(st)), ": ", std::string(last_cuda_error()));
  CHECK(st == Status::CudaError);
  FS_CUDA_CHECK(cudaDeviceSynchronize());  // the refusal left no sticky error behind
}

}  // namespace fs::testing
