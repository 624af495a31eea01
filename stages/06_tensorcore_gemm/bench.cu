// Stage 06 benchmarks: every version next to its cuBLAS peer ("kernel 0", same binary, same inputs),
// at square 1024–8192 and a few non-square and odd shapes (common/tools/gemm_bench.h names them).
//   stage06/v1..v5/fp32/M:m/N:n/K:k   and  cublas/fp32/…     (A, B untransposed)
//   stage06/v6,v7,v9,v11,v12,v14/fp16/…  (fp16 out)  and  cublas/fp16/…
//   stage06/v9,v11,v12,v14/bf16/…        (bf16 out)  and  cublas/bf16/…
//   stage06/v8,v10,v13,v15,v16/int8/…    (int32 out) and  cublaslt/int8/…   (B transposed: cuBLASLt's int8 layout)
// Counters: TFLOPS (for int8 these are integer operations, TOPS) and GB/s of the least traffic.
#include <memory>

#include "common/tools/bench.h"
#include "common/tools/cublas_gemm.h"
#include "common/tools/gemm_bench.h"

namespace fs::bench {

namespace {

// Square powers of two, then K = 1000 (not a multiple of the tile depth; for int8 its rows are not
// 16-byte aligned either) beside its aligned neighbour K = 1024 (the no-cliff rule compares the two),
// an all-odd cube and a wide-K rectangle.
const GemmShape kShapes[] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                             {4096, 4096, 1000}, {4096, 4096, 1024}, {1000, 1000, 1000}, {2048, 2048, 8192}};

std::unique_ptr<GemmPeer> cublas(const GemmParams& p) { return std::make_unique<CublasGemm>(p); }

}  // namespace

void register_benchmarks(const DeviceInfo& dev) {
  for (const GemmShape& s : kShapes) {
    register_gemm_stage(dev, "stage06", "cublas", cublas, s, DType::FP32, DType::FP32, false);
    register_gemm_stage(dev, "stage06", "cublas", cublas, s, DType::FP16, DType::FP16, false);
    register_gemm_stage(dev, "stage06", "cublas", cublas, s, DType::BF16, DType::BF16, false);
    register_gemm_stage(dev, "stage06", "cublaslt", cublas, s, DType::INT8, DType::INT32, true);
  }
}

}  // namespace fs::bench
