// Stage 07 gemm benchmarks: every version next to its cuBLAS peer ("kernel 0", same binary, same
// inputs), at stage 06's shapes — square 1024–8192, K = 1000 (not a multiple of the tile depth), the
// 1000³ cube, a wide-K rectangle — and two transformer-layer shapes, tall-skinny with K = 4096 and 8192.
//   stage07/gemm/vN/fp16/M:m/N:n/K:k (fp16 out)  and  cublas/fp16/…
//   stage07/gemm/vN/bf16/…           (bf16 out)  and  cublas/bf16/…
//   stage07/gemm/v6/int8/…           (int32 out) and  cublaslt/int8/…  (B stored N×K: the one layout v6
//                                                     takes, cuBLASLt's int8 layout), at the shapes whose
//                                                     K is a multiple of 16 (TMA's 16-byte rows of int8)
// (common/tools/gemm_bench.h: inputs, names, counters.)
#include <memory>

#include "common/tools/bench.h"
#include "common/tools/cublas_gemm.h"
#include "common/tools/gemm_bench.h"

namespace fs::bench {

namespace {

const GemmShape kShapes[] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                             {4096, 4096, 1000}, {1000, 1000, 1000}, {2048, 2048, 8192}, {16384, 1024, 4096},
                             {8192, 1024, 8192}};

std::unique_ptr<GemmPeer> cublas(const GemmParams& p) { return std::make_unique<CublasGemm>(p); }

}  // namespace

void register_benchmarks(const DeviceInfo& dev) {
  for (const GemmShape& s : kShapes) {
    register_gemm_stage(dev, "stage07/gemm", "cublas", cublas, s, DType::FP16, DType::FP16, false);
    register_gemm_stage(dev, "stage07/gemm", "cublas", cublas, s, DType::BF16, DType::BF16, false);
    if (s.k % 16 == 0) register_gemm_stage(dev, "stage07/gemm", "cublaslt", cublas, s, DType::INT8, DType::INT32, true);
  }
}

}  // namespace fs::bench
