// Stage 03 tests: the fused kernel against fp64 at odd sizes (tails in both tile directions, Nq ≠ Nk,
// causal rows that end mid-tile, K/V shared by groups of query heads), its LSE, and its error paths.
#include "common/tools/attention_tests.h"
#include "stages/03_online_softmax/versions.h"

using namespace fs;

FS_GPU_TEST_CASE("stage03 v1 matches fp64 at odd sizes") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kOnlineSoftmaxV1)) return;
  uint64_t seed = 2100;
  for (const auto& shape : testing::odd_shapes(DType::FP32, {32, 64, 128}))
    testing::check_against_reference(kOnlineSoftmaxV1, shape, ++seed);
}

FS_GPU_TEST_CASE("stage03 v1 matches fp64 with grouped-query and multi-query K/V — and decoding") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kOnlineSoftmaxV1)) return;
  uint64_t seed = 2150;
  for (const auto& shape : testing::gqa_shapes(DType::FP32, {32, 64, 128}))
    testing::check_against_reference(kOnlineSoftmaxV1, shape, ++seed);
}

FS_GPU_TEST_CASE("stage03 v1 honours a custom scale over many key tiles") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kOnlineSoftmaxV1)) return;
  // Large scores (scale 2) make the running max move often: the rescaling must be exact.
  const KernelDesc& k = kOnlineSoftmaxV1;
  testing::check_against_reference(k, attention_shape(1, 2, 300, 1500, 64, DType::FP32, /*causal=*/true, 2.0f), 2200);
  testing::check_against_reference(k, attention_shape(2, 1, 129, 1000, 128, DType::FP32, false, -0.4f), 2201);
}

FS_GPU_TEST_CASE("stage03 v1 rejects bad inputs and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  const AttentionParams ok = attention_shape(1, 2, 17, 17, 64, DType::FP32);
  testing::check_rejects_bad_inputs(kOnlineSoftmaxV1, ok);
  testing::check_rejected(kOnlineSoftmaxV1, ok, [](AttentionParams& p) { p.head_dim = 48; },
                          Status::UnsupportedHeadDim);
  testing::check_rejected(kOnlineSoftmaxV1, ok, [](AttentionParams& p) { p.dtype = FS_BF16; },
                          Status::UnsupportedDtype);
  testing::check_rejected(kOnlineSoftmaxV1, ok, [](AttentionParams& p) { p.q = static_cast<const char*>(p.q) + 4; },
                          Status::MisalignedPointer);
}

FS_GPU_TEST_CASE("stage03 v1 reports FS_ERR_CUDA when the runtime refuses the work") {
  FS_SKIP_WITHOUT_GPU();
  testing::check_reports_cuda_error(kOnlineSoftmaxV1, attention_shape(1, 1, 17, 17, 64, DType::FP32));
}
