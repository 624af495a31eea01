// Stage 07 gemm executable: cuBLAS ("kernel 0"; cuBLASLt for int8), stage 06 v9 and v10 (the last
// mma.sync versions, fp16/bf16 and int8, as the baselines) and every stage 07 version, on the same
// problem, each checked against the fp64 reference on small integers (int8: the whole range; exact) and
// timed on uniform [-1, 1] inputs (int8: the whole range).
//   stage07_gemm [--m 4096 --n 4096 --k 4096] [--dtype fp16|bf16|int8] [--version v1]   (--help: every flag)
// The executable stores A and B tight: their rows (K, or M and N when transposed) must be multiples of
// 16 bytes (8 fp16 or bf16, 16 int8), what TMA reads; other sizes are refused before any GPU is looked
// for. int8 takes B stored N×K (--trans-b 1, the default for int8) and A untransposed only (v6).
#include <memory>

#include "common/tools/cublas_gemm.h"
#include "common/tools/runner.h"

int main(int argc, char** argv) {
  return fs::run_stage(argc, argv,
                       {"stage 07 — GEMM on Hopper: TMA, mbarriers and wgmma, against cuBLAS", {"stage07/gemm"},
                        {"stage06/v9", "stage06/v10"},
                        [](const fs::GemmParams& p) { return std::make_unique<fs::CublasGemm>(p); }});
}
