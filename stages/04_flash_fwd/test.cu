// Stage 04 tests: every version, fp16 and bf16, every head_dim it takes, against fp64 at odd sizes
// (tails in both tile directions, Nq ≠ Nk, causal aligned bottom-right) with the error at most 2× the
// naive stage's in the same precision, LSE included; grouped-query and multi-query K/V, and decoding
// (Nq = 1 against up to 16384 keys); custom scales; padded (seq_lens) and packed
// (cu_seqlens) batches against a per-entry reference, and entries that break the rules left unwritten;
// every v5 candidate shape; v6 with forced split counts (several slices with tails, slices that see
// no key of some rows, Nq = 1 against thousands of keys) and its split heuristic; strided layouts
// ([B, N, H, D], packed QKV slices) in v4, v5 and v6, the bytes outside O's view untouched; error paths. The versions, their head_dims and the naive baseline come
// from the library's registry.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/lib/numeric.h"
#include "common/tools/attention_tests.h"
#include "common/tools/device_buffer.h"
#include "versions.h"

using namespace fs;

namespace {

const KernelDesc& naive() { return *find_kernels("stage01/v1").at(0); }

std::vector<int64_t> head_dims(const KernelDesc& k) {
  return std::vector<int64_t>(k.info.head_dims, k.info.head_dims + k.info.num_head_dims);
}

// Odd shapes in both dtypes at one head_dim, each against fp64 and the naive stage.
void check_odd_shapes(const KernelDesc& kernel, int64_t d, uint64_t seed) {
  for (DType t : {DType::FP16, DType::BF16})
    for (const auto& shape : testing::odd_shapes(t, {d}))
      testing::check_against_reference(kernel, shape, ++seed, &naive());
}

// v5's candidate shapes as kernels of their own, so that each one is checked whatever the tuner picks.
template <int I>
Status run_candidate(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_flash_fwd_v5_candidate(pr.p, I, stream);
}
KernelDesc candidate_kernel(AttentionRun run) { return kernel_with_run(kFlashFwdV5, run); }
const KernelDesc kCandidates[] = {candidate_kernel(run_candidate<0>), candidate_kernel(run_candidate<1>),
                                  candidate_kernel(run_candidate<2>), candidate_kernel(run_candidate<3>),
                                  candidate_kernel(run_candidate<4>), candidate_kernel(run_candidate<5>)};

// v6 with a forced plan (v5's tile shape `tile`, `splits` splits) as a kernel of its own.
template <int kTile, int kSplits>
Status run_forced_plan(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_flash_fwd_v6_plan(pr.p, kTile, kSplits, stream);
}
KernelDesc forced_plan_kernel(AttentionRun run) { return kernel_with_run(kFlashFwdV6, run); }

}  // namespace

namespace {

// One problem per shape (its fp64 reference built once), every version that takes its head_dim on it,
// in one dtype: a test case per dtype, so that ctest runs them side by side (together 275 s on the H200).
void check_odd_sizes(DType t, uint64_t seed0) {
  const std::vector<const KernelDesc*> here = testing::runnable_here(find_kernels("stage04"));
  for (int64_t d : testing::listed_head_dims(here)) {
    uint64_t seed = seed0 + 100 * uint64_t(d);
    for (const auto& shape : testing::odd_shapes(t, {d}))
      testing::check_each_against_reference(testing::taking_head_dim(here, d), shape, ++seed, &naive());
  }
}

}  // namespace

FS_GPU_TEST_CASE("stage04 every version matches fp64 at odd sizes in every head_dim it takes in fp16") {
  FS_SKIP_WITHOUT_GPU();
  check_odd_sizes(DType::FP16, 4000);
}

FS_GPU_TEST_CASE("stage04 every version matches fp64 at odd sizes in every head_dim it takes in bf16") {
  FS_SKIP_WITHOUT_GPU();
  check_odd_sizes(DType::BF16, 4050);
}

FS_GPU_TEST_CASE("stage04 every version: grouped-query and multi-query K/V — and decoding (Nq = 1)") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 5500;
  // Under the sanitizer fp16 alone: the address arithmetic does not depend on the type, and racecheck
  // over this binary already takes minutes.
  const std::vector<DType> dtypes = testing::choices_for_run<DType>({DType::FP16, DType::BF16}, DType::FP16);
  const std::vector<const KernelDesc*> here = testing::runnable_here(find_kernels("stage04"));
  for (int64_t d : testing::listed_head_dims(here))  // one problem per shape, every version that takes d on it
    for (DType t : dtypes)
      for (const auto& shape : testing::gqa_shapes(t, {d}))
        testing::check_each_against_reference(testing::taking_head_dim(here, d), shape, ++seed, &naive());
  // Padded and packed batches with 4 query heads over 2 K/V heads, and over 1, at every head_dim the
  // version takes (D = 64 alone under the sanitizer).
  for (const KernelDesc* k : here)
    for (int64_t d : testing::choices_for_run(head_dims(*k), int64_t{64}))
      testing::check_varlen_grouped(*k, d, seed += 10);
}

FS_GPU_TEST_CASE("stage04 every version honours a custom scale over many key blocks") {
  FS_SKIP_WITHOUT_GPU();
  // Scale 2 makes the running max move often (the rescaling must be exact); a negative scale turns the
  // row maximum into the minimum of Q Kᵀ (a kernel that takes max(S) before scaling gets it wrong).
  for (const KernelDesc* k : find_kernels("stage04")) {
    if (!testing::runs_here(*k)) continue;
    testing::check_against_reference(*k, attention_shape(1, 2, 300, 1500, 64, DType::FP16, true, 2.0f), 5000, &naive());
    testing::check_against_reference(*k, attention_shape(2, 1, 129, 1000, 128, DType::BF16, false, -0.4f), 5001,
                                     &naive());
  }
}

FS_GPU_TEST_CASE("stage04 every version handles padded and packed variable lengths") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 6000;
  for (const KernelDesc* k : find_kernels("stage04")) {
    if (!testing::runs_here(*k)) continue;
    for (int64_t d : head_dims(*k)) {
      testing::check_varlen_layouts(*k, d, seed);
      seed += 10;
    }
  }
}

FS_GPU_TEST_CASE("stage04 lengths that break the rules: fs_check_varlen names them — the kernels skip those entries") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : find_kernels("stage04")) {
    if (!testing::runs_here(*k)) continue;
    testing::check_bad_layouts(*k);
  }
}

FS_GPU_TEST_CASE("stage04 v5 every candidate tile shape matches fp64") {
  FS_SKIP_WITHOUT_GPU();
  for (int64_t d : head_dims(kFlashFwdV5)) {
    const int n = flash_fwd_v5_num_candidates(d);
    REQUIRE(n >= 1);
    REQUIRE(n <= int(std::size(kCandidates)));
    for (int i = 0; i < n; ++i) {
      INFO("D=", d, " candidate ", i, ": ", flash_fwd_v5_candidate_name(d, i));
      if (!flash_fwd_v5_candidate_runs_here(d, i)) {
        MESSAGE("not on this GPU (shared memory): " << flash_fwd_v5_candidate_name(d, i));
        continue;
      }
      check_odd_shapes(kCandidates[i], d, 7000 + 100 * i + d);
      testing::check_varlen_layouts(kCandidates[i], d, 8000 + 100 * i + d);
    }
  }
}

FS_GPU_TEST_CASE("stage04 v5 tunes once per head_dim and mask and remembers the choice") {
  FS_SKIP_WITHOUT_GPU();
  for (int64_t d : head_dims(kFlashFwdV5))
    for (bool causal : {false, true}) {
      const int first = flash_fwd_v5_choice(d, DType::FP16, causal, nullptr);
      INFO("D=", d, " causal=", causal, " → ", flash_fwd_v5_candidate_name(d, first));
      CHECK(first >= 0);
      CHECK(first < flash_fwd_v5_num_candidates(d));
      CHECK(flash_fwd_v5_choice(d, DType::FP16, causal, nullptr) == first);
      MESSAGE("v5 picks " << flash_fwd_v5_candidate_name(d, first) << " for D=" << d
                          << std::string(causal ? " causal" : ""));
    }
  CHECK(flash_fwd_v5_num_candidates(48) == 0);
  CHECK(flash_fwd_v5_choice(48, DType::FP16, false, nullptr) == -1);
  CHECK(flash_fwd_v5_choice(64, DType::FP32, false, nullptr) == -1);
}

namespace {

// One forced plan of v6 against fp64: the odd shapes, decoding, long slices, varlen and GQA decoding.
// Each plan is its own test case (together they take minutes: every shape runs the fp64 reference),
// so that CTest runs them side by side and a sanitizer's timeout names the plan.
void check_forced_plan(const KernelDesc& k, uint64_t seed) {
  for (int64_t d : head_dims(kFlashFwdV6)) {
    check_odd_shapes(k, d, seed += 10);
    // Nq = 1 against 5000 keys (decoding), Nq = 100 against 20000 (313 key blocks of 64 in the
    // splits, the last one short), Nq > Nk without the mask; bf16 with a negative scale.
    for (bool causal : {false, true}) {
      testing::check_against_reference(k, attention_shape(2, 3, 1, 5000, d, DType::FP16, causal), ++seed, &naive());
      testing::check_against_reference(k, attention_shape(1, 2, 100, 20000, d, DType::FP16, causal), ++seed,
                                       &naive());
      testing::check_against_reference(k, attention_shape(1, 2, 100, 20000, d, DType::BF16, causal, -0.3f), ++seed,
                                       &naive());
    }
    testing::check_against_reference(k, attention_shape(1, 2, 1000, 300, d, DType::BF16, false), ++seed, &naive());
    testing::check_varlen_layouts(k, d, seed += 10);
    // Decoding with grouped-query and multi-query K/V: every split of a head reads its group's K/V head.
    for (const auto& shape : testing::gqa_shapes(DType::FP16, {d}))
      if (shape.seq_q == 1) testing::check_against_reference(k, shape, ++seed, &naive());
  }
}

}  // namespace

// Tile 0 is v4's shape (Br = 64), tile 1 one with Br = 128. 2 splits: the common case; 7: slices of
// uneven length, and causal tiles with fewer key blocks than splits (empty slices); 16: the most the
// launcher chooses; 1: the split path with a single slice.
FS_GPU_TEST_CASE("stage04 v6 forced to 2 splits of Br = 64 tiles matches fp64") {
  FS_SKIP_WITHOUT_GPU();
  check_forced_plan(forced_plan_kernel(run_forced_plan<0, 2>), 9100);
}

FS_GPU_TEST_CASE("stage04 v6 forced to 7 splits of Br = 64 tiles matches fp64: uneven and empty slices") {
  FS_SKIP_WITHOUT_GPU();
  check_forced_plan(forced_plan_kernel(run_forced_plan<0, 7>), 9300);
}

FS_GPU_TEST_CASE("stage04 v6 forced to 16 splits of Br = 128 tiles matches fp64: fully masked slices") {
  FS_SKIP_WITHOUT_GPU();
  check_forced_plan(forced_plan_kernel(run_forced_plan<1, 16>), 9500);
}

FS_GPU_TEST_CASE("stage04 v6 forced to 1 split of Br = 128 tiles matches fp64") {
  FS_SKIP_WITHOUT_GPU();
  check_forced_plan(forced_plan_kernel(run_forced_plan<1, 1>), 9700);
}

FS_GPU_TEST_CASE("stage04 v6 with forced split counts skips entries whose lengths break the rules") {
  FS_SKIP_WITHOUT_GPU();
  testing::check_bad_layouts(forced_plan_kernel(run_forced_plan<0, 3>));
}

FS_GPU_TEST_CASE("stage04 v6 refuses a plan it does not have — before any launch") {
  FS_SKIP_WITHOUT_GPU();
  for (const auto& plan : {std::pair{-1, 2}, std::pair{99, 2}, std::pair{0, 0}, std::pair{0, 70000}}) {
    const int tile = plan.first, splits = plan.second;
    INFO("tile ", tile, " splits ", splits);
    DeviceBuffer<__half> q(64 * 17), o(64 * 17);
    o.poison();
    AttentionParams p = attention_shape(1, 1, 17, 17, 64, DType::FP16);
    p.q = p.k = p.v = q.get();
    p.o = o.get();
    CHECK(launch_flash_fwd_v6_plan(p, tile, splits, nullptr) == Status::InvalidSize);
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    const auto out = o.download();
    CHECK(std::all_of(out.begin(), out.end(), [](__half x) { return std::isnan(to_float(x)); }));
  }
}

// The strided layouts (fs_attention_params' strides): [B, N, H, D] and Q, K, V slices of a packed QKV
// tensor with O's rows padded, at odd sizes, causal, grouped-query and decoding, every head_dim, in
// v4's kernel (v4, v5: its tuned shape and every candidate) and v6 (its plan, and forced splits, whose
// merge writes O through its strides).
FS_GPU_TEST_CASE("stage04 v4 v5 and v6 take strided layouts (B N H D and packed QKV) and write only O's view") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 9900;
  for (const KernelDesc* k : find_kernels("stage04")) {
    if (!k->attention.strided || !testing::runs_here(*k)) continue;
    // Both 16-bit types at every head_dim (one type per head_dim under the sanitizer).
    for (int64_t d : head_dims(*k))
      for (DType t : testing::choices_for_run<DType>({DType::FP16, DType::BF16}, d == 128 ? DType::BF16 : DType::FP16))
        for (const auto& shape : testing::strided_shapes(t, d))
          testing::check_strided_layouts(*k, shape, ++seed, &naive());
    // Padded and packed batches laid out by position ([B, N, H, D], [total, H, D]).
    for (int64_t d : testing::choices_for_run(head_dims(*k), int64_t{64}))
      testing::check_varlen_by_position(*k, d, seed += 10);
  }
  for (int i = 0; i < flash_fwd_v5_num_candidates(128) && i < int(std::size(kCandidates)); ++i)
    if (flash_fwd_v5_candidate_runs_here(128, i))
      for (const auto& shape : testing::strided_shapes(DType::FP16, 128))
        testing::check_strided_layouts(kCandidates[i], shape, ++seed, &naive());
  for (const KernelDesc& k : {forced_plan_kernel(run_forced_plan<0, 7>), forced_plan_kernel(run_forced_plan<1, 2>)})
    if (testing::runs_here(k))
      for (int64_t d : {64, 256})
        for (const auto& shape : testing::strided_shapes(DType::FP16, d))
          testing::check_strided_layouts(k, shape, ++seed, &naive());
}

FS_GPU_TEST_CASE("stage04 every version rejects bad inputs and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  const AttentionParams ok = attention_shape(2, 2, 17, 40, 64, DType::FP16);
  DeviceBuffer<int32_t> lens(std::vector<int32_t>{17, 5});
  DeviceBuffer<int32_t> cu_q(std::vector<int32_t>{0, 10, 17});
  DeviceBuffer<int32_t> cu_k(std::vector<int32_t>{0, 5, 40});
  const std::vector<int32_t> host_lens{17, 5};
  for (const KernelDesc* k : find_kernels("stage04")) {
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
    rejected(
        [&](AttentionParams& p) { p.seq_lens = lens.get(), p.cu_seqlens_q = cu_q.get(), p.cu_seqlens_k = cu_k.get(); },
        Status::InvalidSeqLens);
    rejected([&](AttentionParams& p) { p.cu_seqlens_q = cu_q.get(); }, Status::InvalidSeqLens);
    rejected([&](AttentionParams& p) { p.seq_lens = host_lens.data(); }, Status::InvalidSeqLens);
    rejected([&](AttentionParams& p) { p.cu_seqlens_q = cu_q.get(), p.cu_seqlens_k = cu_k.get(), p.max_seq_q = 18; },
             Status::InvalidSeqLens);
    rejected([&](AttentionParams& p) { p.cu_seqlens_q = cu_q.get(), p.cu_seqlens_k = cu_k.get(), p.max_seq_q = -1; },
             Status::InvalidSeqLens);
    // v1 to v3 refuse strides by name; v4 to v6 refuse bad ones.
    testing::check_layout_refusals(*k, ok);
  }
}

FS_GPU_TEST_CASE("stage04 every version reports FS_ERR_CUDA when the runtime refuses the work") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : find_kernels("stage04"))
    testing::check_reports_cuda_error(*k, attention_shape(1, 1, 17, 17, 64, DType::FP16));
}

FS_CPU_TEST_CASE("stage04 through the C interface: named codes before any launch") {
  using Launcher = int (*)(const fs_attention_params*, void*);
  const Launcher launchers[] = {fs_flash_fwd_v1, fs_flash_fwd_v2, fs_flash_fwd_v3,
                                fs_flash_fwd_v4, fs_flash_fwd_v5, fs_flash_fwd_v6};
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
    CHECK(with(launch, [](auto& b) { b.kv_heads = 2; }) == FS_ERR_INVALID_KV_HEADS);  // more than heads = 1
    CHECK(with(launch, [](auto& b) { b.q = reinterpret_cast<const void*>(0x10008); }) == FS_ERR_MISALIGNED_POINTER);
    // Packed batches need cu_seqlens_q and cu_seqlens_k together; checked before any device call.
    CHECK(with(launch, [](auto& b) { b.cu_seqlens_k = reinterpret_cast<const int32_t*>(0x30000); }) ==
          FS_ERR_INVALID_SEQLENS);
  }
  CHECK(fs_check_varlen(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_check_varlen(&p, nullptr) == FS_SUCCESS);  // dense: nothing to check
  fs_attention_params huge = p;
  huge.cu_seqlens_q = huge.cu_seqlens_k = reinterpret_cast<const int32_t*>(0x30000);
  huge.batch = int64_t(1) << 40;  // B + 1 offsets could not even be copied: refused before any read
  CHECK(fs_check_varlen(&huge, nullptr) == FS_ERR_INVALID_SIZE);
  if (testing::missing_gpu()) {
    // Valid arguments reach the runtime, which has no device to give: a named error, not a crash.
    for (Launcher launch : launchers) CHECK(launch(&p, nullptr) == FS_ERR_CUDA);
  } else {
    testing::record_skip();
    MESSAGE("SKIPPED the no-device path: this machine has a GPU (the GPU cases cover FS_ERR_CUDA)");
  }
}
