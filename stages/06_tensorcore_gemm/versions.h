// Stage 06 — GEMM: SIMT fp32 (v1–v5), then tensor cores through WMMA in fp16 (v6, v7) and int8 (v8),
// then through raw mma.sync in fp16/bf16 (v9) and int8 (v10), v9's kernel with its tile configuration
// picked by timing (v11), v9 and v10 with whole k-tiles copied without bounds checks (v12, v13), and
// those with no block left on the checked loop (v14 fp16/bf16, v15 int8), v15 on rows repacked to 16
// bytes (v16). Its versions' descriptors, as the registry lists them (fs_gemm_v1 … v16 in C), and the
// host functions the tests and other versions look inside. The problem and its validation are
// common/lib/gemm.h.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "common/lib/kernel.h"

namespace fs {

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

// The shared memory v15's kernel asks for, the largest of its transpose instances: v16 hands v15 every
// call it does not repack, and its descriptor states the larger of this and its own kernel's.
extern const std::size_t kGemmV15SmemBytes;

}  // namespace fs
