// Stage 07 gemm tests: every version against the fp64 reference, exact on small-integer fp16 and bf16
// inputs, at M, N, K from 1, 17, 1000 in every pairing and 4097 in one dimension at a time (sampled
// reference rows there), for every transpose pair and every C type, with padded leading dimensions
// and with tight ones wherever those keep TMA's 16-byte rows; fractional inputs within the fp32
// tolerance; more tiles than SMs, so that a persistent version's blocks loop over several tiles each;
// every M from 1 to 129 and an odd number of tile-rows (a clustered version's second block past M);
// 16-bit C in 16-byte rows, the C v7–v12 write with TMA stores, at all of those sizes; alpha
// and beta (a NaN-poisoned C with beta = 0 must not leak through); and every status code a launcher
// can return, with C left untouched: TMA's alignment refused by name, the device check and the
// clustered grid decided on made-up GPUs (CPU). The int8 version (v6) the same way in its one
// layout, A stored M×K and B N×K, exact over the whole int8 range, and the other three layouts refused
// by name.
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "common/lib/device.h"
#include "common/tools/check.h"
#include "common/tools/gemm_check.h"
#include "common/tools/gemm_tests.h"
#include "common/tools/gpu_test.h"
#include "stages/07_tuned_tma/gemm/versions.h"

using namespace fs;
using testing::check_gemm;
using testing::Mnk;
using testing::padded_ld;
using testing::sized;

namespace {

const std::vector<const KernelDesc*> kAll = find_kernels("stage07/gemm");

// The versions that take `ab` as inputs: v1–v5, v7–v12 fp16 and bf16, v6 int8.
std::vector<const KernelDesc*> taking(DType ab) {
  std::vector<const KernelDesc*> out;
  for (const KernelDesc* k : kAll)
    if (in_set(k->gemm.ab_dtypes, int32_t(ab))) out.push_back(k);
  return out;
}
const std::vector<const KernelDesc*> kHalf = taking(DType::FP16), kInt8 = taking(DType::INT8);

// int8 in, int32 out, A stored M×K, B stored N×K: the one problem v6 takes.
constexpr int kTN = 1;  // sized()'s transposes: bit 1 A, bit 0 B

// Small integers in [-2, 2]: every product and sum is exact in fp32, so C must equal the reference
// rounded to C's type.
GemmCase integer_case(DType ab, DType c) {
  GemmCase g = gemm_case(1, 1, 1, ab, c);
  g.integers = true;
  return g;
}

// Each of M, N, K takes 1, 17 and L = 1000 in every pairing (L = 300 under the sanitizer: still several
// 64-deep k-tiles and a tail in every direction); 300×520×200 adds whole interior tiles beside tails.
std::vector<Mnk> odd_sizes() {
  const int64_t L = testing::size_for_run(1000, 300);
  return {{1, 1, 1},  {17, 17, 17}, {1, 17, L}, {17, L, 1},     {L, 1, 17},
          {L, 17, L}, {17, L, L},   {L, L, 17}, {300, 520, 200}};
}

// 4097 (one past a tile boundary: 33 tiles of 128 in M, 33 of 128 or 17 of 256 in N, 65 k-tiles in K)
// in one dimension at a time; not under the sanitizer, whose sizes above already cover every path.
std::vector<Mnk> long_sizes() {
  if (testing::sanitizer_sizes()) return {};
  return {{4097, 33, 200}, {33, 4097, 200}, {65, 33, 4097}};
}

// The stored row of each operand, in elements.
int64_t a_row(const GemmParams& s) { return s.trans_a ? s.m : s.k; }
int64_t b_row(const GemmParams& s) { return s.trans_b ? s.k : s.n; }

// Tight leading dimensions keep TMA's 16-byte rows only where the row is a multiple of 16 bytes (8
// 16-bit elements, 16 int8).
bool tight_is_aligned(const GemmParams& s) {
  const int64_t per_16_bytes = 16 / int64_t(dtype_size(DType(s.ab_dtype)));
  return a_row(s) % per_16_bytes == 0 && b_row(s) % per_16_bytes == 0;
}

// Padded leading dimensions (multiples of 16 elements, NaN in the padding), C's row padded too.
GemmCase padded(GemmCase g) {
  g.shape.lda = padded_ld(a_row(g.shape));
  g.shape.ldb = padded_ld(b_row(g.shape));
  g.shape.ldc = g.shape.n + 3;
  return g;
}

// padded(), with C's rows padded to a multiple of 16 elements instead (32 bytes: 16-byte rows for
// 16-bit C, the C a TMA store writes), still with NaN in the padding.
GemmCase padded_c16(GemmCase g) {
  g = padded(g);
  g.shape.ldc = padded_ld(g.shape.n);
  return g;
}

// Every size, every transpose pair the version takes; padded leading dimensions always, tight ones
// where TMA takes them. At M = 4097 64 rows of C are checked against fp64 (the first, the last and 62
// between), else all.
void check_sizes(const KernelDesc& kernel, const GemmCase& base, uint64_t seed) {
  std::vector<Mnk> sizes = odd_sizes();
  for (const Mnk& s : long_sizes()) sizes.push_back(s);
  for (const Mnk& mnk : sizes)
    for (int t = 0; t < 4; ++t) {
      if (!kernel.gemm.takes_layout(t & 2, t & 1)) continue;
      const GemmCase g = sized(base, mnk, t);
      const int64_t rows = mnk.m > 1000 ? 64 : 0;
      check_gemm(kernel, padded(g), ++seed, rows);
      if (tight_is_aligned(g.shape)) check_gemm(kernel, g, ++seed, rows);
    }
}

// A 17×17×17 problem the version takes, padded: fp16 → fp32 untransposed, or for v6 int8 → int32
// with B stored N×K. The base of the bad-input checks.
GemmCase ok_case(const KernelDesc& k) {
  if (in_set(k.gemm.ab_dtypes, FS_INT8))
    return padded(sized(integer_case(DType::INT8, DType::INT32), Mnk{17, 17, 17}, kTN));
  return padded(sized(integer_case(DType::FP16, DType::FP32), Mnk{17, 17, 17}, 0));
}

// Host-only problems: validation runs before any CUDA call, so fake non-null pointers do, A and B
// 16-byte aligned, C 4 bytes past a boundary (as much as any C needs: its element alignment).
GemmParams fake_params(DType ab, DType c, const Mnk& mnk, bool trans_b, int64_t lda, int64_t ldb, int64_t ldc) {
  GemmParams p{};
  p.m = mnk.m, p.n = mnk.n, p.k = mnk.k;
  p.trans_b = trans_b;
  p.ab_dtype = int32_t(ab), p.c_dtype = int32_t(c);
  p.alpha = 1.0f;
  p.a = reinterpret_cast<void*>(std::uintptr_t(0x10000));
  p.b = reinterpret_cast<void*>(std::uintptr_t(0x20000));
  p.c = reinterpret_cast<void*>(std::uintptr_t(0x30004));
  p.lda = lda, p.ldb = ldb, p.ldc = ldc;
  return p;
}

// `p` changed by `change`, as the version's validation judges it.
Status validate_changed(const KernelDesc& k, GemmParams p, const std::function<void(GemmParams&)>& change) {
  change(p);
  return validate(p, k.gemm);
}

}  // namespace

FS_CPU_TEST_CASE("stage07 gemm validation refuses what TMA cannot read by name before any launch") {
  REQUIRE(!kHalf.empty());
  // 48- and 80-byte rows; ldc is free.
  const GemmParams p = fake_params(DType::FP16, DType::FP32, Mnk{17, 40, 24}, false, 24, 40, 41);
  for (const KernelDesc* k : kHalf) {
    INFO(k->qualified());
    auto with = [&](const std::function<void(GemmParams&)>& change) { return validate_changed(*k, p, change); };
    CHECK(with([](GemmParams&) {}) == Status::Success);
    CHECK(with([](GemmParams& q) { q.ab_dtype = FS_BF16, q.c_dtype = FS_BF16; }) == Status::Success);
    CHECK(with([](GemmParams& q) { q.trans_a = 1, q.lda = 24; }) == Status::Success);  // K×M, 48-byte rows
    CHECK(with([](GemmParams& q) { q.trans_b = 1, q.ldb = 32; }) == Status::Success);  // N×K, 64-byte rows
    // Tight rows of 17 or 20 elements are 34 and 40 bytes: not multiples of 16.
    CHECK(with([](GemmParams& q) { q.k = 17, q.lda = 17; }) == Status::InvalidLeadingDim);
    CHECK(with([](GemmParams& q) { q.ldb = 44; }) == Status::InvalidLeadingDim);
    CHECK(with([](GemmParams& q) { q.trans_a = 1, q.lda = 20; }) == Status::InvalidLeadingDim);
    // Bases 8 bytes past a 16-byte boundary: element-aligned, not TMA-aligned.
    CHECK(with([](GemmParams& q) { q.a = static_cast<const char*>(q.a) + 8; }) == Status::MisalignedPointer);
    CHECK(with([](GemmParams& q) { q.b = static_cast<const char*>(q.b) + 2; }) == Status::MisalignedPointer);
    CHECK(with([](GemmParams& q) { q.ab_dtype = FS_FP32, q.lda = 24; }) == Status::UnsupportedDtype);
    CHECK(with([](GemmParams& q) { q.ab_dtype = FS_INT8, q.c_dtype = FS_INT32; }) == Status::UnsupportedDtype);
  }
  CHECK(fs_gemm_tma_v1(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_tma_v2(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_tma_v3(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_tma_v4(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_tma_v5(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_tma_v7(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_tma_v8(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_tma_v9(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_tma_v10(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_tma_v11(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_tma_v12(nullptr, nullptr) == FS_ERR_NULL_POINTER);
}

FS_CPU_TEST_CASE("stage07 gemm int8 takes A stored MxK and B stored NxK alone in 16-byte rows and refuses the rest by name") {
  REQUIRE(!kInt8.empty());
  // B stored N×K; 48- and 64-byte rows; ldc is free.
  const GemmParams p = fake_params(DType::INT8, DType::INT32, Mnk{17, 40, 48}, true, 48, 64, 41);
  for (const KernelDesc* k : kInt8) {
    INFO(k->qualified());
    auto with = [&](const std::function<void(GemmParams&)>& change) { return validate_changed(*k, p, change); };
    CHECK(with([](GemmParams&) {}) == Status::Success);
    CHECK(with([](GemmParams& q) { q.k = 1; }) == Status::Success);  // K = 1 in rows of 48 bytes
    // The other three layouts, with leading dimensions that would fit each (48 and 64 cover M, N, K).
    CHECK(with([](GemmParams& q) { q.trans_b = 0; }) == Status::UnsupportedLayout);
    CHECK(with([](GemmParams& q) { q.trans_a = 1; }) == Status::UnsupportedLayout);
    CHECK(with([](GemmParams& q) { q.trans_a = 1, q.trans_b = 0; }) == Status::UnsupportedLayout);
    // Tight rows of 17 or 40 int8 are 17 and 40 bytes: not multiples of 16. 32 and 64 are.
    CHECK(with([](GemmParams& q) { q.k = 17, q.lda = 17; }) == Status::InvalidLeadingDim);
    CHECK(with([](GemmParams& q) { q.k = 40, q.ldb = 40; }) == Status::InvalidLeadingDim);
    CHECK(with([](GemmParams& q) { q.k = 32, q.lda = 32, q.ldb = 32; }) == Status::Success);
    // Bases off a 16-byte boundary: element-aligned (an int8 always is), not TMA-aligned.
    CHECK(with([](GemmParams& q) { q.a = static_cast<const char*>(q.a) + 8; }) == Status::MisalignedPointer);
    CHECK(with([](GemmParams& q) { q.b = static_cast<const char*>(q.b) + 1; }) == Status::MisalignedPointer);
    CHECK(with([](GemmParams& q) { q.c = static_cast<char*>(q.c) + 2; }) == Status::MisalignedPointer);
    // int32 C only; int8 A and B only.
    CHECK(with([](GemmParams& q) { q.c_dtype = FS_FP32; }) == Status::UnsupportedDtype);
    CHECK(with([](GemmParams& q) { q.ab_dtype = FS_FP16, q.c_dtype = FS_FP32; }) == Status::UnsupportedDtype);
  }
  CHECK(fs_gemm_tma_v6(nullptr, nullptr) == FS_ERR_NULL_POINTER);
}

FS_CPU_TEST_CASE("stage07 gemm runs on sm_90 alone: FS_ERR_UNSUPPORTED_DEVICE on every other GPU") {
  // sm_90a code runs on compute capability 9.0 and nothing else: not Ampere or Ada, not Blackwell.
  for (const KernelDesc* k : kAll) {
    INFO(k->qualified());
    CHECK(std::vector<int>(k->info.archs, k->info.archs + k->info.num_archs) == std::vector<int>{90});
    CHECK(k->info.ptx_arch == 0);  // no PTX: compute_90a's would run on 9.0 alone too
    CHECK(device_supports(k->info, testing::made_up_gpu(90, 227)) == Status::Success);
    for (int cc : {80, 86, 89, 100, 120}) {
      INFO("sm_", cc);
      CHECK(device_supports(k->info, testing::made_up_gpu(cc, 227)) == Status::UnsupportedDevice);
      CHECK(!unsupported_reason(k->info, testing::made_up_gpu(cc, 227)).empty());
    }
    // A 9.0 GPU that allowed less shared memory per block than a block asks for would be refused too.
    CHECK(device_supports(k->info, testing::made_up_gpu(90, k->info.smem_bytes / 1024 - 1)) == Status::UnsupportedDevice);
  }
}

FS_CPU_TEST_CASE("stage07 gemm clustered grid takes as many clusters as fit with a cluster tile each and refuses a GPU that holds none") {
  // v5 (clusters of 2): an H100's 66 clusters at once for 8192² (32 × 32 cluster tiles of 256 × 256) …
  unsigned blocks = 0;
  CHECK(gemm_tma::cluster_grid(32 * 32, 66, 2, &blocks) == Status::Success);
  CHECK(blocks == 132);
  // … never a cluster without a tile (17 × 17: one cluster tile) …
  CHECK(gemm_tma::cluster_grid(1, 66, 2, &blocks) == Status::Success);
  CHECK(blocks == 2);
  // … fewer clusters than SM pairs where the GPU holds fewer at once …
  CHECK(gemm_tma::cluster_grid(240, 7, 2, &blocks) == Status::Success);
  CHECK(blocks == 14);
  // … and a GPU that cannot hold one cluster: FS_ERR_UNSUPPORTED_DEVICE, nothing decided.
  blocks = 5;
  CHECK(gemm_tma::cluster_grid(240, 0, 2, &blocks) == Status::UnsupportedDevice);
  CHECK(blocks == 5);
}

FS_GPU_TEST_CASE("stage07 gemm fp16 is exact on small integers with fp32 or fp16 or bf16 output in every transpose") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 70000;
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    for (DType c : {DType::FP32, DType::FP16, DType::BF16}) check_sizes(*k, integer_case(DType::FP16, c), seed += 1000);
  }
}

FS_GPU_TEST_CASE("stage07 gemm bf16 is exact on small integers with fp32 or bf16 or fp16 output in every transpose") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 72000;
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    for (DType c : {DType::FP32, DType::BF16, DType::FP16}) check_sizes(*k, integer_case(DType::BF16, c), seed += 1000);
  }
}

FS_GPU_TEST_CASE("stage07 gemm stays within the fp32 tolerance on fractional inputs") {
  FS_SKIP_WITHOUT_GPU();
  // fp16 and bf16 inputs are exact in fp64, their products exact in fp32: the error is the fp32
  // accumulation's, as in stage 06.
  uint64_t seed = 75000;
  const int64_t L = testing::size_for_run(1000, 300);
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    for (DType ab : {DType::FP16, DType::BF16})
      for (const Mnk& mnk : {Mnk{L, 17, L}, Mnk{300, 520, 200}})
        for (int t = 0; t < 4; ++t) {
          GemmCase g = padded(sized(gemm_case(1, 1, 1, ab, DType::FP32), mnk, t));
          check_gemm(*k, g, ++seed);
        }
  }
}

FS_GPU_TEST_CASE("stage07 gemm is exact with more tiles than SMs where persistent blocks loop over several tiles") {
  FS_SKIP_WITHOUT_GPU();
  // 3000 × 5000 is 24 × 20 = 480 tiles of 128×256 (v4: 3 or 4 per block on 132 SMs; its schedule's last
  // group 8 tile-rows, a tail in M and N). K = 17: one k-tile per tile, the producer up to four tiles
  // ahead; 200: four, as many as the stages; 300: five with a tail, so tile and stage boundaries drift
  // apart. The sizes above stay below 132 tiles: none reaches a block's second tile. Under the
  // sanitizer K = 300 alone, untransposed.
  uint64_t seed = 76000;
  const bool sanitizer = testing::sanitizer_sizes();
  const std::vector<int64_t> ks = sanitizer ? std::vector<int64_t>{300} : std::vector<int64_t>{17, 200, 300};
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    for (DType ab : {DType::FP16, DType::BF16})
      for (int64_t kk : ks)
        for (int t = 0; t < (sanitizer ? 1 : 4); ++t)
          check_gemm(*k, padded(sized(integer_case(ab, ab), Mnk{3000, 5000, kk}, t)), ++seed, /*check_rows=*/64);
  }
}

FS_GPU_TEST_CASE("stage07 gemm is exact at every M from 1 to 129 and with an odd number of tile-rows") {
  FS_SKIP_WITHOUT_GPU();
  // M = 1 … 129: every row count a 128-row tile can hold, and one past it. In a cluster of two along M
  // (v5) the second block's tile starts at row 128: wholly past M up to 128 (it loads zeros, runs the
  // protocol, stores nothing), one row inside at 129. N = 300: a 256-wide tile and a tail; K = 100:
  // two k-tiles, the second a tail; the transposes in turn (t = M % 4). Then 2900 × 5000: 23 tile-rows
  // (odd: the last cluster-row's second blocks lie past M), 240 cluster tiles of 256 × 256, 3 or 4 per
  // cluster of an H100, the schedule's last group 4 cluster-rows; K = 300, every transpose. Under the
  // sanitizer every 16th M, and 2900 × 5000 untransposed.
  uint64_t seed = 77000;
  const bool sanitizer = testing::sanitizer_sizes();
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    for (int64_t m = 1; m <= 129; m += sanitizer ? 16 : 1)
      check_gemm(*k, padded(sized(integer_case(DType::FP16, DType::FP32), Mnk{m, 300, 100}, int(m % 4))), ++seed);
    for (int t = 0; t < (sanitizer ? 1 : 4); ++t)
      check_gemm(*k, padded(sized(integer_case(DType::BF16, DType::BF16), Mnk{2900, 5000, 300}, t)), ++seed,
                 /*check_rows=*/64);
  }
}

FS_GPU_TEST_CASE("stage07 gemm is exact with 16-bit C in 16-byte rows at every size: across tiles and past M") {
  FS_SKIP_WITHOUT_GPU();
  // The C a TMA store can write: fp16 or bf16, beta = 0, base and rows 16-byte multiples. v7–v12
  // write it through shared memory and TMA stores clipped at M and N where N is a multiple of 8 (the
  // other versions, and v7–v12 elsewhere, from registers: a ragged N's padding must stay untouched too).
  // alpha = −2 in two transposes, applied before the one rounding, and 1 in the other two (v10 to v12
  // round without multiplying then); C's NaN padding must stay untouched. The sizes of
  // check_sizes, with C padded to 16 elements and tight where N is a multiple of 8; M from 1 to 257
  // around the tile's 64-row warpgroup halves, the 128-row block and the 256-row cluster tile (N = 300:
  // a 256-wide tile and a tail); then more tiles than SMs (3000 × 5000) and an odd number of tile-rows
  // (2900 × 5000: the last cluster-row's second blocks store nothing), with K = 300 (5 k-tiles), 40 (one:
  // v9–v11 store a tile's C during the next tile's first two k-tiles and v12 during its first four, so
  // one k-tile leaves rounds for the tile's end), 100 (two, the second a tail; v12 leaves two rounds for
  // the tile's end) and 150 (three, the third a tail; v12 leaves one). Under the sanitizer the small
  // sizes in one transpose each and the large ones untransposed.
  uint64_t seed = 79000;
  const bool sanitizer = testing::sanitizer_sizes();
  std::vector<Mnk> sizes = odd_sizes();
  for (const Mnk& s : long_sizes()) sizes.push_back(s);
  for (int64_t m : {1, 63, 64, 65, 127, 128, 129, 255, 256, 257}) sizes.push_back(Mnk{m, 300, 100});
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    for (DType ab : {DType::FP16, DType::BF16}) {
      for (const Mnk& mnk : sizes)
        for (int t = 0; t < 4; ++t) {
          if (sanitizer && t != int(mnk.m % 4)) continue;
          GemmCase g = sized(integer_case(ab, ab), mnk, t);
          g.shape.alpha = t % 2 ? 1.0f : -2.0f;
          const int64_t rows = mnk.m > 1000 ? 64 : 0;
          check_gemm(*k, padded_c16(g), ++seed, rows);
          if (mnk.n % 8 == 0 && tight_is_aligned(g.shape)) check_gemm(*k, g, ++seed, rows);
        }
      for (const Mnk& mnk : {Mnk{3000, 5000, 300}, Mnk{2900, 5000, 300}, Mnk{3000, 5000, 40}, Mnk{2900, 5000, 100},
                             Mnk{3000, 5000, 150}})
        for (int t = 0; t < (sanitizer ? 1 : 4); ++t) {
          GemmCase g = padded_c16(sized(integer_case(ab, ab), mnk, t));
          g.shape.alpha = t % 2 ? 1.0f : -2.0f;
          check_gemm(*k, g, ++seed, /*check_rows=*/64);
        }
    }
  }
}

FS_GPU_TEST_CASE("stage07 gemm alpha and beta read C when beta is not zero") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 78000;
  const int64_t L = testing::size_for_run(1000, 300);
  struct AlphaBeta {
    DType ab, c;
    float alpha, beta;
  };
  const AlphaBeta runs[] = {{DType::FP16, DType::FP32, 2.0f, -3.0f},
                            {DType::FP16, DType::FP16, -1.0f, 2.0f},
                            {DType::BF16, DType::BF16, -1.0f, 2.0f},
                            {DType::FP16, DType::FP32, 0.0f, 1.0f}};  // alpha = 0 keeps beta·C alone
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    for (const AlphaBeta& r : runs)
      for (const Mnk& mnk : {Mnk{17, L, 24}, Mnk{300, 520, 200}})
        for (int t = 0; t < 4; ++t) {
          GemmCase g = padded(sized(integer_case(r.ab, r.c), mnk, t));
          g.shape.alpha = r.alpha;
          g.shape.beta = r.beta;
          g.shape.ldc = g.shape.n + 5;  // odd: C takes the element-wise epilogue, not pair stores
          check_gemm(*k, g, ++seed);
        }
  }
}

FS_GPU_TEST_CASE("stage07 gemm refuses rows and bases TMA cannot read — and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kHalf) {
    if (!testing::runs_here(*k)) continue;
    for (int t = 0; t < 4; ++t) {
      // 17×17×17 tight: every stored row 34 bytes.
      const GemmCase tight = sized(integer_case(DType::FP16, DType::FP32), Mnk{17, 17, 17}, t);
      GemmCase ok = padded(tight);
      GemmFixture probe(ok, 1, /*check_rows=*/-1);
      const GemmParams shape = probe.params();
      testing::check_gemm_rejected(*k, ok, [&](GemmParams& p) { p.lda = a_row(shape); }, Status::InvalidLeadingDim);
      testing::check_gemm_rejected(*k, ok, [&](GemmParams& p) { p.ldb = b_row(shape) + 1; }, Status::InvalidLeadingDim);
      // One element (2 bytes) into the buffer: element-aligned, not 16-byte aligned.
      GemmCase shifted = ok;
      shifted.shift = 1;
      GemmFixture problem(shifted, 2, /*check_rows=*/-1);
      Status returned = Status::Success;
      const bool untouched = problem.untouched_after(*k, problem.params(), &returned);
      INFO(k->qualified(), " ", describe(shifted), ": got ", status_name(returned));
      CHECK(returned == Status::MisalignedPointer);
      CHECK(untouched);
    }
  }
}

FS_GPU_TEST_CASE("stage07 gemm every version rejects bad inputs and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kAll) testing::check_gemm_rejects_bad_inputs(*k, ok_case(*k));
}

FS_GPU_TEST_CASE("stage07 gemm every version reports FS_ERR_CUDA when the runtime refuses the work") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kAll) {
    if (!testing::runs_here(*k)) continue;  // elsewhere the device check answers first
    testing::check_gemm_reports_cuda_error(*k, ok_case(*k));
  }
}

// ---- v6: int8 → int32, A stored M×K, B stored N×K ------------------------------------------------

FS_GPU_TEST_CASE("stage07 gemm int8 is exact over the whole int8 range at every size with B stored NxK") {
  FS_SKIP_WITHOUT_GPU();
  // int8 inputs drawn from all of [-128, 127]: every product and sum is exact in int32 (|sum| <= K·2^14),
  // so C must equal the fp64 reference. K = 1 and 17 leave most of the single 128-deep k-tile to TMA's
  // zero fill; 1000 and 4097 end in a partial one. Tight rows only where K is a multiple of 16.
  uint64_t seed = 80000;
  for (const KernelDesc* k : kInt8) {
    if (!testing::runs_here(*k)) continue;
    check_sizes(*k, integer_case(DType::INT8, DType::INT32), seed);
  }
}

FS_GPU_TEST_CASE("stage07 gemm int8 is exact with more tiles than SMs where persistent blocks loop over several tiles") {
  FS_SKIP_WITHOUT_GPU();
  // 3000 × 5000: 480 tiles of 128×256, 3 or 4 per block on 132 SMs. K = 17: one k-tile per tile;
  // 512: four 128-deep k-tiles, as many as the stages; 600: five with a tail, so tile and stage
  // boundaries drift apart. Under the sanitizer K = 600 alone.
  uint64_t seed = 81000;
  const std::vector<int64_t> ks = testing::choices_for_run<int64_t>({17, 512, 600}, 600);
  for (const KernelDesc* k : kInt8) {
    if (!testing::runs_here(*k)) continue;
    for (int64_t kk : ks)
      check_gemm(*k, padded(sized(integer_case(DType::INT8, DType::INT32), Mnk{3000, 5000, kk}, kTN)), ++seed,
                 /*check_rows=*/64);
  }
}

FS_GPU_TEST_CASE("stage07 gemm int8 alpha and beta read C when beta is not zero and round as stage 06's does") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 82000;
  const int64_t L = testing::size_for_run(1000, 300);
  struct AlphaBeta {
    float alpha, beta;
  };
  const AlphaBeta runs[] = {{3.0f, -2.0f}, {-1.0f, 2.0f}, {0.0f, 1.0f}};  // alpha = 0 keeps beta·C alone
  for (const KernelDesc* k : kInt8) {
    if (!testing::runs_here(*k)) continue;
    for (const AlphaBeta& r : runs)
      for (const Mnk& mnk : {Mnk{17, L, 48}, Mnk{300, 520, 200}})
        for (int64_t extra : {0, 5}) {  // ldc = N + 3 (even for odd N) or N + 5: pair stores and single ones
          GemmCase g = padded(sized(integer_case(DType::INT8, DType::INT32), mnk, kTN));
          g.shape.alpha = r.alpha;
          g.shape.beta = r.beta;
          if (extra) g.shape.ldc = g.shape.n + extra;
          check_gemm(*k, g, ++seed);
        }
  }
}

FS_GPU_TEST_CASE("stage07 gemm int8 refuses the other layouts and rows or bases TMA cannot read — and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kInt8) {
    if (!testing::runs_here(*k)) continue;
    const GemmCase ok = ok_case(*k);  // 17×17×17, lda = ldb = 48: wide enough for any layout's rows
    // A transposed, B untransposed, or both: integer wgmma cannot read them, named before any launch.
    testing::check_gemm_rejected(*k, ok, [](GemmParams& p) { p.trans_b = 0; }, Status::UnsupportedLayout);
    testing::check_gemm_rejected(*k, ok, [](GemmParams& p) { p.trans_a = 1; }, Status::UnsupportedLayout);
    testing::check_gemm_rejected(*k, ok, [](GemmParams& p) { p.trans_a = 1, p.trans_b = 0; },
                                 Status::UnsupportedLayout);
    // Rows of 17 and 18 bytes: not multiples of 16.
    testing::check_gemm_rejected(*k, ok, [](GemmParams& p) { p.lda = 17; }, Status::InvalidLeadingDim);
    testing::check_gemm_rejected(*k, ok, [](GemmParams& p) { p.ldb = 18; }, Status::InvalidLeadingDim);
    // One element (1 byte) into the buffers: A and B off TMA's 16 bytes (C, one int32 in, stays aligned).
    GemmCase shifted = ok;
    shifted.shift = 1;
    GemmFixture problem(shifted, 2, /*check_rows=*/-1);
    Status returned = Status::Success;
    const bool untouched = problem.untouched_after(*k, problem.params(), &returned);
    INFO(k->qualified(), " ", describe(shifted), ": got ", status_name(returned));
    CHECK(returned == Status::MisalignedPointer);
    CHECK(untouched);
  }
}
