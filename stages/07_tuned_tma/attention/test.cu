// Stage 07 attention tests: every version, fp16 and bf16, head_dim 64, 128 and 256, against fp64 at odd
// sizes (tails in both tile directions, Nq ≠ Nk both ways, causal aligned bottom-right) with the error
// at most 2× the naive stage's in the same precision, LSE included; grouped-query and multi-query K/V
// and decoding (Nq = 1 against up to 16384 keys); custom scales over many key blocks; long key
// sequences at D = 64 (the 192-key blocks v2 to v5 take there); v5 with forced split counts (2, 7, 16:
// uneven and empty slices) over odd sizes, decoding, long keys and variable lengths; v6's packed
// groups of 7, 8 and 32 query heads, and v6 with forced split counts (1, 2, 7) on grouped K/V; v8 with
// its last 1, 3 or all tiles forced over 2, 7 or 16 blocks, the same shapes as v5's; v11 on 1, 3 or 7
// persistent blocks (each block walks many tiles: the stages', Q's and the zeroed rows' barriers run
// through phase after phase), the same shapes again; padded (seq_lens, the padding NaN)
// and packed (cu_seqlens) batches against a per-entry reference, at every head_dim, with grouped K/V
// and with 192-key blocks, and entries that break the rules left unwritten; tensors of more than 2^31
// elements (the last head checked lies past element 2^31); v9 on fp8 inputs with per-tensor scales at
// fp8's tolerance (odd sizes, grouped K/V, decoding, custom scales, long keys, 2^31 elements, its own
// refusals: D = 64, 16-bit inputs, variable lengths, bad scales); strided layouts ([B, N, H, D], packed
// QKV slices) in every version and in v5's, v6's and v8's split paths, the bytes outside O's view
// untouched; error paths: bad inputs, what the Hopper
// versions do not take (D = 32) named before any launch, FS_ERR_UNSUPPORTED_DEVICE off sm_90. The versions and the naive baseline come from the
// library's registry.
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "common/lib/device.h"
#include "common/tools/attention_check.h"
#include "common/tools/attention_tests.h"
#include "common/tools/device_buffer.h"
#include "common/tools/gpu_test.h"
#include "stages/07_tuned_tma/attention/versions.h"

using namespace fs;

namespace {

const std::vector<const KernelDesc*> kAll = find_kernels("stage07/attention");

// The versions that take fp16 and bf16 (v1 to v8, v10, v11): every case below that draws 16-bit inputs runs them;
// v9, fp8 alone, has cases of its own.
std::vector<const KernelDesc*> sixteen_bit_versions() {
  std::vector<const KernelDesc*> out;
  for (const KernelDesc* k : kAll)
    if (k->info.in_dtypes & dtype_bit(DType::FP16)) out.push_back(k);
  return out;
}
const std::vector<const KernelDesc*> kHalf = sixteen_bit_versions();

const KernelDesc& naive() { return *find_kernels("stage01/v1").at(0); }

std::vector<int64_t> head_dims(const KernelDesc& k) {
  return std::vector<int64_t>(k.info.head_dims, k.info.head_dims + k.info.num_head_dims);
}

// v5 with a forced split count, as a kernel of its own: the split path on shapes where the heuristic
// would take one split (or another count).
template <int kSplits>
Status run_forced_splits(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_flash_tma_v5_splits(pr.p, kSplits, stream);
}
KernelDesc forced_splits_kernel(AttentionRun run) { return kernel_with_run(kFlashTmaV5, run); }
template <int kSplits>
Status run_v6_forced_splits(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_flash_tma_v6_splits(pr.p, kSplits, stream);
}
KernelDesc v6_forced_splits_kernel(AttentionRun run) { return kernel_with_run(kFlashTmaV6, run); }
// v8 with its grid's last kTail tiles forced over kSplits blocks each.
template <int kTail, int kSplits>
Status run_v8_forced_split(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_flash_tma_v8_split(pr.p, kTail, kSplits, stream);
}
KernelDesc v8_forced_split_kernel(AttentionRun run) { return kernel_with_run(kFlashTmaV8, run); }
// v11 on kBlocks persistent blocks, whatever the GPU's SM count: few blocks over many tiles.
template <int kBlocks>
Status run_v11_forced_blocks(const AttentionProblem& pr, cudaStream_t stream) {
  return launch_flash_tma_v11_blocks(pr.p, kBlocks, stream);
}
KernelDesc v11_forced_blocks_kernel(AttentionRun run) { return kernel_with_run(kFlashTmaV11, run); }

// Groups v6 packs beyond gqa_shapes' (G = 2, 4, 6): G = 7 (H = 28 over 4 K/V heads), 8 and 32 — more
// packed rows than one 128-row tile, tile boundaries inside one query's heads, several queries'
// causal diagonals in one tile, decoding against many key blocks — at each head_dim.
std::vector<AttentionParams> large_group_shapes(DType dtype) {
  struct Sizes {
    int64_t b, h, kv_heads, nq, nk, d;
    bool causal;
  };
  const Sizes sizes[] = {{2, 28, 4, 19, 300, 128, true},  {1, 32, 1, 5, 2000, 64, false},
                         {2, 24, 3, 33, 700, 256, true},  {1, 64, 8, 1, testing::size_for_run(9000, 1100), 128, false},
                         {1, 16, 2, 127, 127, 64, true}};
  std::vector<AttentionParams> out;
  for (const Sizes& s : sizes) {
    AttentionParams p = attention_shape(s.b, s.h, s.nq, s.nk, s.d, dtype, s.causal);
    p.kv_heads = s.kv_heads;
    out.push_back(p);
  }
  return out;
}

// Grouped K/V through v6 with a forced split count: gqa_shapes, the large groups, grouped variable lengths.
void check_v6_forced_splits(const KernelDesc& kernel, uint64_t seed) {
  if (!testing::runs_here(kernel)) return;
  for (const auto& shape : testing::gqa_shapes(DType::FP16, {128}))
    testing::check_against_reference(kernel, shape, ++seed, &naive());
  for (const auto& shape : large_group_shapes(DType::BF16)) testing::check_against_reference(kernel, shape, ++seed, &naive());
  testing::check_varlen_grouped(kernel, 64, seed += 10);
}

// Odd sizes, long keys, decoding with grouped K/V, variable lengths and bad layouts through v5 with a
// forced split count.
void check_forced_splits(const KernelDesc& kernel, uint64_t seed) {
  if (!testing::runs_here(kernel)) return;
  for (int64_t d : head_dims(kernel))
    for (const auto& shape : testing::odd_shapes(DType::FP16, {d}))
      testing::check_against_reference(kernel, shape, ++seed, &naive());
  for (const auto& shape : testing::gqa_shapes(DType::BF16, {128}))
    if (shape.seq_q == 1) testing::check_against_reference(kernel, shape, ++seed, &naive());
  testing::check_against_reference(kernel, attention_shape(1, 2, 1000, 4100, 64, DType::FP16, true), ++seed, &naive());
  testing::check_against_reference(kernel, attention_shape(1, 2, 300, 1500, 64, DType::BF16, true, 2.0f), ++seed,
                                   &naive());
  testing::check_varlen_layouts(kernel, 128, seed += 10);
  testing::check_bad_layouts(kernel);
}

}  // namespace

FS_CPU_TEST_CASE("stage07 attention lists its versions in order with what they take") {
  REQUIRE(kAll.size() == 11);
  CHECK(kAll[0]->qualified() == "stage07/attention/v1");
  CHECK(kAll[1]->qualified() == "stage07/attention/v2");
  CHECK(kAll[2]->qualified() == "stage07/attention/v3");
  CHECK(kAll[3]->qualified() == "stage07/attention/v4");
  CHECK(kAll[4]->qualified() == "stage07/attention/v5");
  CHECK(kAll[5]->qualified() == "stage07/attention/v6");
  CHECK(kAll[6]->qualified() == "stage07/attention/v7");
  CHECK(kAll[7]->qualified() == "stage07/attention/v8");
  CHECK(kAll[8]->qualified() == "stage07/attention/v9");
  CHECK(kAll[9]->qualified() == "stage07/attention/v10");
  CHECK(kAll[10]->qualified() == "stage07/attention/v11");
  REQUIRE(kHalf.size() == 10);
  for (const KernelDesc* k : kAll) {
    INFO(k->qualified());
    CHECK(k->is_attention());
    CHECK(k->attention.alignment == 16);
  }
  for (const KernelDesc* k : kHalf) {
    INFO(k->qualified());
    CHECK(head_dims(*k) == std::vector<int64_t>{64, 128, 256});
    CHECK(k->attention.varlen);
    CHECK(k->info.in_dtypes == (dtype_bit(DType::FP16) | dtype_bit(DType::BF16)));
    CHECK(k->info.out_dtypes == k->info.in_dtypes);
  }
  // v9: fp8 in, bf16 out, D = 128, dense batches.
  CHECK(head_dims(kFlashTmaV9) == std::vector<int64_t>{128});
  CHECK_FALSE(kFlashTmaV9.attention.varlen);
  CHECK(kFlashTmaV9.info.in_dtypes == dtype_bit(DType::FP8_E4M3));
  CHECK(kFlashTmaV9.info.out_dtypes == dtype_bit(DType::BF16));
}

FS_CPU_TEST_CASE("stage07 attention runs on sm_90 alone: FS_ERR_UNSUPPORTED_DEVICE on every other GPU") {
  // sm_90a code runs on compute capability 9.0 and nothing else: not Ampere or Ada, not Blackwell.
  for (const KernelDesc* k : kAll) {
    INFO(k->qualified());
    CHECK(std::vector<int>(k->info.archs, k->info.archs + k->info.num_archs) == std::vector<int>{90});
    CHECK(k->info.ptx_arch == 0);  // no PTX: compute_90a's would run on 9.0 alone too
    CHECK(device_supports(k->info, testing::made_up_gpu(90, 227)) == Status::Success);
    for (int cc : {80, 86, 89, 100, 120}) {
      INFO("sm_", cc);
      CHECK(device_supports(k->info, testing::made_up_gpu(cc, 227)) == Status::UnsupportedDevice);
    }
    // A 9.0 GPU that allowed less shared memory per block than the largest block asks for would be refused too.
    CHECK(device_supports(k->info, testing::made_up_gpu(90, k->info.smem_bytes / 1024 - 1)) == Status::UnsupportedDevice);
  }
}

FS_CPU_TEST_CASE("stage07 attention through the C interface: named codes before any launch") {
  using Launcher = int (*)(const fs_attention_params*, void*);
  const Launcher launchers[] = {fs_flash_fwd_tma_v1, fs_flash_fwd_tma_v2, fs_flash_fwd_tma_v3,
                                fs_flash_fwd_tma_v4, fs_flash_fwd_tma_v5, fs_flash_fwd_tma_v6,
                                fs_flash_fwd_tma_v7, fs_flash_fwd_tma_v8, fs_flash_fwd_tma_v10,
                                fs_flash_fwd_tma_v11};
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
    // D = 32 would need the 64-byte swizzle; 80 is no instance at all.
    CHECK(with(launch, [](auto& b) { b.head_dim = 32; }) == FS_ERR_UNSUPPORTED_HEAD_DIM);
    CHECK(with(launch, [](auto& b) { b.head_dim = 80; }) == FS_ERR_UNSUPPORTED_HEAD_DIM);
    CHECK(with(launch, [](auto& b) { b.kv_heads = 2; }) == FS_ERR_INVALID_KV_HEADS);  // more than heads = 1
    // TMA reads 16-byte aligned tensors.
    CHECK(with(launch, [](auto& b) { b.q = reinterpret_cast<const void*>(0x10008); }) == FS_ERR_MISALIGNED_POINTER);
    // Variable-length fields that cannot describe a layout: refused by name, before any device call.
    CHECK(with(launch, [](auto& b) {
            b.seq_lens = b.cu_seqlens_q = b.cu_seqlens_k = reinterpret_cast<const int32_t*>(0x30000);
          }) == FS_ERR_INVALID_SEQLENS);  // padded and packed at once
    CHECK(with(launch, [](auto& b) { b.cu_seqlens_q = reinterpret_cast<const int32_t*>(0x30000); }) ==
          FS_ERR_INVALID_SEQLENS);  // packed queries without packed keys
    CHECK(with(launch, [](auto& b) {
            b.cu_seqlens_q = b.cu_seqlens_k = reinterpret_cast<const int32_t*>(0x30000);
            b.max_seq_q = 2;
          }) == FS_ERR_INVALID_SEQLENS);  // an entry longer than the total
  }
  // v9 takes fp8 alone, with its scales; the 16-bit versions refuse the scales they would ignore.
  fs_attention_params f = p;
  f.dtype = FS_FP8_E4M3;
  f.head_dim = 128;
  f.q_descale = 0.5f, f.k_descale = 0.0f, f.v_descale = 2.0f;  // 0: 1
  auto fp8_with = [&](auto change) {
    fs_attention_params bad = f;
    change(bad);
    return fs_flash_fwd_tma_v9(&bad, nullptr);
  };
  CHECK(fs_flash_fwd_tma_v9(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fp8_with([](auto& b) { b.v = nullptr; }) == FS_ERR_NULL_POINTER);
  CHECK(fp8_with([](auto& b) { b.dtype = FS_FP16, b.q_descale = b.v_descale = 0.0f; }) == FS_ERR_UNSUPPORTED_DTYPE);
  CHECK(fp8_with([](auto& b) { b.head_dim = 64; }) == FS_ERR_UNSUPPORTED_HEAD_DIM);
  CHECK(fp8_with([](auto& b) { b.head_dim = 256; }) == FS_ERR_UNSUPPORTED_HEAD_DIM);
  CHECK(fp8_with([](auto& b) { b.q_descale = -0.5f; }) == FS_ERR_INVALID_SCALE);
  CHECK(fp8_with([](auto& b) { b.k_descale = INFINITY; }) == FS_ERR_INVALID_SCALE);
  CHECK(fp8_with([](auto& b) { b.k = reinterpret_cast<const void*>(0x10008); }) == FS_ERR_MISALIGNED_POINTER);
  CHECK(fp8_with([](auto& b) { b.seq_lens = reinterpret_cast<const int32_t*>(0x30000); }) == FS_ERR_INVALID_SEQLENS);
  CHECK(with(fs_flash_fwd_tma_v8, [](auto& b) { b.v_descale = 2.0f; }) == FS_ERR_INVALID_SCALE);
  CHECK(fs_flash_fwd_tma_v8(&f, nullptr) == FS_ERR_UNSUPPORTED_DTYPE);
  if (testing::missing_gpu()) {
    // Valid arguments reach the runtime, which has no device to give: a named error, not a crash.
    for (Launcher launch : launchers) CHECK(launch(&p, nullptr) == FS_ERR_CUDA);
    CHECK(fs_flash_fwd_tma_v9(&f, nullptr) == FS_ERR_CUDA);
  } else {
    testing::record_skip();
    MESSAGE("SKIPPED the no-device path: this machine has a GPU (the GPU cases cover FS_ERR_CUDA)");
  }
}

FS_GPU_TEST_CASE("stage07 attention every version matches fp64 at odd sizes in every head_dim it takes") {
  FS_SKIP_WITHOUT_GPU();
  const std::vector<const KernelDesc*> here = testing::runnable_here(kHalf);
  uint64_t seed = 7000;
  for (int64_t d : testing::listed_head_dims(here))
    for (DType t : {DType::FP16, DType::BF16})
      for (const auto& shape : testing::odd_shapes(t, {d}))
        testing::check_each_against_reference(testing::taking_head_dim(here, d), shape, ++seed, &naive());
}

FS_GPU_TEST_CASE("stage07 attention every version: grouped-query and multi-query K/V — and decoding (Nq = 1)") {
  FS_SKIP_WITHOUT_GPU();
  // Under the sanitizer fp16 alone: the address arithmetic does not depend on the type.
  const std::vector<DType> dtypes = testing::choices_for_run<DType>({DType::FP16, DType::BF16}, DType::FP16);
  const std::vector<const KernelDesc*> here = testing::runnable_here(kHalf);
  uint64_t seed = 7500;
  for (int64_t d : testing::listed_head_dims(here))
    for (DType t : dtypes)
      for (const auto& shape : testing::gqa_shapes(t, {d}))
        testing::check_each_against_reference(testing::taking_head_dim(here, d), shape, ++seed, &naive());
}

FS_GPU_TEST_CASE("stage07 attention every version honours a custom scale over many key blocks") {
  FS_SKIP_WITHOUT_GPU();
  // Scale 2 makes the running max move often (the rescaling must be exact); a negative scale turns the
  // row maximum into the minimum of Q Kᵀ (a kernel that takes max(S) before scaling gets it wrong).
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    testing::check_against_reference(*k, attention_shape(1, 2, 300, 1500, 64, DType::FP16, true, 2.0f), 7900, &naive());
    testing::check_against_reference(*k, attention_shape(2, 1, 129, 1000, 128, DType::BF16, false, -0.4f), 7901,
                                     &naive());
    testing::check_against_reference(*k, attention_shape(1, 2, 70, 333, 256, DType::FP16, true, 1.5f), 7902, &naive());
  }
}

FS_GPU_TEST_CASE("stage07 attention every version: long key sequences at D = 64 (v2-v4 take 192-key blocks)") {
  FS_SKIP_WITHOUT_GPU();
  // From Nk = 4096 on, v2 to v4 run D = 64 with Bc = 192 (launch.cuh): a last key block that is partly
  // padding (4100 = 21 · 192 + 68, 5000 = 26 · 192 + 8), the causal diagonal across it, Nq ≠ Nk.
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    testing::check_against_reference(*k, attention_shape(1, 2, 1000, 4100, 64, DType::FP16, true), 7980, &naive());
    testing::check_against_reference(*k, attention_shape(2, 1, 300, 5000, 64, DType::BF16, false), 7981, &naive());
  }
}

FS_GPU_TEST_CASE("stage07 attention every version handles padded and packed variable lengths") {
  FS_SKIP_WITHOUT_GPU();
  // TMA brings whole boxes: a tile that runs past a sequence's end holds the padding (NaN here) or the
  // next entry's rows, which the kernels must mask (keys) or zero (queries, values).
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    uint64_t seed = 8000;
    for (int64_t d : head_dims(*k)) testing::check_varlen_layouts(*k, d, seed += 10);
    for (int64_t d : testing::choices_for_run(head_dims(*k), int64_t{128}))
      testing::check_varlen_grouped(*k, d, seed += 10);  // every head_dim (D = 128 alone under the sanitizer)
    // Padded to 4500 keys at D = 64: v2 to v4 take 192-key blocks (the launch sees seq_k), whose last
    // block ends inside the padding (4100 = 21 · 192 + 68); an entry of 1000 ends inside another block.
    testing::Varlen wide{2, 2, 64, true, {4100, 1000}, 4100, 4500};
    testing::check_varlen_batch(*k, wide, DType::FP16, ++seed);
    // Packed entries of 1 .. 700 rows: many sequence ends inside one 128-row tile and one key block.
    testing::Varlen many{6, 2, 128, false, {}, 1118, 1243, {0, 1, 18, 35, 400, 418, 1118},
                         {0, 1, 100, 117, 500, 543, 1243}};
    testing::check_varlen_batch(*k, many, DType::BF16, ++seed);
  }
}

FS_GPU_TEST_CASE("stage07 attention lengths that break the rules: fs_check_varlen names them — the kernels skip those entries") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    testing::check_bad_layouts(*k);
  }
}

// 2 splits: the common case; 7: slices of uneven length, and causal tiles with fewer key blocks than
// splits (empty slices); 16: the most the heuristic takes.
FS_GPU_TEST_CASE("stage07 attention v5 forced to 2 splits matches fp64") {
  FS_SKIP_WITHOUT_GPU();
  check_forced_splits(forced_splits_kernel(run_forced_splits<2>), 8500);
}

FS_GPU_TEST_CASE("stage07 attention v5 forced to 7 splits matches fp64: uneven and empty slices") {
  FS_SKIP_WITHOUT_GPU();
  check_forced_splits(forced_splits_kernel(run_forced_splits<7>), 8600);
}

FS_GPU_TEST_CASE("stage07 attention v5 forced to 16 splits matches fp64") {
  FS_SKIP_WITHOUT_GPU();
  check_forced_splits(forced_splits_kernel(run_forced_splits<16>), 8700);
}

// v8's grid of whole tiles and split ones: the last tile over 2 blocks, the last 3 over 7 (uneven and
// empty slices; on a grid of fewer tiles, all of them), every tile over 16 (a tail longer than the grid).
FS_GPU_TEST_CASE("stage07 attention v8 with its last tiles forced over 2 7 and 16 blocks matches fp64") {
  FS_SKIP_WITHOUT_GPU();
  check_forced_splits(v8_forced_split_kernel(run_v8_forced_split<1, 2>), 8750);
  check_forced_splits(v8_forced_split_kernel(run_v8_forced_split<3, 7>), 8760);
  check_forced_splits(v8_forced_split_kernel(run_v8_forced_split<1000000, 16>), 8770);
}

// v11 on one block (every tile through one block, in the counter's order), 3 and 7 (blocks that draw
// different numbers of tiles, causal tiles of different lengths); the odd sizes, padded and packed
// batches among the shapes put rows past a sequence's end in tile after tile of one block.
FS_GPU_TEST_CASE("stage07 attention v11 on 1 3 and 7 persistent blocks matches fp64: each block walks many tiles") {
  FS_SKIP_WITHOUT_GPU();
  check_forced_splits(v11_forced_blocks_kernel(run_v11_forced_blocks<1>), 8780);
  check_forced_splits(v11_forced_blocks_kernel(run_v11_forced_blocks<3>), 8790);
  check_forced_splits(v11_forced_blocks_kernel(run_v11_forced_blocks<7>), 8800);
}

FS_GPU_TEST_CASE("stage07 attention v6 packs groups of 7 8 and 32 query heads into its tiles") {
  FS_SKIP_WITHOUT_GPU();
  const KernelDesc& v6 = kFlashTmaV6;
  if (!testing::runs_here(v6)) return;
  uint64_t seed = 8800;
  for (DType t : {DType::FP16, DType::BF16})
    for (const auto& shape : large_group_shapes(t)) testing::check_against_reference(v6, shape, ++seed, &naive());
}

// v6's split path (and its one-split path, which writes O itself) on grouped K/V: 1, 2 and 7 splits.
FS_GPU_TEST_CASE("stage07 attention v6 forced to 1 2 and 7 splits matches fp64 on grouped K/V") {
  FS_SKIP_WITHOUT_GPU();
  check_v6_forced_splits(v6_forced_splits_kernel(run_v6_forced_splits<1>), 8900);
  check_v6_forced_splits(v6_forced_splits_kernel(run_v6_forced_splits<2>), 8950);
  check_v6_forced_splits(v6_forced_splits_kernel(run_v6_forced_splits<7>), 9000);
}

// v9 on fp8 inputs (uniform in [-1, 1], each tensor stored with its own scale: AttentionFixture) against
// fp64 on the values they stand for, at fp8's tolerance (common/tools/compare.h): the odd sizes (Nk = 17,
// 100, 1000, 1023: 32-key groups that end inside Vᵀ's padding) and grouped K/V with decoding at D = 128,
// custom scales, long key sequences. There is no fp8 naive stage to compare the error with.
FS_GPU_TEST_CASE("stage07 attention v9 (fp8) matches fp64 at odd sizes with grouped K/V and decoding and custom scales") {
  FS_SKIP_WITHOUT_GPU();
  const KernelDesc& v9 = kFlashTmaV9;
  if (!testing::runs_here(v9)) return;
  uint64_t seed = 9100;
  for (const auto& shape : testing::odd_shapes(DType::FP8_E4M3, {128}))
    testing::check_against_reference(v9, shape, ++seed);
  for (const auto& shape : testing::gqa_shapes(DType::FP8_E4M3, {128}))
    testing::check_against_reference(v9, shape, ++seed);
  testing::check_against_reference(v9, attention_shape(2, 1, 129, 1000, 128, DType::FP8_E4M3, false, -0.4f), ++seed);
  testing::check_against_reference(v9, attention_shape(1, 2, 300, 1500, 128, DType::FP8_E4M3, true, 2.0f), ++seed);
  testing::check_against_reference(v9, attention_shape(1, 2, testing::size_for_run(1000, 300),
                                                       testing::size_for_run(4100, 700), 128, DType::FP8_E4M3, true),
                                   ++seed);
}

// The strided layouts (fs_attention_params' strides; the maps take them as TMA's dimensions 2 and 3):
// [B, N, H, D] and Q, K, V slices of a packed QKV tensor with O's rows padded, at odd sizes, causal,
// grouped-query and decoding, every head_dim; v5, v6 and v8 forced to split, so that their merges and
// v6's packed Q loads and O stores take the strides too; v9 on fp8 (O in bf16 through its own strides).
FS_GPU_TEST_CASE("stage07 attention every version takes strided layouts (B N H D and packed QKV) and writes only O's view") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 9600;
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    // Both 16-bit types at every head_dim (one type per head_dim under the sanitizer).
    for (int64_t d : head_dims(*k))
      for (DType t : testing::choices_for_run<DType>({DType::FP16, DType::BF16}, d == 128 ? DType::BF16 : DType::FP16))
        for (const auto& shape : testing::strided_shapes(t, d))
          testing::check_strided_layouts(*k, shape, ++seed, &naive());
    // Padded and packed batches laid out by position ([B, N, H, D], [total, H, D]).
    for (int64_t d : testing::choices_for_run(head_dims(*k), int64_t{128}))
      testing::check_varlen_by_position(*k, d, seed += 10);
  }
  for (const KernelDesc& k : {forced_splits_kernel(run_forced_splits<7>), v6_forced_splits_kernel(run_v6_forced_splits<2>),
                              v8_forced_split_kernel(run_v8_forced_split<3, 2>)})
    if (testing::runs_here(k))
      for (int64_t d : {64, 128})
        for (const auto& shape : testing::strided_shapes(DType::FP16, d))
          testing::check_strided_layouts(k, shape, ++seed, &naive());
  if (testing::runs_here(kFlashTmaV9))
    for (const auto& shape : testing::strided_shapes(DType::FP8_E4M3, 128))
      testing::check_strided_layouts(kFlashTmaV9, shape, ++seed);
}

FS_GPU_TEST_CASE("stage07 attention every version: Q K V and O of more than 2^31 elements") {
  FS_SKIP_WITHOUT_GPU();
  if (testing::sanitizer_sizes()) {
    // 4.3 GB per tensor: minutes under a sanitizer, and the 64-bit offsets it exercises are the same
    // arithmetic the small cases run through.
    testing::record_skip();
    MESSAGE("SKIPPED under the sanitizer: tensors of 2^31 elements");
    return;
  }
  // B·H = 16400 heads of 1024 × 128: 2,149,580,800 elements per tensor, 2^31 + 2,097,152. The fp64
  // reference covers the first and the last head, which starts past element 2^31 of Q, K, V and O
  // (TMA addresses it as plane 16399 of the maps; O and LSE are stored with 64-bit offsets). No naive
  // baseline here: its N × N scores for every head would take 69 GB.
  const AttentionParams shape = attention_shape(2, 8200, 1024, 1024, 128, DType::FP16, true);
  AttentionFixture problem(shape, 7990, /*max_heads=*/2);
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    INFO(k->qualified());
    const AttentionCheck c = problem.run(*k);
    REQUIRE_MESSAGE(c.status == Status::Success, std::string(status_name(c.status)));
    MESSAGE(k->qualified(), "  O: ", c.o.str(), "  LSE: ", c.lse.str());
    CHECK(c.heads_checked == 2);
    CHECK(c.passed(attention_tolerance(DType::FP16), lse_tolerance(DType::FP16)));
  }
  // v9: the same sizes in fp8 (O in bf16, Vᵀ's workspace of as many bytes as V).
  if (!testing::runs_here(kFlashTmaV9)) return;
  const AttentionParams fp8 = attention_shape(2, 8200, 1024, 1024, 128, DType::FP8_E4M3, true);
  AttentionFixture fp8_problem(fp8, 7991, /*max_heads=*/2);
  const AttentionCheck c = fp8_problem.run(kFlashTmaV9);
  REQUIRE_MESSAGE(c.status == Status::Success, std::string(status_name(c.status)));
  MESSAGE("stage07/attention/v9  O: ", c.o.str(), "  LSE: ", c.lse.str());
  CHECK(c.heads_checked == 2);
  CHECK(c.passed(attention_tolerance(DType::FP8_E4M3), lse_tolerance(DType::FP8_E4M3)));
}

FS_GPU_TEST_CASE("stage07 attention every version rejects bad inputs and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  const AttentionParams ok = attention_shape(2, 2, 17, 40, 64, DType::FP16);
  DeviceBuffer<int32_t> lens(std::vector<int32_t>{17, 5});
  DeviceBuffer<int32_t> cu_q(std::vector<int32_t>{0, 10, 17});
  DeviceBuffer<int32_t> cu_k(std::vector<int32_t>{0, 5, 40});
  const std::vector<int32_t> host_lens{17, 5};
  for (const KernelDesc* k : kHalf) {
    testing::check_rejects_bad_inputs(*k, ok);
    auto rejected = [&](const std::function<void(AttentionParams&)>& bad, Status expected) {
      testing::check_rejected(*k, ok, bad, expected);
    };
    rejected([](AttentionParams& p) { p.head_dim = 32; }, Status::UnsupportedHeadDim);
    rejected([](AttentionParams& p) { p.head_dim = 512; }, Status::UnsupportedHeadDim);
    rejected([](AttentionParams& p) { p.dtype = FS_FP32; }, Status::UnsupportedDtype);
    // 8-byte aligned is not enough: a TMA tensor's base must be 16-byte aligned.
    rejected([](AttentionParams& p) { p.k = static_cast<const char*>(p.k) + 8; }, Status::MisalignedPointer);
    rejected([](AttentionParams& p) { p.o = static_cast<char*>(p.o) + 2; }, Status::MisalignedPointer);
    // Variable-length fields that do not describe one layout: named, nothing written.
    rejected([&](AttentionParams& p) { p.seq_lens = lens.get(), p.cu_seqlens_q = cu_q.get(), p.cu_seqlens_k = cu_k.get(); },
             Status::InvalidSeqLens);
    rejected([&](AttentionParams& p) { p.cu_seqlens_k = cu_k.get(); }, Status::InvalidSeqLens);
    // Lengths in host memory: the kernels read them on the device.
    rejected([&](AttentionParams& p) { p.seq_lens = host_lens.data(); }, Status::InvalidSeqLens);
    // Strides that are negative, overlap or break TMA's 16 bytes.
    testing::check_layout_refusals(*k, ok);
  }
  // v9: the same bad inputs on an fp8 problem, and what it does not take: D = 64, 16-bit inputs, lengths.
  const KernelDesc& v9 = kFlashTmaV9;
  const AttentionParams fp8 = attention_shape(2, 2, 17, 40, 128, DType::FP8_E4M3);
  testing::check_rejects_bad_inputs(v9, fp8);
  auto rejected = [&](const std::function<void(AttentionParams&)>& bad, Status expected) {
    testing::check_rejected(v9, fp8, bad, expected);
  };
  rejected([](AttentionParams& p) { p.head_dim = 64; }, Status::UnsupportedHeadDim);
  rejected([](AttentionParams& p) { p.dtype = FS_BF16, p.q_descale = p.k_descale = p.v_descale = 0.0f; },
           Status::UnsupportedDtype);
  rejected([](AttentionParams& p) { p.q_descale = -1.0f; }, Status::InvalidScale);
  rejected([](AttentionParams& p) { p.o = static_cast<char*>(p.o) + 2; }, Status::MisalignedPointer);
  rejected([&](AttentionParams& p) { p.seq_lens = lens.get(); }, Status::InvalidSeqLens);
  rejected([&](AttentionParams& p) { p.cu_seqlens_q = cu_q.get(), p.cu_seqlens_k = cu_k.get(); }, Status::InvalidSeqLens);
  testing::check_layout_refusals(v9, fp8);
}

FS_GPU_TEST_CASE("stage07 attention v5 v6 v8 and v11 refuse a split or grid they cannot launch and write nothing") {
  FS_SKIP_WITHOUT_GPU();
  AttentionFixture problem(attention_shape(2, 2, 17, 40, 64, DType::FP16), 1, /*max_heads=*/-1);
  // No split at all, a negative count, more than gridDim.y takes.
  for (AttentionRun run : {run_forced_splits<0>, run_forced_splits<-3>, run_forced_splits<65536>}) {
    Status returned = Status::Success;
    CHECK(problem.untouched_after(forced_splits_kernel(run), problem.params(), &returned));
    CHECK(returned == Status::InvalidSize);
  }
  AttentionParams grouped = attention_shape(2, 4, 17, 40, 64, DType::FP16);
  grouped.kv_heads = 2;
  AttentionFixture group_problem(grouped, 2, /*max_heads=*/-1);
  for (AttentionRun run : {run_v6_forced_splits<0>, run_v6_forced_splits<-3>, run_v6_forced_splits<65536>}) {
    Status returned = Status::Success;
    CHECK(group_problem.untouched_after(v6_forced_splits_kernel(run), group_problem.params(), &returned));
    CHECK(returned == Status::InvalidSize);
  }
  // No split, a negative count, a negative tail.
  for (AttentionRun run : {run_v8_forced_split<1, 0>, run_v8_forced_split<1, -3>, run_v8_forced_split<-1, 2>}) {
    Status returned = Status::Success;
    CHECK(problem.untouched_after(v8_forced_split_kernel(run), problem.params(), &returned));
    CHECK(returned == Status::InvalidSize);
  }
  // No persistent block, a negative count.
  for (AttentionRun run : {run_v11_forced_blocks<0>, run_v11_forced_blocks<-3>}) {
    Status returned = Status::Success;
    CHECK(problem.untouched_after(v11_forced_blocks_kernel(run), problem.params(), &returned));
    CHECK(returned == Status::InvalidSize);
  }
}

FS_GPU_TEST_CASE("stage07 attention every version reports FS_ERR_CUDA when the runtime refuses the work") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;  // elsewhere the device check answers first
    testing::check_reports_cuda_error(*k, attention_shape(1, 1, 17, 17, 64, DType::FP16));
  }
  if (testing::runs_here(kFlashTmaV9))
    testing::check_reports_cuda_error(kFlashTmaV9, attention_shape(1, 1, 17, 17, 128, DType::FP8_E4M3));
}
