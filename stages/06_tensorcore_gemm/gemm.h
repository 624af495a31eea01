// Stage 06 — GEMM: SIMT fp32 (v1–v5), then tensor cores through WMMA in fp16 (v6, v7) and int8 (v8),
// then through raw mma.sync in fp16/bf16 (v9) and int8 (v10), v9's kernel with its tile configuration
// picked by timing (v11), v9 and v10 with whole k-tiles copied without bounds checks (v12, v13), and
// those with no block left on the checked loop (v14 fp16/bf16, v15 int8), v15 on rows repacked to 16
// bytes (v16). Its versions, as the registry lists them (fs_gemm_v1 … v16 in C), and v11's candidates as the tests
// look inside them. The problem and its validation are
// common/lib/gemm.h.
#pragma once

#include <string>

#include "common/lib/dispatch.h"
#include "common/lib/kernel.h"

namespace fs {

// What the tensor-core versions take, for their descriptors: int8 in, int32 out (v8, v10, v13, v15, v16);
// fp16 or bf16 in, fp32, fp16 or bf16 out (v9, v11, v12, v14).
inline const GemmSupport kInt8Support{Dtypes<DType::INT8>::kMask, Dtypes<DType::INT32>::kMask};
inline const GemmSupport kHalfSupport{Dtypes<DType::FP16, DType::BF16>::kMask,
                                      Dtypes<DType::FP32, DType::FP16, DType::BF16>::kMask};

extern const KernelDesc kGemmV1, kGemmV2, kGemmV3, kGemmV4, kGemmV5, kGemmV6, kGemmV7, kGemmV8, kGemmV9, kGemmV10,
    kGemmV11, kGemmV12, kGemmV13, kGemmV14, kGemmV15, kGemmV16;

// v11: how many tile configurations it chooses among (v9's first), each one's name ("128x256x64 3
// stages 8 warps 144KB"), each as a descriptor that always runs it (validated and device-checked like
// any version: launch(*gemm_v11_candidate(i), ...); null outside the list), and the candidate the
// tuner remembers for a problem (-1 before its first call).
int gemm_v11_num_candidates();
std::string gemm_v11_candidate_name(int index);
const KernelDesc* gemm_v11_candidate(int index);
int gemm_v11_remembered_choice(const GemmParams& p);

}  // namespace fs
