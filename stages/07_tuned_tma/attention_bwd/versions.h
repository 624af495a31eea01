// Stage 07, part 3 — the FlashAttention backward on Hopper: TMA loads, mbarriers and wgmma. Its
// versions, as the registry lists them ("stage07/attention_bwd/v1" …; fs_flash_bwd_tma_v1 … in C, on
// fs_attention_bwd_params), each defined in its vN.cu. The problem and its validation are
// common/lib/attention.h, as for stage 05.
//
//   v1  fp16, bf16; head_dim 64, 128; K/V-stationary, the five products on wgmma, dQ by fp32 atomics
//   v2  v1 with warp specialization: a producer warp streams Q, dO and their rows, two consumers compute
//   v3  v2 with dQ by TMA reduce-add: each step's dQ tile through shared memory, one bulk add in L2
//   v4  v3 with LSE and delta padded once by the launch and brought by TMA beside Q and dO
//   v5  v4 with a consumer's products overlapped: Sᵀ and dPᵀ in flight together, dV under dS, dK under dQ
//   v6  v4 with the dQ tiles and the workspace in the accumulator's order: conflict-free float4 stores
//   v7  v6 with dS stored by stmatrix.trans: 4 transposing stores a thread and step instead of 32
//   v8  v7 with 128 query rows a step at D = 64, dQ split between the consumers by rows
//   v9  v8 with a lean elementwise pass: the rows loaded once under Sᵀ, one-instruction exp2, edge-only masks
//   v10 v9 with the next step's Sᵀ issued before this step's barrier and dQ
//   v11 v10 with deterministic dQ under the causal mask in the shortest-first order: last key first
//   v12 v11 with a group's query heads split over s blocks per key block where the grid is small (MQA, GQA)
//
// Every version takes dense, padded (seq_lens) and packed (cu_seqlens) batches, grouped K/V heads
// (dK, dV summed over each group), any layout with D contiguous and 16-byte strides, and the
// `deterministic` field (dQ bitwise the same on every run). Hopper only (sm_90a), any other GPU gets
// FS_ERR_UNSUPPORTED_DEVICE.
#pragma once

#include "common/lib/kernel.h"

namespace fs {

extern const KernelDesc kFlashBwdTmaV1;
extern const KernelDesc kFlashBwdTmaV2;
extern const KernelDesc kFlashBwdTmaV3;
extern const KernelDesc kFlashBwdTmaV4;
extern const KernelDesc kFlashBwdTmaV5;
extern const KernelDesc kFlashBwdTmaV6;
extern const KernelDesc kFlashBwdTmaV7;
extern const KernelDesc kFlashBwdTmaV8;
extern const KernelDesc kFlashBwdTmaV9;
extern const KernelDesc kFlashBwdTmaV10;
extern const KernelDesc kFlashBwdTmaV11;
extern const KernelDesc kFlashBwdTmaV12;

}  // namespace fs
