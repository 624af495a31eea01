// Stage 07 attention backward tests: every version, fp16 and bf16, head_dim 64 and 128, against the fp64
// backward at odd sizes (N = 1, 17, 1000, tails in both tile directions, Nq ≠ Nk both ways, causal
// aligned bottom-right): dQ, dK, dV and delta, outputs poisoned first, each at most 2× the error of the
// naive backward (stage 05's v0) in the same precision, with delta asked for and not, and in
// deterministic mode twice (dQ bitwise the same; under the causal mask also with more key blocks than
// run at once); grouped K/V heads (GQA, MQA: dK and dV the sums over each group; v12's split grids, dK
// and dV bitwise the same on every run); custom and negative scales; logits up to about 1e4; padded
// and packed batches (entries with no query or no key, the padding NaN, grouped K/V) and lengths that
// break the rules; strided layouts ([B, N, H, D], packed QKV and dQKV slices); tensors of more than
// 2^31 elements (the last head checked lies past element 2^31); every error code the backward can
// return, with nothing written; what the Hopper versions do not take (D = 32, 256; fp32) named before
// any launch; FS_ERR_UNSUPPORTED_DEVICE off sm_90. The versions and the naive baseline come from the
// library's registry.
#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include "common/lib/device.h"
#include "common/tools/attention_tests.h"
#include "common/tools/check.h"
#include "common/tools/gpu_test.h"
#include "stages/07_tuned_tma/attention_bwd/dq_tile.cuh"
#include "stages/07_tuned_tma/attention_bwd/group_split.cuh"
#include "stages/07_tuned_tma/attention_bwd/versions.h"

using namespace fs;

namespace {

const std::vector<const KernelDesc*> kAll = find_kernels("stage07/attention_bwd");

std::vector<int64_t> head_dims(const KernelDesc& k) {
  return std::vector<int64_t>(k.info.head_dims, k.info.head_dims + k.info.num_head_dims);
}

const std::vector<DType> kDtypes = {DType::FP16, DType::BF16};

// The naive backward every version is held to (2× its error).
const KernelDesc* naive() { return find_kernels("stage05/v0").at(0); }

}  // namespace

FS_CPU_TEST_CASE("stage07 attention_bwd: the registry lists its versions apart from the forward's") {
  const std::vector<const KernelDesc*> in_order = {&kFlashBwdTmaV1, &kFlashBwdTmaV2, &kFlashBwdTmaV3, &kFlashBwdTmaV4,
                                                    &kFlashBwdTmaV5, &kFlashBwdTmaV6, &kFlashBwdTmaV7,
                                                    &kFlashBwdTmaV8, &kFlashBwdTmaV9, &kFlashBwdTmaV10,
                                                    &kFlashBwdTmaV11, &kFlashBwdTmaV12};
  CHECK(kAll == in_order);
  for (const KernelDesc* k : kAll) {
    INFO(k->qualified());
    CHECK(k->info.problem == FS_PROBLEM_ATTENTION_BWD);
    CHECK(head_dims(*k) == std::vector<int64_t>{64, 128});
    CHECK(k->attention.varlen);
  }
  // find_kernels matches a stage whole or up to a '/': the forward's name is a prefix of this one's.
  for (const KernelDesc* k : find_kernels("stage07/attention")) CHECK(k->info.problem == FS_PROBLEM_ATTENTION);
}

FS_CPU_TEST_CASE("stage07 attention_bwd: the dQ tile order reads back every value where a consumer thread stored it") {
  // The tiles of v6 (Br = 64; D = 64, 128) and v8 (Br = 128 at D = 64): block c is consumer c's m64n64
  // accumulator, stored as float4 n·128 + w by thread w (dq_tile.cuh); dq_tile_offset must find each
  // of its values, and every float of the tile once.
  for (const std::pair<int, int>& shape : {std::pair{64, 64}, std::pair{64, 128}, std::pair{128, 64}}) {
    const int br = shape.first, d = shape.second;
    INFO("Br = " << br << ", D = " << d);
    std::vector<int> seen(std::size_t(br) * d, 0);
    bool all_match = true;
    for (int block = 0; block < (br / 64) * (d / 64); ++block)
      for (int w = 0; w < 128; ++w)
        for (int n = 0; n < 8; ++n)
          for (int e = 0; e < 4; ++e) {
            const int row = 64 * (block / (d / 64)) + 16 * (w / 32) + (w % 32) / 4 + 8 * (e / 2);
            const int col = 64 * (block % (d / 64)) + 8 * n + 2 * (w % 4) + e % 2;
            const int stored = block * 4096 + (n * 128 + w) * 4 + e;
            all_match = all_match && flash_bwd_tma::dq_tile_offset(row, col, d) == stored;
            ++seen[std::size_t(stored)];
          }
    CHECK(all_match);
    CHECK(std::all_of(seen.begin(), seen.end(), [](int k) { return k == 1; }));
  }
}

// v12's split (group_split.cuh) on a GPU of 132 SMs: s divides the group, grows the causal grid to four
// blocks per SM, leaves a grid that fills a wave alone without the mask, and never passes twice its target.
FS_CPU_TEST_CASE("stage07 attention_bwd: v12 splits a group where its grid is small and no further") {
  auto split = [](int64_t b, int64_t h, int64_t kv_heads, int64_t n, bool causal, int sms = 132) {
    AttentionParams p = attention_shape(b, h, n, n, 128, DType::FP16, causal);
    p.kv_heads = kv_heads;
    const int64_t key_blocks = b * kv_heads * ((n + 127) / 128);
    const int s = flash_bwd_tma::group_splits(p, key_blocks, sms);
    CHECK(s >= 1);
    CHECK(h / kv_heads % s == 0);
    CHECK((s == 1 || key_blocks * s <= 2 * int64_t(sms) * (causal ? 4 : 1)));
    return s;
  };
  CHECK(split(2, 16, 16, 8192, true) == 1);   // no group
  CHECK(split(2, 16, 1, 8192, true) == 8);    // MQA under the mask: 128 blocks → 1024, four a SM at 528
  CHECK(split(8, 16, 1, 2048, true) == 8);
  CHECK(split(8, 16, 4, 2048, true) == 2);    // GQA: 512 blocks → 1024
  CHECK(split(2, 32, 8, 8192, true) == 1);    // 1024 blocks: already past the target
  CHECK(split(2, 16, 1, 8192, false) == 1);   // without the mask 128 blocks fill a wave but for 4 SMs
  CHECK(split(1, 16, 1, 1000, false) == 16);  // 8 blocks: 16 times as many, one per SM at most
  CHECK(split(1, 127, 1, 67456, true) == 1);  // G prime, 527 blocks: 127 times that passes twice the target
  CHECK(split(2, 16, 1, 8192, true, /*sms=*/0) == 1);
}

FS_CPU_TEST_CASE("stage07 attention_bwd runs on sm_90 alone: FS_ERR_UNSUPPORTED_DEVICE on every other GPU") {
  for (const KernelDesc* k : kAll) {
    INFO(k->qualified());
    CHECK(std::vector<int>(k->info.archs, k->info.archs + k->info.num_archs) == std::vector<int>{90});
    CHECK(k->info.ptx_arch == 0);  // no PTX: compute_90a's would run on 9.0 alone too
    CHECK(device_supports(k->info, testing::made_up_gpu(90, 227)) == Status::Success);
    for (int cc : {80, 86, 89, 100, 120}) {
      INFO("sm_", cc);
      CHECK(device_supports(k->info, testing::made_up_gpu(cc, 227)) == Status::UnsupportedDevice);
    }
    CHECK(device_supports(k->info, testing::made_up_gpu(90, k->info.smem_bytes / 1024 - 1)) == Status::UnsupportedDevice);
  }
}

FS_GPU_TEST_CASE("stage07 attention_bwd every version matches fp64 at odd sizes in fp16 and bf16 at D 64 and 128") {
  FS_SKIP_WITHOUT_GPU();
  const std::vector<const KernelDesc*> here = testing::runnable_here(kAll);
  if (here.empty()) return;
  uint64_t seed = 70000;
  for (DType t : kDtypes)
    for (const auto& shape : testing::odd_shapes(t, head_dims(*here.front()))) {
      INFO("seed=", ++seed);
      AttentionBwdFixture problem(shape, seed);
      for (const KernelDesc* k : here) testing::check_bwd_against_reference(*k, problem, naive());
    }
}

FS_GPU_TEST_CASE("stage07 attention_bwd every version matches fp64 with grouped K/V heads (GQA and MQA)") {
  FS_SKIP_WITHOUT_GPU();
  const std::vector<const KernelDesc*> here = testing::runnable_here(kAll);
  if (here.empty()) return;
  uint64_t seed = 170000;
  for (DType t : kDtypes) {
    std::vector<AttentionParams> shapes = testing::gqa_shapes(t, head_dims(*here.front()));
    AttentionParams more_queries = attention_shape(2, 4, 100, 17, 64, t);
    more_queries.kv_heads = 1;
    shapes.push_back(more_queries);
    for (const auto& shape : shapes) {
      INFO("seed=", ++seed);
      AttentionBwdFixture problem(shape, seed);
      for (const KernelDesc* k : here) testing::check_bwd_against_reference(*k, problem, naive());
    }
  }
}

FS_GPU_TEST_CASE("stage07 attention_bwd every version honours a custom scale — negative too") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kAll) {
    if (!testing::runs_here(*k)) continue;
    for (DType t : kDtypes) {
      testing::check_bwd_against_reference(*k, attention_shape(1, 2, 300, 1500, 64, t, true, 2.0f), 79000, naive());
      testing::check_bwd_against_reference(*k, attention_shape(2, 1, 129, 1000, 128, t, false, -0.4f), 79001, naive());
    }
  }
}

FS_GPU_TEST_CASE("stage07 attention_bwd every version gives finite gradients for logits up to about 1e4") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kAll) {
    if (!testing::runs_here(*k)) continue;
    for (DType t : kDtypes)
      for (float scale : {900.0f, -900.0f})
        for (bool causal : {false, true})
          testing::check_bwd_extreme_logits(*k, attention_shape(1, 2, 100, 300, 64, t, causal, scale), 79100);
  }
}

// Deterministic dQ under the causal mask when a head has more key blocks than the GPU runs at once (one
// block per SM): 100 query rows see every one of Nk = 128·(SMs + 3) + 50 keys, so every key block adds
// into the same query tiles in turn. v1 … v10 wait for the blocks of earlier keys, v11 for those of later
// keys, which it dispatches first (turns.cuh): a wrong order would hang here rather than fail.
FS_GPU_TEST_CASE("stage07 attention_bwd deterministic and causal with more key blocks than run at once") {
  FS_SKIP_WITHOUT_GPU();
  const std::vector<const KernelDesc*> here = testing::runnable_here(kAll);
  if (here.empty()) return;
  DeviceProps dev;
  REQUIRE(current_device(&dev) == Status::Success);
  const int64_t nk = 128 * int64_t(dev.sms + 3) + 50;
  uint64_t seed = 280000;
  for (DType t : kDtypes)
    for (int64_t d : head_dims(*here.front())) {
      INFO("seed=", ++seed);
      AttentionBwdFixture problem(attention_shape(1, 1, 100, nk, d, t, /*causal=*/true), seed);
      for (const KernelDesc* k : here) testing::check_bwd_against_reference(*k, problem, naive());
    }
}

// v12 splits a small grouped grid (group_split.cuh): the partial dK, dV sums of a key block's s blocks are
// added by whichever finishes last, in split order, so dK and dV are the same bits on every run, atomic
// dQ or not. MQA and GQA shapes whose grids split on any GPU of 16 SMs or more, causal and not.
FS_GPU_TEST_CASE("stage07 attention_bwd v12 split grids: right and dK dV the same bits on every run") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kFlashBwdTmaV12)) return;
  DeviceProps dev;
  REQUIRE(current_device(&dev) == Status::Success);
  uint64_t seed = 290000;
  for (DType t : kDtypes)
    for (int64_t d : head_dims(kFlashBwdTmaV12))
      for (bool causal : {false, true}) {
        AttentionParams shape = attention_shape(1, 8, 700, 700, d, t, causal);
        shape.kv_heads = 1;  // 6 key blocks of one K/V head: split 8 ways under the mask and without it
        const int splits = flash_bwd_tma::group_splits(shape, (shape.seq_k + 127) / 128, dev.sms);
        INFO("seed=", ++seed, " splits=", splits);
        CHECK(splits > 1);
        AttentionBwdFixture problem(shape, seed);
        testing::check_bwd_against_reference(kFlashBwdTmaV12, problem, naive());
        const AttentionBwdCheck first = problem.run(kFlashBwdTmaV12);
        REQUIRE(first.status == Status::Success);
        const std::vector<unsigned char> dk = problem.dk_bytes(), dv = problem.dv_bytes();
        for (int run = 0; run < 3; ++run) {
          REQUIRE(problem.run(kFlashBwdTmaV12).status == Status::Success);
          CHECK(problem.dk_bytes() == dk);
          CHECK(problem.dv_bytes() == dv);
        }
      }
}

FS_GPU_TEST_CASE("stage07 attention_bwd every version: Q K V O dO and the gradients of more than 2^31 elements") {
  FS_SKIP_WITHOUT_GPU();
  if (testing::sanitizer_sizes()) {
    // 4.3 GB per tensor: minutes under a sanitizer, and the 64-bit offsets it exercises are the same
    // arithmetic the small cases run through.
    testing::record_skip();
    MESSAGE("SKIPPED under the sanitizer: tensors of 2^31 elements");
    return;
  }
  // B·H = 16400 heads of 1024 × 128, causal: 2,149,580,800 elements per tensor, 2^31 + 2,097,152, and
  // about 43 GB on the GPU with dQ's fp32 workspace. The fp64 reference covers the first and the last
  // head, which starts past element 2^31 of every tensor (TMA reaches it through the maps' head and batch
  // coordinates; dK, dV, LSE, delta and dQ's workspace are addressed with 64-bit offsets). No naive
  // baseline here: its N × N scores for every head would take 69 GB.
  const AttentionParams shape = attention_shape(2, 8200, 1024, 1024, 128, DType::FP16, true);
  AttentionBwdFixture problem(shape, 7995, /*max_heads=*/2);
  for (const KernelDesc* k : testing::runnable_here(kAll)) {
    INFO(k->qualified());
    const AttentionBwdCheck c = problem.run(*k);
    REQUIRE_MESSAGE(c.status == Status::Success, std::string(status_name(c.status)));
    MESSAGE(k->qualified(), "  dQ: ", c.dq.str(), "  dK: ", c.dk.str(), "  dV: ", c.dv.str());
    CHECK(c.heads_checked == 2);
    CHECK(c.passed(backward_tolerance(DType::FP16)));
  }
}

FS_GPU_TEST_CASE("stage07 attention_bwd every version matches fp64 on padded and packed batches") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kAll) {
    if (!testing::runs_here(*k)) continue;
    uint64_t seed = 270000 + 10000 * uint64_t(k->info.version[1] - '0');
    const std::vector<int64_t> dims = head_dims(*k);
    for (int64_t d : dims) testing::check_bwd_varlen_layouts(*k, d, seed += 10);
    for (int64_t d : testing::choices_for_run(dims, dims.front()))
      testing::check_bwd_varlen_grouped(*k, d, seed += 10);  // every head_dim (the smallest under the sanitizer)
  }
}

FS_GPU_TEST_CASE("stage07 attention_bwd lengths that break the rules: the backward skips those entries") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kAll)
    if (testing::runs_here(*k)) testing::check_bwd_bad_layouts(*k);
}

FS_GPU_TEST_CASE("stage07 attention_bwd takes strided layouts (B N H D and packed QKV) and writes only the gradients' views") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kAll) {
    if (!testing::runs_here(*k)) continue;
    uint64_t seed = 290000;
    for (DType t : kDtypes)
      for (int64_t d : head_dims(*k))
        for (const auto& shape : testing::strided_shapes(t, d)) testing::check_bwd_strided_layouts(*k, shape, ++seed);
    for (int64_t d : head_dims(*k)) testing::check_bwd_varlen_by_position(*k, d, seed += 10);
  }
}

FS_GPU_TEST_CASE("stage07 attention_bwd every version rejects bad inputs and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  using P = AttentionBwdParams;
  for (const KernelDesc* k : kAll) {
    const AttentionParams ok = attention_shape(2, 2, 17, 40, 64, DType::FP16);
    testing::check_bwd_rejects_bad_inputs(*k, ok);
    testing::check_bwd_layout_refusals(*k, ok);
    auto rejected = [&](const std::function<void(P&)>& bad, Status expected) {
      testing::check_bwd_rejected(*k, ok, bad, expected);
    };
    rejected([](P& p) { p.fwd.head_dim = 32; }, Status::UnsupportedHeadDim);
    rejected([](P& p) { p.fwd.head_dim = 96; }, Status::UnsupportedHeadDim);
    rejected([](P& p) { p.fwd.head_dim = 256; }, Status::UnsupportedHeadDim);  // dK, dV would not fit in registers
    rejected([](P& p) { p.fwd.dtype = FS_FP32; }, Status::UnsupportedDtype);
    // 2-, 4- or 8-byte aligned is not enough: TMA reads from 16-byte aligned bases.
    rejected([](P& p) { p.fwd.q = static_cast<const char*>(p.fwd.q) + 8; }, Status::MisalignedPointer);
    rejected([](P& p) { p.d_o = static_cast<const char*>(p.d_o) + 2; }, Status::MisalignedPointer);
    rejected([](P& p) { p.dk = static_cast<char*>(p.dk) + 4; }, Status::MisalignedPointer);
  }
}

FS_GPU_TEST_CASE("stage07 attention_bwd every version reports FS_ERR_CUDA when the runtime refuses the work") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kAll)
    if (testing::runs_here(*k)) testing::check_bwd_reports_cuda_error(*k, attention_shape(1, 1, 17, 17, 64, DType::FP16));
}

FS_CPU_TEST_CASE("stage07 attention_bwd through the C interface: named codes before any launch") {
  // fp32 and D = 256 are no instance of the Hopper backward; dQ 8 bytes off 16 is refused, since TMA
  // reads and writes 16-byte aligned tensors.
  using Launcher = int (*)(const fs_attention_bwd_params*, void*);
  const std::pair<const KernelDesc*, Launcher> entries[] = {{&kFlashBwdTmaV1, fs_flash_bwd_tma_v1},
                                                            {&kFlashBwdTmaV2, fs_flash_bwd_tma_v2},
                                                            {&kFlashBwdTmaV3, fs_flash_bwd_tma_v3},
                                                            {&kFlashBwdTmaV4, fs_flash_bwd_tma_v4},
                                                            {&kFlashBwdTmaV5, fs_flash_bwd_tma_v5},
                                                            {&kFlashBwdTmaV6, fs_flash_bwd_tma_v6},
                                                            {&kFlashBwdTmaV7, fs_flash_bwd_tma_v7},
                                                            {&kFlashBwdTmaV8, fs_flash_bwd_tma_v8},
                                                            {&kFlashBwdTmaV9, fs_flash_bwd_tma_v9},
                                                            {&kFlashBwdTmaV10, fs_flash_bwd_tma_v10},
                                                            {&kFlashBwdTmaV11, fs_flash_bwd_tma_v11},
                                                            {&kFlashBwdTmaV12, fs_flash_bwd_tma_v12}};
  for (const auto& [k, launch] : entries)
    testing::check_bwd_c_entry({k->qualified(), launch, FS_FP16, FS_FP32, 256, 8, k->attention.varlen});
}
