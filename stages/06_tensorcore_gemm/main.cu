// Stage 06 executable: cuBLAS ("kernel 0") and every version that takes the element type, on the same
// problem, each checked against the fp64 reference and timed.
//   stage06_gemm [--m 4096 --n 4096 --k 4096] [--dtype fp32|fp16|int8] [--version v7]   (--help: every flag)
//
// fp32 runs v1–v5 on uniform [-1, 1] inputs (checked against fp64 within sgemm_tolerance(K)); fp16
// runs v6, v7, v9, v11, v12, v14, bf16 runs v9, v11, v12, v14 and int8 runs v8, v10, v13, v15, v16 on
// small integers, which must match exactly. int8 defaults to --trans-b 1, the layout cuBLASLt's int8
// kernels want.
#include "common/tools/cublas_gemm.h"
#include "common/tools/runner.h"

int main(int argc, char** argv) {
  return fs::run_stage(argc, argv,
                       {"stage 06 — GEMM: SIMT fp32, WMMA fp16 and int8, mma.sync fp16/bf16 and int8, against cuBLAS", {"stage06"}, {},
                        [](const fs::GemmParams& p) { return std::make_unique<fs::CublasGemm>(p); }});
}
