#include "common/tools/attention_tests.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

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

// ---- Variable-length batches --------------------------------------------------------------------

namespace {

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
    if (!c.packed()) poison_padding(c);
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

  // NaN in every row past lens[b] of every head: the rows a padded batch does not use (none for a
  // length past the padded size, which the kernels refuse on the device).
  void poison_padding(const Varlen& c) {
    const T nan = from_float<T>(std::numeric_limits<float>::quiet_NaN());
    auto fill_rows = [&](std::vector<T>& x, int64_t row0, int64_t used, int64_t rows) {
      std::fill(x.begin() + (row0 + std::min(used, rows)) * c.d, x.begin() + (row0 + rows) * c.d, nan);
    };
    for (int64_t b = 0; b < c.batch; ++b) {
      for (int64_t h = 0; h < c.heads; ++h) fill_rows(hq, c.q_row0(b, h), c.nq(b), c.seq_q);
      for (int64_t kv = 0; kv < c.kvh(); ++kv) {
        const int64_t row0 = (b * c.kvh() + kv) * c.seq_k;
        fill_rows(hk, row0, c.nk(b), c.seq_k);
        fill_rows(hv, row0, c.nk(b), c.seq_k);
      }
    }
  }
};

template <class T>
void check_varlen_batch(const KernelDesc& kernel, const Varlen& c, uint64_t seed) {
  VarlenBuffers<T> buf(c, seed);
  INFO(name(kernel), std::string(c.packed() ? " packed " : " padded "), describe(buf.p), " seed=", seed);
  for (bool tight : {false, true}) {
    if (tight && !c.packed()) break;
    AttentionParams p = buf.p;
    if (tight) REQUIRE(fs::check_varlen(&p, nullptr) == Status::Success);
    buf.o.poison();
    buf.lse.poison();
    const Status st = launch(kernel, p, nullptr);
    REQUIRE_MESSAGE(st == Status::Success, std::string(status_name(st)));
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    const auto out_o = buf.o.download();
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

}  // namespace

void check_varlen_batch(const KernelDesc& kernel, const Varlen& batch, DType dtype, uint64_t seed) {
  REQUIRE((dtype == DType::FP16 || dtype == DType::BF16));
  if (dtype == DType::FP16)
    check_varlen_batch<__half>(kernel, batch, seed);
  else
    check_varlen_batch<__nv_bfloat16>(kernel, batch, seed);
}

void check_varlen_layouts(const KernelDesc& kernel, int64_t d, uint64_t seed) {
  for (bool causal : {false, true})
    for (DType t : {DType::FP16, DType::BF16}) check_varlen_batch(kernel, padded_layout(2, d, causal), t, ++seed);
  check_varlen_batch(kernel, packed_layout(2, d), DType::FP16, ++seed);
  check_varlen_batch(kernel, packed_causal_layout(2, d), DType::BF16, ++seed);
}

void check_varlen_grouped(const KernelDesc& kernel, int64_t d, uint64_t seed) {
  for (int64_t kv_heads : {2, 1}) {
    Varlen padded = padded_layout(4, d, /*causal=*/true), packed = packed_layout(4, d);
    padded.kv_heads = packed.kv_heads = kv_heads;
    check_varlen_batch(kernel, padded, DType::FP16, ++seed);
    check_varlen_batch(kernel, packed, DType::BF16, ++seed);
  }
}

void check_bad_layouts(const KernelDesc& kernel) {
  struct BadLayout {
    const char* what;
    Varlen layout;
    int64_t max_seq_q;          // packed: as given to the launch
    Status named;               // what fs_check_varlen returns
    std::vector<bool> skipped;  // per entry: left unwritten
  };
  // Dense sizes Nq = 17, Nk = 40 for the padded case; totals for the packed ones.
  const Varlen long_lens{2, 2, 64, false, {17, 18}, 17, 40};  // 18 > min(Nq, Nk) = 17
  const Varlen short_total{2, 2, 64, false, {}, 17, 40, {0, 10, 16}, {0, 5, 40}};  // ends before Nq = 17
  const Varlen decreasing{2, 2, 64, false, {}, 17, 40, {0, 20, 17}, {0, 5, 40}};   // 20 > the total, then down
  const Varlen causal_more_q{2, 2, 64, true, {}, 17, 40, {0, 10, 17}, {0, 5, 40}}; // entry 0: 10 queries, 5 keys
  const Varlen too_long{2, 2, 64, false, {}, 17, 40, {0, 10, 17}, {0, 5, 40}};      // entry 0 longer than max_seq_q
  const BadLayout cases[] = {
      {"padded, a length past min(Nq, Nk)", long_lens, 0, Status::InvalidSeqLens, {false, true}},
      {"packed, offsets that end before the total", short_total, 0, Status::InvalidSeqLens, {false, false}},
      {"packed, offsets past the total and decreasing", decreasing, 0, Status::InvalidSeqLens, {true, true}},
      {"packed causal, an entry with more queries than keys", causal_more_q, 0, Status::UnsupportedMask,
       {true, false}},
      {"packed, an entry longer than max_seq_q", too_long, 8, Status::Success, {true, false}},
  };
  for (const BadLayout& bad : cases) {
    INFO(name(kernel), " ", std::string(bad.what));
    const Varlen& c = bad.layout;
    VarlenBuffers<__half> buf(c, 9000);
    AttentionParams p = buf.p;
    p.max_seq_q = bad.max_seq_q;
    AttentionParams checked = p;
    CHECK(fs::check_varlen(&checked, nullptr) == bad.named);
    REQUIRE(launch(kernel, p, nullptr) == Status::Success);
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    const auto out = buf.o.download();
    for (int64_t b = 0; b < c.batch; ++b) {
      // The rows entry b owns, as far as they lie inside O.
      const int64_t first = c.packed() ? std::clamp<int64_t>(c.cu_q[b], 0, c.seq_q) : b * c.heads * c.seq_q;
      const int64_t last =
          c.packed() ? std::clamp<int64_t>(c.cu_q[b + 1], first, c.seq_q) : first + c.heads * c.seq_q;
      int64_t poisoned = 0, rows = 0;
      for (int64_t h = 0; h < (c.packed() ? c.heads : 1); ++h)
        for (int64_t r = first; r < last; ++r, ++rows) {
          const int64_t row = c.packed() ? h * c.seq_q + r : r;
          poisoned += std::isnan(to_float(out[row * c.d]));
        }
      INFO("entry ", b, ": ", poisoned, " of ", rows, " rows unwritten");
      CHECK(poisoned == (bad.skipped[b] ? rows : 0));
    }
  }
}

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
