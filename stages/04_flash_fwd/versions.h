// Stage 04 — tensor-core FlashAttention-2 forward (fp16 / bf16). Its versions' descriptors (each in
// its vN.cu; versions.cu lists them, fs_flash_fwd_v1 … v6 in C), and v5's and v6's tuners as the
// tests and the benchmarks look inside them.
//
// Every version takes fp16 or bf16 Q, K, V, O, fp32 LSE, head_dim 32, 64, 128 or 256, 16-byte
// aligned tensors, and dense, padded (seq_lens) or packed (cu_seqlens) batches.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "common/lib/kernel.h"

namespace fs {

extern const KernelDesc kFlashFwdV1, kFlashFwdV2, kFlashFwdV3, kFlashFwdV4, kFlashFwdV5, kFlashFwdV6;

// v5: the tile shapes it chooses among for a head_dim (none for a head_dim it does not take), each
// one's name ("Br=128 Bc=64 warps=8 Q:regs 96KB"), whether it runs on the current GPU (its shared
// memory fits; the tuner skips those that do not), one launch with a given shape (validated like
// every launch), and the shape the tuner picks for (head_dim, dtype, mask) on `stream` — timing the
// candidates the first time it is asked, from memory afterwards; -1 when tuning failed.
int flash_fwd_v5_num_candidates(int64_t head_dim);
std::string flash_fwd_v5_candidate_name(int64_t head_dim, int index);
bool flash_fwd_v5_candidate_runs_here(int64_t head_dim, int index);
Status launch_flash_fwd_v5_candidate(const AttentionParams& params, int index, cudaStream_t stream);
int flash_fwd_v5_choice(int64_t head_dim, DType dtype, bool causal, cudaStream_t stream);

// v6: the LSE, plus the split workspace of the plan it runs for these params on the current GPU (the
// remembered one; before the first call, the largest it could choose); and one launch with a forced
// plan: v5's tile shape `tile` (tile_shapes.cuh's order, flash_fwd_v5_candidate_name) and `splits`
// splits (1: no workspace, no merge), validated like every launch. Its split count's heuristic is
// common/lib/split_kv.h's split_kv_heuristic.
std::size_t flash_fwd_v6_extra_bytes(const AttentionParams& params);
Status launch_flash_fwd_v6_plan(const AttentionParams& params, int tile, int splits, cudaStream_t stream);
// v6's plans for a call, (tile, splits) in the order its tuner times them (one, v5's launch, where the
// grid fills the GPU), and the plan it runs — tuning the first time, as the call would; an empty list
// and false where it cannot tell (no GPU, v5's tuning failed).
std::vector<std::pair<int, int>> flash_fwd_v6_plans(const AttentionParams& params);
bool flash_fwd_v6_choice(const AttentionParams& params, cudaStream_t stream, int* tile, int* splits);

}  // namespace fs
