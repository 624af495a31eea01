// Stage 07, part 1 — GEMM on Hopper: TMA loads, mbarriers and wgmma. Its versions, as the registry
// lists them ("stage07/gemm/v1" …; fs_gemm_tma_v1 … in C). The problem and its validation are
// common/lib/gemm.h: the launcher signature is stage 06's (GemmParams).
#pragma once

#include "common/lib/kernel.h"

namespace fs {

extern const KernelDesc kGemmTmaV1, kGemmTmaV2, kGemmTmaV3, kGemmTmaV4, kGemmTmaV6;

}  // namespace fs
