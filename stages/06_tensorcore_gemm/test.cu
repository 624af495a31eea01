// Stage 06 tests: every version against the fp64 reference at odd sizes (M, N, K from 1, 17, 1000), for
// every transpose pair, with tight and padded leading dimensions; exact on integer inputs for fp16,
// bf16 and int8; alpha and beta (a NaN-poisoned C with beta = 0 must not leak through); the element-copy
// fallbacks and v9/v10's 8- and 4-byte copies; and every status code a launcher can return, with C
// left untouched.
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/lib/cuda_check.h"
#include "common/tools/check.h"
#include "common/tools/gemm_check.h"
#include "common/tools/gemm_tests.h"
#include "common/tools/gpu_test.h"
#include "stages/06_tensorcore_gemm/versions.h"

using namespace fs;
using testing::check_gemm;
using testing::Mnk;
using testing::padded_ld;
using testing::sized;

namespace {

// The stage's versions from the registry, grouped by the inputs they take.
std::vector<const KernelDesc*> taking(DType ab) {
  std::vector<const KernelDesc*> out;
  for (const KernelDesc* k : find_kernels("stage06"))
    if (in_set(k->gemm.ab_dtypes, int32_t(ab))) out.push_back(k);
  return out;
}
const std::vector<const KernelDesc*> kSimt = taking(DType::FP32), kFp16 = taking(DType::FP16),
                                     kBf16 = taking(DType::BF16), kInt8 = taking(DType::INT8),
                                     kAll = find_kernels("stage06");

// The versions that copy with cp.async as wide as the rows allow (16, 8 or 4 bytes): v9, v10, and v11,
// v12, v13, v14 (v9 or v10 itself where rows are not 16-byte aligned), v15 (its own kernel at 8 bytes,
// v10 at 4), v16 (rows narrower than 16 bytes repacked, read 8, 4 or 1 byte at a time).
bool picks_copy_width(const KernelDesc& k) {
  const std::string v = k.info.version;
  return v == "v9" || v == "v10" || v == "v11" || v == "v12" || v == "v13" || v == "v14" || v == "v15" ||
         v == "v16";
}

// A dtype the mask lacks: the code a launcher must refuse.
int32_t not_in(uint32_t mask) {
  for (DType t : kAllDtypes)
    if (!in_set(mask, int32_t(t))) return int32_t(t);
  return -1;
}

// Each of M, N, K takes 1, 17 and L = 1000, in every pairing; 300×520×200 adds whole interior tiles
// in both directions next to tails, and K = L runs the 3- and 4-stage pipelines (v7–v16) around several
// times. 384×512×320 has no tail at all: every block copies every k-tile whole (v12–v16). 301×517×320
// copies whole k-tiles past odd edges: v14–v16 move a tile back inside M, but not inside an odd N (its
// column pairs would start on an odd column; 1000×517×333 found it, through v16's repacked K = 384).
// Under the sanitizer L is 300: still several 64-deep k-tiles and a tail in every direction.
std::vector<Mnk> odd_sizes() {
  const int64_t L = testing::size_for_run(1000, 300);
  return {{1, 1, 1},  {17, 17, 17}, {1, 17, L},      {17, L, 1},      {L, 1, 17},     {L, 17, L},
          {17, L, L}, {L, L, 17},   {300, 520, 200}, {384, 512, 320}, {301, 517, 320}};
}

// What a version is checked on: its input type, fp32 C (int32 for int8), exact integer inputs for the
// tensor-core versions.
GemmCase base_case(const KernelDesc& k) {
  const DType ab = in_set(k.gemm.ab_dtypes, FS_FP32) ? DType::FP32 : in_set(k.gemm.ab_dtypes, FS_FP16) ? DType::FP16
                                                                                                       : DType::INT8;
  GemmCase g = gemm_case(1, 1, 1, ab, ab == DType::INT8 ? DType::INT32 : DType::FP32);
  g.integers = ab != DType::FP32;  // fp16 and int8: exact checks
  return g;
}

// Every odd size, every transpose pair, tight and padded leading dimensions.
void check_odd_sizes(const KernelDesc& kernel, const GemmCase& base, uint64_t seed) {
  for (const Mnk& mnk : odd_sizes())
    for (int t = 0; t < 4; ++t)
      for (bool padded : {false, true}) {
        GemmCase g = sized(base, mnk, t);
        if (padded) {
          GemmParams& s = g.shape;
          s.lda = padded_ld(s.trans_a ? s.m : s.k);
          s.ldb = padded_ld(s.trans_b ? s.k : s.n);
          s.ldc = s.n + 3;
        }
        check_gemm(kernel, g, ++seed);
      }
}

// alpha and beta ≠ 0 read C; each value is exact on integer inputs (alpha, beta integers).
void check_alpha_beta(const KernelDesc& kernel, GemmCase base, float alpha, float beta, uint64_t seed) {
  base.shape.alpha = alpha;
  base.shape.beta = beta;
  for (const Mnk& mnk : {Mnk{17, testing::size_for_run(1000, 300), 17}, Mnk{300, 520, 200}})
    for (int t = 0; t < 4; ++t) {
      GemmCase g = sized(base, mnk, t);
      g.shape.ldc = g.shape.n + 5;
      check_gemm(kernel, g, ++seed);
    }
}

}  // namespace

FS_CPU_TEST_CASE("stage06 validation returns each named code in order") {
  // Host-only: validation runs before any CUDA call, so fake (aligned, non-null) pointers do.
  GemmParams p{};
  p.m = p.n = p.k = 17;
  p.ab_dtype = p.c_dtype = FS_FP32;
  p.alpha = 1.0f;
  p.a = p.b = p.c = reinterpret_cast<void*>(std::uintptr_t(0x10000));
  p.lda = p.ldb = p.ldc = 17;
  const GemmSupport fp32{dtype_bit(DType::FP32), dtype_bit(DType::FP32)};
  CHECK(validate(p, fp32) == Status::Success);
  auto with = [&](const std::function<void(GemmParams&)>& change) {
    GemmParams q = p;
    change(q);
    return validate(q, fp32);
  };
  CHECK(with([](GemmParams& q) { q.b = nullptr; }) == Status::NullPointer);
  CHECK(with([](GemmParams& q) { q.b = nullptr; q.m = 0; }) == Status::NullPointer);  // nulls come first
  CHECK(with([](GemmParams& q) { q.k = -3; }) == Status::InvalidSize);
  CHECK(with([](GemmParams& q) { q.n = 0; q.ldc = 0; }) == Status::InvalidSize);      // sizes before ld
  CHECK(with([](GemmParams& q) { q.trans_a = 1; q.m = 18; }) == Status::InvalidLeadingDim);  // lda < M
  CHECK(with([](GemmParams& q) { q.trans_b = 1; q.ldb = 16; }) == Status::InvalidLeadingDim);  // ldb < K
  CHECK(with([](GemmParams& q) { q.ldc = 16; q.c_dtype = FS_FP16; }) == Status::InvalidLeadingDim);
  // M·ldc·4 bytes past 2^63: the product must not wrap into a small, valid-looking size.
  CHECK(with([](GemmParams& q) { q.m = int64_t(1) << 62; }) == Status::InvalidSize);
  CHECK(with([](GemmParams& q) { q.k = int64_t(1) << 62; q.lda = q.k; }) == Status::InvalidSize);
  CHECK(with([](GemmParams& q) { q.c_dtype = FS_INT32; }) == Status::UnsupportedDtype);
  CHECK(with([](GemmParams& q) { q.c_dtype = -1; }) == Status::UnsupportedDtype);
  CHECK(with([](GemmParams& q) { q.c_dtype = 99; }) == Status::UnsupportedDtype);
  CHECK(with([](GemmParams& q) { q.a = static_cast<const char*>(q.a) + 2; }) == Status::MisalignedPointer);
  CHECK(with([](GemmParams& q) { q.c = static_cast<char*>(q.c) + 1; }) == Status::MisalignedPointer);
  // The C entries reject a null params pointer.
  CHECK(fs_gemm_v1(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v7(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v8(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v9(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v10(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v11(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v12(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v13(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v14(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v15(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm_v16(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  // Every version validates before anything else (no GPU is touched on these paths).
  for (const KernelDesc* k : kAll) {
    INFO(k->qualified());
    GemmParams q = p;
    q.ab_dtype = base_case(*k).shape.ab_dtype;
    q.c_dtype = not_in(k->gemm.c_dtypes);  // a C type this version does not write
    CHECK(launch(*k, q, nullptr) == Status::UnsupportedDtype);
    q.k = 0;
    CHECK(launch(*k, q, nullptr) == Status::InvalidSize);
  }
}

FS_CPU_TEST_CASE("stage06 v11 lists its candidates (v9's configuration first) and each validates like any version") {
  REQUIRE(gemm_v11_num_candidates() >= 2);
  CHECK(gemm_v11_candidate_name(0) == "128x256x32 4 stages 8 warps 96KB");
  CHECK(gemm_v11_candidate(-1) == nullptr);
  CHECK(gemm_v11_candidate(gemm_v11_num_candidates()) == nullptr);
  CHECK(gemm_v11_candidate_name(gemm_v11_num_candidates()) == "none");
  GemmParams p = sized(base_case(kGemmV11), Mnk{17, 17, 17}, 0).shape;
  p.a = p.b = p.c = reinterpret_cast<void*>(0x10000);  // never touched: validation fails first
  p.k = 0;
  for (int i = 0; i < gemm_v11_num_candidates(); ++i) {
    INFO(gemm_v11_candidate_name(i));
    const KernelDesc* k = gemm_v11_candidate(i);
    REQUIRE(k != nullptr);
    CHECK(std::string(k->info.version) == "v11[" + std::to_string(i) + "]");
    CHECK(launch(*k, p, nullptr) == Status::InvalidSize);
  }
}

FS_GPU_TEST_CASE("stage06 SIMT v1-v5 match fp64 at odd sizes for every transpose") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 6000;
  for (const KernelDesc* k : kSimt)
    if (testing::runs_here(*k)) check_odd_sizes(*k, base_case(*k), seed += 100);
}

FS_GPU_TEST_CASE("stage06 fp16 v6 v7 v9 v11 v12 are exact on small integers with every output type they take") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 7000;
  for (const KernelDesc* k : kFp16) {
    if (!testing::runs_here(*k)) continue;
    for (int32_t c_dtype : {FS_FP32, FS_FP16, FS_BF16}) {
      if (!(k->info.out_dtypes & (1u << c_dtype))) continue;  // WMMA's v6 and v7 write fp32 or fp16
      GemmCase g = base_case(*k);
      g.shape.c_dtype = c_dtype;
      check_odd_sizes(*k, g, seed += 100);
    }
  }
}

FS_GPU_TEST_CASE("stage06 bf16 v9 v11 v12 are exact on small integers with fp32 or bf16 or fp16 output") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 7200;
  for (const KernelDesc* k : kBf16) {
    if (!testing::runs_here(*k)) continue;
    for (int32_t c_dtype : {FS_FP32, FS_BF16, FS_FP16}) {
      GemmCase g = base_case(*k);
      g.shape.ab_dtype = FS_BF16;
      g.shape.c_dtype = c_dtype;
      check_odd_sizes(*k, g, seed += 100);
    }
  }
}

// v11's tuner picks one candidate per problem, so the registry's v11 runs only the picks: each
// candidate is checked here on its own, through the same odd sizes, types and transposes as v9.
FS_GPU_TEST_CASE("stage06 v11 every candidate tile configuration is exact on small integers") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 7300;
  for (int i = 0; i < gemm_v11_num_candidates(); ++i) {
    const KernelDesc& k = *gemm_v11_candidate(i);
    INFO(gemm_v11_candidate_name(i));
    if (!testing::runs_here(k)) continue;  // more shared memory than this GPU allows a block
    for (int32_t ab : {FS_FP16, FS_BF16}) {
      GemmCase g = base_case(k);
      g.shape.ab_dtype = ab;
      g.shape.c_dtype = ab;  // the pair epilogue in the input type; fp32 C is the other tests' default
      check_odd_sizes(k, g, seed += 100);
    }
  }
}

FS_GPU_TEST_CASE("stage06 v11 remembers its pick for a problem after the first call") {
  FS_SKIP_WITHOUT_GPU();
  GemmFixture problem(sized(base_case(kGemmV11), Mnk{256, 512, 128}, 1), 1, /*check_rows=*/-1);
  const GemmParams p = problem.params();
  REQUIRE(launch(kGemmV11, p, nullptr) == Status::Success);
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  const int pick = gemm_v11_remembered_choice(p);
  INFO("pick ", pick, ": ", gemm_v11_candidate_name(pick));
  CHECK(pick >= 0);
  CHECK(pick < gemm_v11_num_candidates());
}

FS_GPU_TEST_CASE("stage06 fp16 and bf16 versions stay within the fp32 tolerance on fractional inputs") {
  FS_SKIP_WITHOUT_GPU();
  // fp16 and bf16 inputs are exact in fp64, products exact in fp32: the error is the fp32 accumulation's.
  uint64_t seed = 7500;
  for (int32_t ab : {FS_FP16, FS_BF16})
    for (const KernelDesc* k : ab == FS_FP16 ? kFp16 : kBf16) {
      if (!testing::runs_here(*k)) continue;
      const int64_t L = testing::size_for_run(1000, 300);
      for (const Mnk& mnk : {Mnk{L, 17, L}, Mnk{300, 520, 200}})
        for (int t = 0; t < 4; ++t) {
          GemmCase g = sized(base_case(*k), mnk, t);
          g.shape.ab_dtype = ab;
          g.integers = false;
          check_gemm(*k, g, ++seed);
        }
    }
}

FS_GPU_TEST_CASE("stage06 int8 v8 v10 v13 are exact over the whole int8 range") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kInt8)
    if (testing::runs_here(*k)) check_odd_sizes(*k, base_case(*k), 8000);
}

FS_GPU_TEST_CASE("stage06 alpha and beta read C when beta is not zero") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 9000;
  for (const KernelDesc* k : kAll) {
    if (!testing::runs_here(*k)) continue;
    GemmCase g = base_case(*k);
    if (g.shape.ab_dtype == FS_FP32) {
      check_alpha_beta(*k, g, 0.75f, -1.25f, seed += 100);
    } else if (g.shape.ab_dtype == FS_FP16) {
      check_alpha_beta(*k, g, 2.0f, -3.0f, seed += 100);
      g.shape.c_dtype = FS_FP16;
      check_alpha_beta(*k, g, -1.0f, 2.0f, seed += 100);
      if (in_set(k->gemm.ab_dtypes, FS_BF16)) {  // v9, v11, v12: bf16 in, bf16 out
        g.shape.ab_dtype = g.shape.c_dtype = FS_BF16;
        check_alpha_beta(*k, g, -1.0f, 2.0f, seed += 100);
      }
    } else {
      check_alpha_beta(*k, g, 3.0f, -2.0f, seed += 100);
    }
    // alpha = 0 keeps beta·C alone.
    check_alpha_beta(*k, base_case(*k), 0.0f, 1.0f, seed += 100);
  }
}

FS_GPU_TEST_CASE("stage06 misaligned bases take the element-copy path and stay correct") {
  FS_SKIP_WITHOUT_GPU();
  // Shifting every base by one element breaks 16-byte alignment (v3-v5 float4, v7-v10 cp.async) while
  // keeping element alignment: the kernels must notice and copy element by element.
  uint64_t seed = 9500;
  for (const KernelDesc* k : kAll) {
    if (!testing::runs_here(*k)) continue;
    for (int t = 0; t < 4; ++t) {
      GemmCase g = sized(base_case(*k), Mnk{300, 520, 200}, t);
      g.shift = 1;
      g.shape.beta = 1.0f;
      check_gemm(*k, g, ++seed);
    }
  }
}

// v9 and v10 (and v11-v13 through them) copy 8 or 4 bytes at a time where the rows allow no wider
// copy: leading dimensions whose rows are w-byte but not 2w-byte aligned, bases shifted to w bytes. C,
// with ldc odd, takes the element-wise epilogue instead of pair stores.
FS_GPU_TEST_CASE("stage06 v9 to v16 take 8- and 4-byte copies where rows allow no 16 and stay exact") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 9700;
  for (const KernelDesc* k : kAll) {
    if (!testing::runs_here(*k) || !picks_copy_width(*k)) continue;
    const int64_t es = base_case(*k).shape.ab_dtype == FS_INT8 ? 1 : 2;
    // The first leading dimension >= row whose rows are w-byte but not 2w-byte aligned.
    auto ld_for = [&](int64_t row, int64_t w) {
      int64_t ld = row;
      while ((ld * es) % w != 0 || (ld * es) % (2 * w) == 0) ++ld;
      return ld;
    };
    for (int64_t w : {8, 4})
      for (const Mnk& mnk : {Mnk{300, 520, 200}, Mnk{17, testing::size_for_run(1000, 300), 33}})
        for (int t = 0; t < 4; ++t) {
          GemmCase g = sized(base_case(*k), mnk, t);
          GemmParams& s = g.shape;
          s.lda = ld_for(s.trans_a ? s.m : s.k, w);
          s.ldb = ld_for(s.trans_b ? s.k : s.n, w);
          s.ldc = s.n + 1;
          g.shift = w / es;  // every base w-byte aligned, not 2w
          s.beta = 1.0f;
          check_gemm(*k, g, ++seed);
        }
  }
}

// v16's workspace is (M + N)·K' bytes, as large as A and B: asked for more than the GPU holds (A and B
// of 0.6 of its memory each, at fake addresses that nothing may read), it must answer before any launch.
FS_GPU_TEST_CASE("stage06 v16 reports FS_ERR_OUT_OF_MEMORY when its repacked rows cannot fit — before any launch") {
  FS_SKIP_WITHOUT_GPU();
  if (!testing::runs_here(kGemmV16)) return;
  std::size_t free_bytes = 0, total_bytes = 0;
  FS_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  GemmParams p{};
  p.m = int64_t(1) << 12;  // the largest power of two whose M×M int32 C takes at most a quarter of the GPU
  while (4.0 * double(2 * p.m) * double(2 * p.m) <= 0.25 * double(total_bytes)) p.m *= 2;
  p.n = p.m;
  p.k = int64_t(0.6 * double(total_bytes) / double(p.m)) / 16 * 16 + 8;  // rows 8-byte, not 16-byte, aligned
  p.trans_b = 1;
  p.ab_dtype = FS_INT8;
  p.c_dtype = FS_INT32;
  p.alpha = 1.0f;
  p.a = reinterpret_cast<const void*>(std::uintptr_t(1) << 40);
  p.b = reinterpret_cast<const void*>(std::uintptr_t(2) << 40);
  p.c = reinterpret_cast<void*>(std::uintptr_t(3) << 40);
  p.lda = p.ldb = p.k;
  p.ldc = p.n;
  REQUIRE(kGemmV16.gemm_extra_bytes(p) > total_bytes);
  CHECK(launch(kGemmV16, p, nullptr) == Status::OutOfMemory);
  FS_CUDA_CHECK(cudaDeviceSynchronize());  // nothing was launched: no error, sticky or not
}

FS_GPU_TEST_CASE("stage06 every version rejects bad inputs and writes nothing") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kAll) testing::check_gemm_rejects_bad_inputs(*k, sized(base_case(*k), Mnk{17, 17, 17}, 0));
}

FS_GPU_TEST_CASE("stage06 every version reports FS_ERR_CUDA when the runtime refuses the work") {
  FS_SKIP_WITHOUT_GPU();
  for (const KernelDesc* k : kAll) testing::check_gemm_reports_cuda_error(*k, sized(base_case(*k), Mnk{17, 17, 17}, 0));
}
