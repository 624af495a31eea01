// Stage 05 — FlashAttention backward. Its versions, as the registry lists them (fs_flash_bwd_v0 .. v10
// in C; fs_attention_bwd_params in common/lib/flashstages.h), and what the tests look inside.
//
//   v0  fp32, fp16, bf16; any head_dim up to 256; P and dS materialized    (the naive baseline)
//   v1  fp32; head_dim 32, 64, 128; 16-byte aligned tensors; no N×N buffer
//   v2  fp16, bf16 (tensor cores); head_dim 64, 128; 16-byte aligned tensors; dQ in an fp32 workspace
//   v3  what v2 takes; dQ added to the workspace four columns per instruction on sm_90
//   v4  what v3 takes; the streamed query tiles double-buffered through cp.async
//   v5  what v4 takes; fragments read by ldmatrix from XOR-swizzled tiles
//   v6  what v5 takes; the dQ product's K operand by ldmatrix too
//   v7  what v6 takes; 128 keys and 8 warps per block
//   v8  what v7 takes; FlashAttention-2's warp tiles, P and dS through shared memory
//   v9  what v8 takes; 128-row query tiles at D = 64
//   v10 what v9 takes; each thread's copy and reduction addresses worked out once per block
// v2 to v10 take padded (seq_lens) and packed (cu_seqlens) batches as stage 04's forward does; v0 and v1
// take dense batches only (FS_ERR_INVALID_SEQLENS). Each version's descriptor, launch and C entry are
// in its vN.cu; the registry's list is versions.cu.
#pragma once

#include <cstddef>

#include "common/lib/kernel.h"

namespace fs {

extern const KernelDesc kFlashBwdV0, kFlashBwdV1, kFlashBwdV2, kFlashBwdV3, kFlashBwdV4, kFlashBwdV5, kFlashBwdV6,
    kFlashBwdV7, kFlashBwdV8, kFlashBwdV9, kFlashBwdV10;

// The delta ablation, stage05/v9_delta_in_loop (v9.cu): v9 with delta_i recomputed by every key block
// from the O_i it streams, instead of read once from the preprocess's. Not in the registry's list (no C
// entry): the benchmark times it beside v9, and every GPU test case checks it as a version.
extern const KernelDesc kFlashBwdV9DeltaInLoop;

// v0: P and dS, B·H·Nq·Nk elements each in the input type, and delta when the caller gives no buffer
// for it (the largest size where that passes 2^63 bytes).
std::size_t flash_bwd_v0_extra_bytes(const AttentionParams& params);

}  // namespace fs
