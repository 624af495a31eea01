// Stage 04 — tensor-core FlashAttention-2 forward (fp16 / bf16). The launcher every version of this
// stage shares, the versions' descriptions, and v4's tuner for tests and the executable.
#pragma once

#include <string>

#include "attention_kernel.h"

namespace fs {

// fp16 or bf16 Q, K, V, O; fp32 LSE; head_dim 32, 64, 128 or 256; 16-byte aligned tensors; dense,
// padded (seq_lens) or packed (cu_seqlens) batches. A call with seq_lens or cu_seqlens copies them to
// the host to check them and synchronizes `stream` (flash_fwd/launch.cuh: prepare).
Status launch_flash_fwd_v1(const AttentionParams& params, cudaStream_t stream);
Status launch_flash_fwd_v2(const AttentionParams& params, cudaStream_t stream);
Status launch_flash_fwd_v3(const AttentionParams& params, cudaStream_t stream);
Status launch_flash_fwd_v4(const AttentionParams& params, cudaStream_t stream);

// No workspace: only the LSE it writes, O(B·H·N).
std::size_t flash_fwd_extra_bytes(const AttentionParams& params);

extern const AttentionKernel kFlashFwdV1, kFlashFwdV2, kFlashFwdV3, kFlashFwdV4;

// v4: the tile shapes it chooses among for a head_dim (0 for a head_dim it does not take), each one's
// name ("Br=128 Bc=64 warps=8 Q:regs 96KB"), whether its shared memory fits this GPU (the tuner skips
// those that do not), a launch with a given shape, and the shape the tuner picks for
// (head_dim, dtype, mask) — timing the candidates on this GPU the first time it is asked, from memory
// afterwards; -1 when tuning failed (then v4 itself reports the CUDA error).
int flash_fwd_v4_num_candidates(int64_t head_dim);
std::string flash_fwd_v4_candidate_name(int64_t head_dim, int index);
bool flash_fwd_v4_candidate_fits(int64_t head_dim, int index);
Status launch_flash_fwd_v4_candidate(const AttentionParams& params, int index, cudaStream_t stream);
int flash_fwd_v4_choice(int64_t head_dim, DType dtype, bool causal);

}  // namespace fs
