// Stage 07 gemm executable: cuBLAS ("kernel 0"), stage 06 v9 (the last mma.sync version, as the
// baseline) and every stage 07 version, on the same problem, each checked against the fp64 reference
// on small integers (exact) and timed on uniform [-1, 1] inputs.
//   stage07_gemm [--m 4096 --n 4096 --k 4096] [--dtype fp16|bf16] [--version v1]   (--help: every flag)
// The executable stores A and B tight: their rows (K, or M and N when transposed) must be multiples of
// 8 elements, the 16 bytes TMA reads; other sizes are refused before any GPU is looked for.
#include <memory>

#include "common/tools/cublas_gemm.h"
#include "common/tools/runner.h"

int main(int argc, char** argv) {
  return fs::run_stage(argc, argv,
                       {"stage 07 — GEMM on Hopper: TMA, mbarriers and wgmma, against cuBLAS", {"stage07/gemm"},
                        {"stage06/v9"},
                        [](const fs::GemmParams& p) { return std::make_unique<fs::CublasGemm>(p); }});
}
