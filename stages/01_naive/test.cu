// Stage 01 tests: naive attention against fp64 at odd sizes in every dtype, with K/V shared by groups of
// query heads (GQA, MQA, decoding; past 65535 heads), and its error paths.
#include "common/tools/attention_tests.h"
#include "stages/01_naive/versions.h"

using namespace fs;

FS_GPU_TEST_CASE("stage01 v1 matches fp64 at odd sizes / fp32") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kNaiveV1)) return;
  uint64_t seed = 100;
  for (const auto& shape : testing::odd_shapes(DType::FP32, {32, 64, 128}))
    testing::check_against_reference(kNaiveV1, shape, ++seed);
}

FS_GPU_TEST_CASE("stage01 v1 matches fp64 at odd sizes / fp16 and bf16") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kNaiveV1)) return;
  uint64_t seed = 200;
  // Every head_dim a later stage's 16-bit versions take (32 to 256), and an odd one: this run is their
  // naive budget (the 2× rule), so it is held to fp64 there itself.
  for (DType t : {DType::FP16, DType::BF16})
    for (const auto& shape : testing::odd_shapes(t, {7, 32, 64, 128, 256}))
      testing::check_against_reference(kNaiveV1, shape, ++seed);
}

FS_GPU_TEST_CASE("stage01 v1 matches fp64 with grouped-query and multi-query K/V — and decoding") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kNaiveV1)) return;
  uint64_t seed = 250;
  for (DType t : {DType::FP32, DType::FP16, DType::BF16})
    for (const auto& shape : testing::gqa_shapes(t, {64, 128}))
      testing::check_against_reference(kNaiveV1, shape, ++seed);
}

FS_GPU_TEST_CASE("stage01 v1 with more than 65535 heads: slices that start inside a group of K/V heads") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kNaiveV1)) return;
  // 80000 query heads over 20000 K/V heads (G = 4): the second slice starts at query head 65535, the
  // last head of a group, so its first two query heads read different K/V heads.
  AttentionParams s = attention_shape(2, 40000, 2, 3, 4, DType::FP32, /*causal=*/true);
  s.kv_heads = 10000;
  testing::check_against_reference(kNaiveV1, s, 290);
}

FS_GPU_TEST_CASE("stage01 v1 honours a custom scale and odd head_dims") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kNaiveV1)) return;
  AttentionParams s = attention_shape(2, 2, 33, 65, 7, DType::FP32, /*causal=*/true, -0.3f);
  testing::check_against_reference(kNaiveV1, s, 300);
  s.head_dim = 256;
  s.scale = 0.05f;
  testing::check_against_reference(kNaiveV1, s, 301);
}

FS_GPU_TEST_CASE("stage01 v1 rejects bad inputs and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  const AttentionParams ok = attention_shape(1, 2, 17, 17, 64, DType::FP32);
  testing::check_rejects_bad_inputs(kNaiveV1, ok);
  testing::check_rejected(kNaiveV1, ok, [](AttentionParams& p) { p.head_dim = 300; }, Status::UnsupportedHeadDim);
  testing::check_rejected(kNaiveV1, ok, [](AttentionParams& p) { p.k = static_cast<const char*>(p.k) + 2; },
                          Status::MisalignedPointer);
}

FS_GPU_TEST_CASE("stage01 v1 reports FS_ERR_OUT_OF_MEMORY when the N×N buffer cannot fit") {
  FS_SKIP_WITHOUT_GPU();
  // D = 1 keeps Q, K, V small while S = Nq·Nk·4 bytes = 1 TiB.
  testing::check_rejected(kNaiveV1, attention_shape(1, 1, 1 << 19, 1 << 19, 1, DType::FP32), [](AttentionParams&) {},
                          Status::OutOfMemory);
}

FS_GPU_TEST_CASE("stage01 v1 refuses more query rows than its grid holds and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  // The scores and PV grids hold Nq in gridDim.y, 8 rows a block, at most 65535 blocks: Nq = 600000
  // needs 75000. D = 1 and Nk = 1 keep every buffer a few MB.
  testing::check_rejected(kNaiveV1, attention_shape(1, 1, 600000, 1, 1, DType::FP32), [](AttentionParams&) {},
                          Status::InvalidSize);
}

FS_GPU_TEST_CASE("stage01 v1 reports FS_ERR_CUDA when the runtime refuses the work") {
  FS_SKIP_WITHOUT_GPU();
  testing::check_reports_cuda_error(kNaiveV1, attention_shape(1, 1, 17, 17, 64, DType::FP32));
}

FS_CPU_TEST_CASE("stage01 v1 through the C interface: FS_ERR_CUDA without a GPU / codes before any launch") {
  fs_attention_params p{};
  CHECK(fs_naive_v1(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_naive_v1(&p, nullptr) == FS_ERR_NULL_POINTER);
  p.batch = p.heads = p.seq_q = p.seq_k = 1;
  p.head_dim = 8;
  p.dtype = FS_FP32;
  p.q = p.k = p.v = reinterpret_cast<const void*>(0x10000);
  p.o = reinterpret_cast<void*>(0x20000);
  p.seq_k = 0;
  CHECK(fs_naive_v1(&p, nullptr) == FS_ERR_INVALID_SIZE);
  p.seq_k = 1;
  if (testing::missing_gpu()) {
    // Valid arguments reach the runtime, which has no device to give: a named error, not a crash.
    CHECK(fs_naive_v1(&p, nullptr) == FS_ERR_CUDA);
  } else {
    testing::record_skip();
    MESSAGE("SKIPPED the no-device path: this machine has a GPU (the GPU cases cover FS_ERR_CUDA)");
  }
}
