// Stage 04 tests: every version, fp16 and bf16, head_dim 32/64/128/256, against fp64 at odd sizes
// (tails in both tile directions, Nq ≠ Nk, causal aligned bottom-right) with the error at most 2× the
// naive stage's in the same precision, LSE included; custom scales; padded (seq_lens) and packed
// (cu_seqlens) batches against a per-entry reference; every v4 candidate shape; error paths.
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "attention_tests.h"
#include "cuda_check.h"
#include "flash_fwd.h"
#include "naive.h"
#include "random.h"
#include "reference.h"

using namespace fs;

namespace {

const AttentionKernel* const kVersions[] = {&kFlashFwdV1, &kFlashFwdV2, &kFlashFwdV3, &kFlashFwdV4};
const std::vector<int64_t> kHeadDims = {32, 64, 128, 256};

// Odd shapes in both dtypes at one head_dim, each against fp64 and the naive stage.
void check_odd_shapes(const AttentionKernel& kernel, int64_t d, uint64_t seed) {
  for (DType t : {DType::FP16, DType::BF16})
    for (const auto& shape : testing::odd_shapes(t, {d})) testing::check_against_reference(kernel, shape, ++seed, &kNaiveV1);
}

// v4's candidate shapes as kernels of their own, so that each one is checked whatever the tuner picks.
template <int I>
Status launch_candidate(const AttentionParams& p, cudaStream_t stream) {
  return launch_flash_fwd_v4_candidate(p, I, stream);
}
AttentionKernel candidate_kernel(Status (*launch)(const AttentionParams&, cudaStream_t)) {
  AttentionKernel k = kFlashFwdV4;
  k.launch = launch;
  return k;
}
const AttentionKernel kCandidates[] = {candidate_kernel(launch_candidate<0>), candidate_kernel(launch_candidate<1>),
                                       candidate_kernel(launch_candidate<2>), candidate_kernel(launch_candidate<3>),
                                       candidate_kernel(launch_candidate<4>), candidate_kernel(launch_candidate<5>)};

// A batch of variable-length sequences. Padded: [B, H, seq_q, D] with lens[b] rows used of each;
// packed: [H, total, D] with entry b at rows cu[b] .. cu[b+1]-1. Inputs random in [-1, 1].
struct Varlen {
  int64_t batch, heads, d;
  bool causal;
  std::vector<int32_t> lens;        // padded: [B]
  int64_t seq_q = 0, seq_k = 0;     // padded: the padded lengths; packed: the totals
  std::vector<int32_t> cu_q, cu_k;  // packed: [B+1]

  bool packed() const { return !cu_q.empty(); }
  // Where (b, h) starts in Q/O (and LSE) and in K/V, and its lengths.
  int64_t q_row0(int64_t b, int64_t h) const { return packed() ? h * seq_q + cu_q[b] : (b * heads + h) * seq_q; }
  int64_t k_row0(int64_t b, int64_t h) const { return packed() ? h * seq_k + cu_k[b] : (b * heads + h) * seq_k; }
  int64_t nq(int64_t b) const { return packed() ? cu_q[b + 1] - cu_q[b] : lens[b]; }
  int64_t nk(int64_t b) const { return packed() ? cu_k[b + 1] - cu_k[b] : lens[b]; }
  int64_t rows(int64_t b) const { return packed() ? nq(b) : seq_q; }  // rows of O written
  int64_t q_total() const { return (packed() ? 1 : batch) * heads * seq_q; }
  int64_t k_total() const { return (packed() ? 1 : batch) * heads * seq_k; }
};

// Runs `kernel` on the batch and checks every row of O and LSE against fp64, entry by entry: rows
// that take part within the dtype's tolerance, the others (padding, or no key at all) exactly O = 0 and
// LSE = -inf.
template <class T>
void check_varlen(const AttentionKernel& kernel, const Varlen& c, uint64_t seed) {
  const DType dtype = std::is_same_v<T, __half> ? DType::FP16 : DType::BF16;
  // doctest prints a char* as a pointer: the message is built as a std::string.
  const std::string what = std::string(kernel.stage) + "/" + kernel.version + (c.packed() ? " packed" : " padded") +
                           " B=" + std::to_string(c.batch) + " H=" + std::to_string(c.heads) + " D=" +
                           std::to_string(c.d) + (c.causal ? " causal " : " ") + dtype_name(dtype) +
                           " seed=" + std::to_string(seed);
  INFO(what);
  const auto hq = random_uniform<T>(c.q_total() * c.d, seed), hk = random_uniform<T>(c.k_total() * c.d, seed + 1),
             hv = random_uniform<T>(c.k_total() * c.d, seed + 2);
  DeviceBuffer<T> q(hq), k(hk), v(hv), o(hq.size());
  DeviceBuffer<float> lse(c.q_total());
  DeviceBuffer<int32_t> lens, cu_q, cu_k;
  // fs_attention_params in declaration order; the variable-length pointers follow below.
  AttentionParams p{c.batch, c.heads, c.seq_q, c.seq_k, c.d, /*scale=*/0.0f, c.causal, static_cast<int32_t>(dtype),
                    q.get(), k.get(), v.get(), o.get(), lse.get()};
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
  const Status st = kernel.launch(p, nullptr);
  REQUIRE_MESSAGE(st == Status::Success, std::string(status_name(st)));
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  const auto out_o = o.download();
  const auto out_lse = lse.download();

  ErrorStats err_o, err_lse;
  int64_t wrong_padding = 0;
  const double scale = 1.0 / std::sqrt(double(c.d));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t nq = c.nq(b), nk = c.nk(b), q0 = c.q_row0(b, h), k0 = c.k_row0(b, h);
      std::vector<double> rq(nq * c.d), rk(nk * c.d), rv(nk * c.d), ro(nq * c.d), rl(nq);
      for (int64_t i = 0; i < nq * c.d; ++i) rq[i] = to_double(hq[q0 * c.d + i]);
      for (int64_t i = 0; i < nk * c.d; ++i) rk[i] = to_double(hk[k0 * c.d + i]), rv[i] = to_double(hv[k0 * c.d + i]);
      const bool has_keys = nk > 0;
      if (has_keys) ref::attention_forward_head(rq.data(), rk.data(), rv.data(), nq, nk, c.d, scale, c.causal, ro.data(), rl.data());
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
  INFO("O: ", err_o.str(), "  LSE: ", err_lse.str(), "  wrong padding values: ", wrong_padding);
  CHECK(err_o.count > 0);
  CHECK(within(err_o, attention_tolerance(dtype)));
  CHECK(within(err_lse, lse_tolerance(dtype)));
  CHECK(wrong_padding == 0);
}

// Padded and packed batches, with and without the causal mask, at head_dim d, in both dtypes.
void check_varlen_layouts(const AttentionKernel& kernel, int64_t d, uint64_t seed) {
  Varlen padded{3, 2, d, false, {200, 0, 77}};
  padded.seq_q = 200;
  padded.seq_k = 230;  // keys past seq_lens[b] exist but must not be read
  // Non-causal: entry 1 has queries but no keys (O = 0, LSE = -inf); causal: no entry has more
  // queries than keys, and one has none at all.
  Varlen packed{3, 2, d, false, {}, 330, 350, {0, 70, 100, 330}, {0, 100, 100, 350}};
  Varlen packed_causal{3, 2, d, true, {}, 300, 400, {0, 70, 70, 300}, {0, 100, 150, 400}};
  for (bool causal : {false, true}) {
    padded.causal = causal;
    check_varlen<__half>(kernel, padded, ++seed);
    check_varlen<__nv_bfloat16>(kernel, padded, ++seed);
  }
  check_varlen<__half>(kernel, packed, ++seed);
  check_varlen<__nv_bfloat16>(kernel, packed_causal, ++seed);
}

}  // namespace

// One test case per version and head_dim, so that CTest can run them side by side.
#define FS_STAGE04_ODD_SHAPES(V, D)                                                         \
  FS_GPU_TEST_CASE("stage04 v" #V " matches fp64 at odd sizes / D=" #D) {                     \
    FS_SKIP_WITHOUT_GPU();                                                                   \
    check_odd_shapes(*kVersions[V - 1], D, 4000 + 100 * V + D);                              \
  }
FS_STAGE04_ODD_SHAPES(1, 32)
FS_STAGE04_ODD_SHAPES(1, 64)
FS_STAGE04_ODD_SHAPES(1, 128)
FS_STAGE04_ODD_SHAPES(1, 256)
FS_STAGE04_ODD_SHAPES(2, 32)
FS_STAGE04_ODD_SHAPES(2, 64)
FS_STAGE04_ODD_SHAPES(2, 128)
FS_STAGE04_ODD_SHAPES(2, 256)
FS_STAGE04_ODD_SHAPES(3, 32)
FS_STAGE04_ODD_SHAPES(3, 64)
FS_STAGE04_ODD_SHAPES(3, 128)
FS_STAGE04_ODD_SHAPES(3, 256)
FS_STAGE04_ODD_SHAPES(4, 32)
FS_STAGE04_ODD_SHAPES(4, 64)
FS_STAGE04_ODD_SHAPES(4, 128)
FS_STAGE04_ODD_SHAPES(4, 256)

FS_GPU_TEST_CASE("stage04 every version honours a custom scale over many key blocks") {
  FS_SKIP_WITHOUT_GPU();
  // Scale 2 makes the running max move often (the rescaling must be exact); a negative scale turns the
  // row maximum into the minimum of Q Kᵀ (a kernel that takes max(S) before scaling gets it wrong).
  for (const AttentionKernel* k : kVersions) {
    testing::check_against_reference(*k, {1, 2, 300, 1500, 64, true, 2.0f, DType::FP16}, 5000, &kNaiveV1);
    testing::check_against_reference(*k, {2, 1, 129, 1000, 128, false, -0.4f, DType::BF16}, 5001, &kNaiveV1);
  }
}

FS_GPU_TEST_CASE("stage04 every version handles padded and packed variable lengths") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 6000;
  for (const AttentionKernel* k : kVersions)
    for (int64_t d : kHeadDims) {
      check_varlen_layouts(*k, d, seed);
      seed += 10;
    }
}

#define FS_STAGE04_V4_CANDIDATES(D)                                                          \
  FS_GPU_TEST_CASE("stage04 v4 every candidate tile shape matches fp64 / D=" #D) {           \
    FS_SKIP_WITHOUT_GPU();                                                                   \
    const int n = flash_fwd_v4_num_candidates(D);                                            \
    REQUIRE(n >= 1);                                                                         \
    REQUIRE(n <= int(std::size(kCandidates)));                                               \
    for (int i = 0; i < n; ++i) {                                                            \
      INFO("candidate ", i, ": ", flash_fwd_v4_candidate_name(D, i));                        \
      if (!flash_fwd_v4_candidate_fits(D, i)) {                                              \
        MESSAGE("not on this GPU (shared memory): " << flash_fwd_v4_candidate_name(D, i));   \
        continue;                                                                            \
      }                                                                                      \
      check_odd_shapes(kCandidates[i], D, 7000 + 100 * i + D);                               \
      check_varlen_layouts(kCandidates[i], D, 8000 + 100 * i + D);                           \
    }                                                                                        \
  }
FS_STAGE04_V4_CANDIDATES(32)
FS_STAGE04_V4_CANDIDATES(64)
FS_STAGE04_V4_CANDIDATES(128)
FS_STAGE04_V4_CANDIDATES(256)

FS_GPU_TEST_CASE("stage04 v4 tunes once per head_dim and mask and remembers the choice") {
  FS_SKIP_WITHOUT_GPU();
  for (int64_t d : kHeadDims)
    for (bool causal : {false, true}) {
      const int first = flash_fwd_v4_choice(d, DType::FP16, causal);
      INFO("D=", d, " causal=", causal, " → ", flash_fwd_v4_candidate_name(d, first));
      CHECK(first >= 0);
      CHECK(first < flash_fwd_v4_num_candidates(d));
      CHECK(flash_fwd_v4_choice(d, DType::FP16, causal) == first);
      MESSAGE("v4 picks " << flash_fwd_v4_candidate_name(d, first) << " for D=" << d << std::string(causal ? " causal" : ""));
    }
  CHECK(flash_fwd_v4_num_candidates(48) == 0);
  CHECK(flash_fwd_v4_choice(48, DType::FP16, false) == -1);
}

FS_GPU_TEST_CASE("stage04 every version rejects bad inputs and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  const AttentionShape ok{2, 2, 17, 40, 64, false, 0.0f, DType::FP16};
  DeviceBuffer<int32_t> lens(std::vector<int32_t>{17, 5});
  DeviceBuffer<int32_t> long_lens(std::vector<int32_t>{17, 18});    // 18 > Nq
  DeviceBuffer<int32_t> cu_q(std::vector<int32_t>{0, 10, 17});
  DeviceBuffer<int32_t> cu_k(std::vector<int32_t>{0, 5, 40});       // entry 0: 10 queries, 5 keys
  DeviceBuffer<int32_t> cu_short(std::vector<int32_t>{0, 10, 16});  // ends before Nq = 17
  DeviceBuffer<int32_t> cu_down(std::vector<int32_t>{0, 20, 17});   // decreasing
  const std::vector<int32_t> host_lens{17, 5};
  for (const AttentionKernel* k : kVersions) {
    testing::check_rejects_bad_inputs(*k, ok);
    auto rejected = [&](const std::function<void(AttentionParams&)>& bad, Status expected) {
      testing::check_rejected(*k, ok, bad, expected);
    };
    rejected([](AttentionParams& p) { p.head_dim = 48; }, Status::UnsupportedHeadDim);
    rejected([](AttentionParams& p) { p.head_dim = 512; }, Status::UnsupportedHeadDim);
    rejected([](AttentionParams& p) { p.dtype = FS_FP32; }, Status::UnsupportedDtype);
    // 8-byte aligned is not enough: cp.async and the vector loads move 16 bytes.
    rejected([](AttentionParams& p) { p.q = static_cast<const char*>(p.q) + 8; }, Status::MisalignedPointer);
    rejected([](AttentionParams& p) { p.o = static_cast<char*>(p.o) + 2; }, Status::MisalignedPointer);
    rejected([&](AttentionParams& p) { p.seq_lens = lens.get(), p.cu_seqlens_q = cu_q.get(), p.cu_seqlens_k = cu_k.get(); },
             Status::InvalidSeqLens);
    rejected([&](AttentionParams& p) { p.cu_seqlens_q = cu_q.get(); }, Status::InvalidSeqLens);
    rejected([&](AttentionParams& p) { p.seq_lens = long_lens.get(); }, Status::InvalidSeqLens);
    rejected([&](AttentionParams& p) { p.seq_lens = host_lens.data(); }, Status::InvalidSeqLens);
    rejected([&](AttentionParams& p) { p.cu_seqlens_q = cu_short.get(), p.cu_seqlens_k = cu_k.get(); },
             Status::InvalidSeqLens);
    rejected([&](AttentionParams& p) { p.cu_seqlens_q = cu_down.get(), p.cu_seqlens_k = cu_k.get(); },
             Status::InvalidSeqLens);
    rejected([&](AttentionParams& p) { p.causal = 1, p.cu_seqlens_q = cu_q.get(), p.cu_seqlens_k = cu_k.get(); },
             Status::UnsupportedMask);
  }
}

FS_GPU_TEST_CASE("stage04 every version reports FS_ERR_CUDA when the runtime refuses the work") {
  FS_SKIP_WITHOUT_GPU();
  for (const AttentionKernel* k : kVersions) testing::check_reports_cuda_error(*k, {1, 1, 17, 17, 64, false, 0.0f, DType::FP16});
}

FS_CPU_TEST_CASE("stage04 through the C interface: named codes before any launch") {
  using Launcher = int (*)(const fs_attention_params*, void*);
  const Launcher launchers[] = {fs_flash_fwd_v1, fs_flash_fwd_v2, fs_flash_fwd_v3, fs_flash_fwd_v4};
  fs_attention_params p{};
  p.batch = p.heads = p.seq_q = p.seq_k = 1;
  p.head_dim = 64;
  p.dtype = FS_FP16;
  p.q = p.k = p.v = reinterpret_cast<const void*>(0x10000);
  p.o = reinterpret_cast<void*>(0x20000);
  auto with = [&](Launcher launch, auto change) {
    fs_attention_params bad = p;
    change(bad);
    return launch(&bad, nullptr);
  };
  for (Launcher launch : launchers) {
    CHECK(launch(nullptr, nullptr) == FS_ERR_NULL_POINTER);
    CHECK(with(launch, [](auto& b) { b.dtype = FS_FP32; }) == FS_ERR_UNSUPPORTED_DTYPE);
    CHECK(with(launch, [](auto& b) { b.head_dim = 80; }) == FS_ERR_UNSUPPORTED_HEAD_DIM);
    CHECK(with(launch, [](auto& b) { b.q = reinterpret_cast<const void*>(0x10008); }) == FS_ERR_MISALIGNED_POINTER);
    // Packed batches need cu_seqlens_q and cu_seqlens_k together; checked before any device call.
    CHECK(with(launch, [](auto& b) { b.cu_seqlens_k = reinterpret_cast<const int32_t*>(0x30000); }) ==
          FS_ERR_INVALID_SEQLENS);
  }
  if (testing::missing_gpu()) {
    // Valid arguments reach the runtime, which has no device to give: a named error, not a crash.
    for (Launcher launch : launchers) CHECK(launch(&p, nullptr) == FS_ERR_CUDA);
  } else {
    testing::record_skip();
    MESSAGE("SKIPPED the no-device path: this machine has a GPU (the GPU cases cover FS_ERR_CUDA)");
  }
}
