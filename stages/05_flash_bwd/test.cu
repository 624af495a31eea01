// Stage 05 tests: every version, every dtype and head_dim it takes, against the fp64 backward at odd
// sizes (N = 1, 17, 1000, tails in both tile directions, Nq ≠ Nk both ways, causal aligned
// bottom-right): dQ, dK, dV and delta, outputs poisoned first, with delta asked for and not, and in
// deterministic mode twice (dQ bitwise the same); grouped K/V heads (GQA, MQA: dK and dV the sums over
// each group, as the fp64 reference sums them); custom and negative scales; logits up to about 1e4
// (no NaN); padded and packed batches for the versions that take them (v2 to v10 and the ablation:
// entries with no query or no key, the padding NaN in every input, exact zeros in every output row
// that takes no part, grouped K/V heads) and lengths that break the rules (those entries written
// nowhere, the others computed); strided layouts through v10 ([B, N, H, D], packed QKV and dQKV
// slices, padded and packed batches by position), the bytes outside the gradients' views untouched;
// every error code the backward can
// return, with nothing written. The
// versions, their head_dims and the naive baseline come from the library's registry, and the delta
// ablation (which it does not list) goes through every case beside them.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "common/tools/attention_tests.h"
#include "common/tools/check.h"
#include "stages/05_flash_bwd/versions.h"

using namespace fs;

namespace {

// The head_dims a version is tested at: its list, or for a version that takes any head_dim up to a
// bound, an odd one, the usual ones and the bound.
std::vector<int64_t> head_dims(const KernelDesc& k) {
  if (k.info.num_head_dims > 0) return std::vector<int64_t>(k.info.head_dims, k.info.head_dims + k.info.num_head_dims);
  return {24, 64, 128, k.info.max_head_dim};
}

std::vector<DType> dtypes(const KernelDesc& k) {
  std::vector<DType> out;
  for (DType t : {DType::FP32, DType::FP16, DType::BF16})
    if (in_set(k.info.in_dtypes, int32_t(t))) out.push_back(t);
  return out;
}

DType first_dtype(const KernelDesc& k) { return dtypes(k).front(); }

// The versions every GPU case checks: the registry's, and the delta ablation (v9 recomputing delta in
// its key loop, which the registry does not list; its seeds are v9's).
std::vector<const KernelDesc*> versions() {
  std::vector<const KernelDesc*> out = find_kernels("stage05");
  out.push_back(&kFlashBwdV9DeltaInLoop);
  return out;
}

// The naive backward every fp16/bf16 version is held to (2× its error); none for v0 itself.
const KernelDesc* naive_for(const KernelDesc& k) { return &k == &kFlashBwdV0 ? nullptr : &kFlashBwdV0; }

// Every head_dim one of `here` is tested at (head_dims: an odd one too where a version takes any), in
// increasing order.
std::vector<int64_t> all_head_dims(const std::vector<const KernelDesc*>& here) {
  std::vector<int64_t> out;
  for (const KernelDesc* k : here)
    for (int64_t d : head_dims(*k))
      if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  std::sort(out.begin(), out.end());
  return out;
}

// One problem of `shape` (its fp64 reference, the slow part on the host, built once), and every version
// of `here` that takes its dtype and for which `at_dim(version)` holds checked on it.
template <class AtDim>
void check_versions_on(const std::vector<const KernelDesc*>& here, const AttentionParams& shape, uint64_t seed,
                       AtDim at_dim) {
  std::vector<const KernelDesc*> takers;
  for (const KernelDesc* k : here) {
    const std::vector<DType> ts = dtypes(*k);
    if (std::find(ts.begin(), ts.end(), dtype_of(shape)) != ts.end() && at_dim(*k)) takers.push_back(k);
  }
  if (takers.empty()) return;
  INFO("seed=", seed);
  AttentionBwdFixture problem(shape, seed);
  for (const KernelDesc* k : takers) testing::check_bwd_against_reference(*k, problem, naive_for(*k));
}

// The odd sizes of one dtype: every head_dim, one problem per shape, every version that takes it on it.
// One test case per dtype, so that ctest runs the three side by side (together they took 390 s on the
// H200, the fp64 references on the CPU).
void check_odd_sizes(DType t, uint64_t seed) {
  const std::vector<const KernelDesc*> here = testing::runnable_here(versions());
  for (int64_t d : all_head_dims(here))
    for (const auto& shape : testing::odd_shapes(t, {d}))
      check_versions_on(here, shape, ++seed, [&](const KernelDesc& k) {
        const std::vector<int64_t> dims = head_dims(k);
        return std::find(dims.begin(), dims.end(), d) != dims.end();
      });
}

// The forward's grouped shapes (G = 2, 4 and 6; MQA with KVH = 1; odd sizes, B > 1, Nq ≠ Nk, decoding
// against long Nk, causal and not), and one with more queries than keys, in one dtype. Each checked K/V
// head's dK and dV against the fp64 sum over its group, every query head's dQ and delta against its own;
// the 2× rule against v0 and the deterministic path as for the dense shapes. The smallest and the largest
// head_dim of each version, every version on one problem per shape. One test case per dtype, as above
// (together 633 s on the H200).
void check_grouped(DType t, uint64_t seed) {
  const std::vector<const KernelDesc*> here = testing::runnable_here(versions());
  for (int64_t d : all_head_dims(here)) {
    auto at_an_end = [&](const KernelDesc& k) { return head_dims(k).front() == d || head_dims(k).back() == d; };
    for (const auto& shape : testing::gqa_shapes(t, {d})) check_versions_on(here, shape, ++seed, at_an_end);
    AttentionParams more_queries = attention_shape(2, 4, 100, 17, d, t);
    more_queries.kv_heads = 1;
    check_versions_on(here, more_queries, ++seed, [&](const KernelDesc& k) { return head_dims(k).front() == d; });
  }
}

}  // namespace

FS_GPU_TEST_CASE("stage05 every version matches fp64 at odd sizes in every head_dim it takes in fp32") {
  FS_SKIP_WITHOUT_GPU();
  check_odd_sizes(DType::FP32, 50000);
}

FS_GPU_TEST_CASE("stage05 every version matches fp64 at odd sizes in every head_dim it takes in fp16") {
  FS_SKIP_WITHOUT_GPU();
  check_odd_sizes(DType::FP16, 51000);
}

FS_GPU_TEST_CASE("stage05 every version matches fp64 at odd sizes in every head_dim it takes in bf16") {
  FS_SKIP_WITHOUT_GPU();
  check_odd_sizes(DType::BF16, 52000);
}

FS_GPU_TEST_CASE("stage05 every version matches fp64 with grouped K/V heads (GQA and MQA) in fp32") {
  FS_SKIP_WITHOUT_GPU();
  check_grouped(DType::FP32, 150000);
}

FS_GPU_TEST_CASE("stage05 every version matches fp64 with grouped K/V heads (GQA and MQA) in fp16") {
  FS_SKIP_WITHOUT_GPU();
  check_grouped(DType::FP16, 151000);
}

FS_GPU_TEST_CASE("stage05 every version matches fp64 with grouped K/V heads (GQA and MQA) in bf16") {
  FS_SKIP_WITHOUT_GPU();
  check_grouped(DType::BF16, 152000);
}

FS_GPU_TEST_CASE("stage05 every version honours a custom scale — negative too") {
  FS_SKIP_WITHOUT_GPU();
  // Scale 2 makes P peaked (large dS on few keys); a negative scale reverses the order of the scores,
  // which a backward that recomputes P from LSE must take as it comes.
  for (const KernelDesc* k : versions()) {
    if (!testing::runs_here(*k)) continue;
    for (DType t : dtypes(*k)) {
      testing::check_bwd_against_reference(*k, attention_shape(1, 2, 300, 1500, 64, t, true, 2.0f), 59000,
                                           naive_for(*k));
      testing::check_bwd_against_reference(*k, attention_shape(2, 1, 129, 1000, 128, t, false, -0.4f), 59001,
                                           naive_for(*k));
    }
  }
}

FS_GPU_TEST_CASE("stage05 every version gives finite gradients for logits up to about 1e4") {
  FS_SKIP_WITHOUT_GPU();
  // D = 64, inputs in [-1, 1]: the largest |q·k| of 100 × 300 pairs is about 11, so |scale · S| reaches
  // about 1e4 at scale ±900. exp(scale · S - LSE) must stay at most 1, never inf - inf.
  for (const KernelDesc* k : versions()) {
    if (!testing::runs_here(*k)) continue;
    for (DType t : dtypes(*k))
      for (float scale : {900.0f, -900.0f})
        for (bool causal : {false, true})
          testing::check_bwd_extreme_logits(*k, attention_shape(1, 2, 100, 300, 64, t, causal, scale), 59100);
  }
}

FS_GPU_TEST_CASE("stage05 every version that takes variable lengths matches fp64 on padded and packed batches") {
  FS_SKIP_WITHOUT_GPU();
  // The forward's layouts, now with dO, O and LSE as inputs: padded entries of 200, 0 and 77 rows (every
  // input NaN past each length), packed entries with no key (dQ = 0) or, causal, no query (dK = dV = 0), at
  // every head_dim; grouped K/V heads (dK, dV the sums over each group) too (under the sanitizer at the
  // smallest alone). Each with delta and without, and deterministic twice; packed ones with max_seq_q,
  // max_seq_k unknown and computed.
  for (const KernelDesc* k : versions()) {
    if (!k->attention.varlen || !testing::runs_here(*k)) continue;
    uint64_t seed = 250000 + 10000 * uint64_t(k->info.version[1] - '0');
    const std::vector<int64_t> dims = head_dims(*k);
    for (int64_t d : dims) testing::check_bwd_varlen_layouts(*k, d, seed += 10);
    for (int64_t d : testing::choices_for_run(dims, dims.front()))
      testing::check_bwd_varlen_grouped(*k, d, seed += 10);  // every head_dim (the smallest under the sanitizer)
  }
}

FS_GPU_TEST_CASE("stage05 lengths that break the rules: the backward skips those entries") {
  FS_SKIP_WITHOUT_GPU();
  // The forward's bad layouts and the backward's own (an entry with more keys than max_seq_k): no row of
  // dQ or dK written for an entry that breaks a rule, every row for the others.
  for (const KernelDesc* k : versions())
    if (k->attention.varlen && testing::runs_here(*k)) testing::check_bwd_bad_layouts(*k);
}

// The strided layouts (fs_attention_params' strides) through v10, the version that takes them: [B, N,
// H, D] for every tensor, and Q, K, V slices of one packed QKV tensor with dQ, dK, dV slices of another
// (interleaved outputs that share no element) and O, dO rows padded; odd sizes, causal, grouped-query,
// decoding, both head_dims, fp16 and bf16; with delta, without, and deterministic (the deterministic
// pair and the preprocess take the strides too).
FS_GPU_TEST_CASE("stage05 v10 takes strided layouts (B N H D and packed QKV) and writes only the gradients' views") {
  FS_SKIP_WITHOUT_GPU();
  const KernelDesc& v10 = kFlashBwdV10;
  if (!testing::runs_here(v10)) return;
  uint64_t seed = 190000;
  for (DType t : dtypes(v10))
    for (int64_t d : head_dims(v10))
      for (const auto& shape : testing::strided_shapes(t, d)) testing::check_bwd_strided_layouts(v10, shape, ++seed);
  // Padded and packed batches laid out by position ([B, N, H, D], [total, H, D]).
  for (int64_t d : head_dims(v10)) testing::check_bwd_varlen_by_position(v10, d, seed += 10);
}

FS_GPU_TEST_CASE("stage05 every version rejects bad inputs and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  using P = AttentionBwdParams;
  for (const KernelDesc* k : versions()) {
    const AttentionParams ok = attention_shape(2, 2, 17, 40, 64, first_dtype(*k));
    testing::check_bwd_rejects_bad_inputs(*k, ok);
    // v0 to v9 refuse strides by name; v10 refuses bad ones.
    testing::check_bwd_layout_refusals(*k, ok);
  }
  // What each version takes beyond the shared rules.
  const AttentionParams ok0 = attention_shape(2, 2, 17, 40, 64, DType::FP16);
  testing::check_bwd_rejected(kFlashBwdV0, ok0, [](P& p) { p.fwd.head_dim = 257; }, Status::UnsupportedHeadDim);
  const AttentionParams ok1 = attention_shape(2, 2, 17, 40, 64, DType::FP32);
  auto rejected1 = [&](const std::function<void(P&)>& bad, Status expected) {
    testing::check_bwd_rejected(kFlashBwdV1, ok1, bad, expected);
  };
  rejected1([](P& p) { p.fwd.head_dim = 48; }, Status::UnsupportedHeadDim);
  rejected1([](P& p) { p.fwd.head_dim = 256; }, Status::UnsupportedHeadDim);
  rejected1([](P& p) { p.fwd.dtype = FS_FP16; }, Status::UnsupportedDtype);
  rejected1([](P& p) { p.fwd.dtype = FS_BF16; }, Status::UnsupportedDtype);
  // 4- or 8-byte aligned is not enough: the tile loads move 16 bytes.
  rejected1([](P& p) { p.fwd.k = static_cast<const char*>(p.fwd.k) + 8; }, Status::MisalignedPointer);
  rejected1([](P& p) { p.d_o = static_cast<const char*>(p.d_o) + 4; }, Status::MisalignedPointer);
  rejected1([](P& p) { p.dk = static_cast<char*>(p.dk) + 4; }, Status::MisalignedPointer);
  const AttentionParams ok2 = attention_shape(2, 2, 17, 40, 64, DType::BF16);
  // v3 to v10 take what v2 takes
  for (const KernelDesc* k : {&kFlashBwdV2, &kFlashBwdV3, &kFlashBwdV4, &kFlashBwdV5, &kFlashBwdV6, &kFlashBwdV7,
                              &kFlashBwdV8, &kFlashBwdV9, &kFlashBwdV10}) {
    auto rejected2 = [&](const std::function<void(P&)>& bad, Status expected) {
      testing::check_bwd_rejected(*k, ok2, bad, expected);
    };
    rejected2([](P& p) { p.fwd.head_dim = 32; }, Status::UnsupportedHeadDim);
    rejected2([](P& p) { p.fwd.head_dim = 96; }, Status::UnsupportedHeadDim);
    rejected2([](P& p) { p.fwd.dtype = FS_FP32; }, Status::UnsupportedDtype);
    // 2-, 4- or 8-byte aligned is not enough: the tile loads move 16 bytes.
    rejected2([](P& p) { p.fwd.q = static_cast<const char*>(p.fwd.q) + 8; }, Status::MisalignedPointer);
    rejected2([](P& p) { p.fwd.v = static_cast<const char*>(p.fwd.v) + 2; }, Status::MisalignedPointer);
    rejected2([](P& p) { p.dv = static_cast<char*>(p.dv) + 4; }, Status::MisalignedPointer);
  }
}

FS_GPU_TEST_CASE("stage05 v0 reports FS_ERR_OUT_OF_MEMORY when its N×N buffers do not fit — and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  // Nq = Nk = 2^18, D = 64, fp32: Q, K, V, O, dO are 64 MiB each, P and dS 256 GiB each; more than
  // any GPU holds, so the allocation fails before any kernel runs.
  testing::check_bwd_rejected(kFlashBwdV0, attention_shape(1, 1, 1 << 18, 1 << 18, 64, DType::FP32),
                              [](AttentionBwdParams&) {}, Status::OutOfMemory);
}

FS_GPU_TEST_CASE("stage05 every version reports FS_ERR_CUDA when the runtime refuses the work") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : versions())
    testing::check_bwd_reports_cuda_error(*k, attention_shape(1, 1, 17, 17, 64, first_dtype(*k)));
}

FS_CPU_TEST_CASE("stage05 v0's N×N buffers: their size never wraps") {
  // B·H·Nq·Nk fits in 64 bits here (2^60 elements, fp16: 2^62 bytes for P and dS) ...
  const std::size_t fits = flash_bwd_v0_extra_bytes(attention_shape(1 << 10, 1 << 10, 1 << 20, 1 << 20, 64, DType::FP16));
  CHECK(fits >= std::size_t(1) << 62);
  // ... and not here (2^62 elements): reported as the largest size, never as a small wrapped one.
  CHECK(flash_bwd_v0_extra_bytes(attention_shape(1 << 11, 1 << 11, 1 << 20, 1 << 20, 64, DType::FP16)) ==
        std::numeric_limits<std::size_t>::max());
}

FS_CPU_TEST_CASE("stage05 through the C interface: named codes before any launch") {
  using Launcher = int (*)(const fs_attention_bwd_params*, void*);
  struct Entry {
    Launcher launch;
    const KernelDesc* desc;  // what the entry takes: variable lengths or none
    int32_t dtype;
  };
  const Entry entries[] = {
      {fs_flash_bwd_v0, &kFlashBwdV0, FS_FP16}, {fs_flash_bwd_v1, &kFlashBwdV1, FS_FP32},
      {fs_flash_bwd_v2, &kFlashBwdV2, FS_BF16}, {fs_flash_bwd_v3, &kFlashBwdV3, FS_FP16},
      {fs_flash_bwd_v4, &kFlashBwdV4, FS_BF16}, {fs_flash_bwd_v5, &kFlashBwdV5, FS_FP16},
      {fs_flash_bwd_v6, &kFlashBwdV6, FS_BF16}, {fs_flash_bwd_v7, &kFlashBwdV7, FS_FP16},
      {fs_flash_bwd_v8, &kFlashBwdV8, FS_BF16}, {fs_flash_bwd_v9, &kFlashBwdV9, FS_FP16},
      {fs_flash_bwd_v10, &kFlashBwdV10, FS_BF16}};
  // Every version refuses int8, D = 300 (past the largest any version takes) and a dQ one byte off,
  // where no element of any dtype starts.
  for (const Entry& e : entries)
    testing::check_bwd_c_entry({e.desc->qualified(), e.launch, e.dtype, FS_INT8, 300, 1, e.desc->attention.varlen});
}
