// Stage 02 tests: tiled attention against fp64 at odd sizes (tails of every tile), with K/V shared by groups
// of query heads (GQA, MQA, decoding; past 65535 heads), and its error paths.
#include "common/tools/attention_tests.h"
#include "stages/02_tiled/versions.h"

using namespace fs;

FS_GPU_TEST_CASE("stage02 v1 matches fp64 at odd sizes") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kTiledV1)) return;
  uint64_t seed = 1100;
  for (const auto& shape : testing::odd_shapes(DType::FP32, {32, 64, 128}))
    testing::check_against_reference(kTiledV1, shape, ++seed);
}

FS_GPU_TEST_CASE("stage02 v1 matches fp64 with grouped-query and multi-query K/V — and decoding") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kTiledV1)) return;
  uint64_t seed = 1150;
  for (const auto& shape : testing::gqa_shapes(DType::FP32, {64, 128}))
    testing::check_against_reference(kTiledV1, shape, ++seed);
  // More than 65535 heads: the second slice starts at query head 65535, inside a group of G = 4.
  AttentionParams s = attention_shape(2, 40000, 2, 3, 4, DType::FP32, /*causal=*/true);
  s.kv_heads = 10000;
  testing::check_against_reference(kTiledV1, s, 1190);
}

FS_GPU_TEST_CASE("stage02 v1 honours a custom scale and head_dims that are not multiples of the tile") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kTiledV1)) return;
  AttentionParams s = attention_shape(2, 2, 130, 200, 7, DType::FP32, /*causal=*/true, -0.3f);
  testing::check_against_reference(kTiledV1, s, 1200);
  s.head_dim = 256;
  s.scale = 0.05f;
  testing::check_against_reference(kTiledV1, s, 1201);
}

FS_GPU_TEST_CASE("stage02 v1 rejects bad inputs and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  const AttentionParams ok = attention_shape(1, 2, 17, 17, 64, DType::FP32);
  testing::check_rejects_bad_inputs(kTiledV1, ok);
  testing::check_rejected(kTiledV1, ok, [](AttentionParams& p) { p.head_dim = 300; }, Status::UnsupportedHeadDim);
  testing::check_rejected(kTiledV1, ok, [](AttentionParams& p) { p.dtype = FS_FP16; }, Status::UnsupportedDtype);
  testing::check_rejected(kTiledV1, ok, [](AttentionParams& p) { p.o = static_cast<char*>(p.o) + 2; },
                          Status::MisalignedPointer);
}

FS_GPU_TEST_CASE("stage02 v1 refuses more query rows than its grid holds and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  // Both products hold Nq in gridDim.y, 64 rows a block, at most 65535 blocks: Nq = 4200000 needs 65625.
  // D = 1 and Nk = 1 keep every buffer within tens of MB.
  testing::check_rejected(kTiledV1, attention_shape(1, 1, 4200000, 1, 1, DType::FP32), [](AttentionParams&) {},
                          Status::InvalidSize);
}

FS_GPU_TEST_CASE("stage02 v1 reports FS_ERR_OUT_OF_MEMORY and FS_ERR_CUDA") {
  FS_SKIP_WITHOUT_GPU();
  testing::check_rejected(kTiledV1, attention_shape(1, 1, 1 << 19, 1 << 19, 1, DType::FP32), [](AttentionParams&) {},
                          Status::OutOfMemory);
  testing::check_reports_cuda_error(kTiledV1, attention_shape(1, 1, 17, 17, 64, DType::FP32));
}
