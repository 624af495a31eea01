// Stage 06 — GEMM: SIMT fp32 (v1–v5), then tensor cores through WMMA in fp16 (v6, v7) and int8 (v8),
// then through raw mma.sync in fp16/bf16 (v9) and int8 (v10). Its versions, as the registry lists them
// (fs_gemm_v1 … v10 in C). The problem and its validation
// are common/lib/gemm.h.
#pragma once

#include "common/lib/kernel.h"

namespace fs {

extern const KernelDesc kGemmV1, kGemmV2, kGemmV3, kGemmV4, kGemmV5, kGemmV6, kGemmV7, kGemmV8, kGemmV9, kGemmV10;

}  // namespace fs
