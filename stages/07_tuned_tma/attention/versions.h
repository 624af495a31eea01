// Stage 07, part 2 — the FlashAttention forward on Hopper: TMA loads, mbarriers and wgmma. Its
// versions, as the registry lists them ("stage07/attention/v1" …; fs_flash_fwd_tma_v1 … in C), each
// defined in its vN.cu. The problem and its validation are common/lib/attention.h: the launcher
// signature is stage 04's (AttentionParams).
//
// v1 to v8, v10 and v11 take fp16 or bf16 Q, K, V, O, fp32 LSE (optional), head_dim 64, 128 or 256, grouped-query
// K/V, 16-byte aligned tensors (what TMA reads), dense, padded and packed batches; v9 takes fp8 (e4m3)
// Q, K, V with their scales and writes bf16 O, at head_dim 128, dense batches. Hopper only (sm_90a),
// any other GPU gets FS_ERR_UNSUPPORTED_DEVICE.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/lib/kernel.h"

namespace fs {

extern const KernelDesc kFlashTmaV1, kFlashTmaV2, kFlashTmaV3, kFlashTmaV4, kFlashTmaV5, kFlashTmaV6, kFlashTmaV7,
    kFlashTmaV8, kFlashTmaV9, kFlashTmaV10, kFlashTmaV11;

// v5 and v6 with a forced split count (v5: 1 is v4's launch, no workspace; v6: 1 writes O directly),
// validated like every launch: the tests run the split path on shapes where the heuristic would not split.
Status launch_flash_tma_v5_splits(const AttentionParams& params, int splits, cudaStream_t stream);
Status launch_flash_tma_v6_splits(const AttentionParams& params, int splits, cudaStream_t stream);
// v8 with its grid's last `tail` tiles (at most all of them; none for 0 or one split) over `splits` blocks
// each, validated like every launch (FS_ERR_INVALID_SIZE for tail < 0 or splits < 1): the tests split tiles
// of small grids, whose tiles the heuristic splits all or none of.
Status launch_flash_tma_v8_split(const AttentionParams& params, int64_t tail, int splits, cudaStream_t stream);
// v11 with `blocks` persistent blocks (at most one per tile; FS_ERR_INVALID_SIZE below 1), validated like
// every launch: the tests run few blocks over many tiles, so that each block walks tile after tile.
Status launch_flash_tma_v11_blocks(const AttentionParams& params, int64_t blocks, cudaStream_t stream);

}  // namespace fs
