// Stage 04 launcher: the checks every version shares (variable lengths included), the versions'
// descriptions and the C interface. Each version's own launch is in flash_fwd_vN.cu, one translation
// unit per version so that the build compiles them in parallel.
#include "flash_fwd.h"

#include <algorithm>
#include <vector>

#include "launch.cuh"

namespace fs {

namespace flash {

namespace {

constexpr int kHeadDims[] = {32, 64, 128, 256};
// 16-byte alignment: cp.async (v3, v4) and the 16-byte loads of v1 and v2 move whole 16-byte chunks;
// every row, D·2 bytes, is a multiple of 16.
const AttentionSupport kSupport{dtype_bit(DType::FP16) | dtype_bit(DType::BF16), 0, 0, kHeadDims, 4, 16,
                                /*varlen=*/true};

// Copies `count` lengths from the device. A pointer the runtime does not know as device (or managed)
// memory is refused: the kernels read these arrays on the device too.
Status read_lengths(const int32_t* device, int64_t count, cudaStream_t stream, std::vector<int32_t>* host) {
  cudaPointerAttributes attr{};
  FS_RETURN_IF_CUDA_ERROR(cudaPointerGetAttributes(&attr, device));
  if (attr.type != cudaMemoryTypeDevice && attr.type != cudaMemoryTypeManaged) return Status::InvalidSeqLens;
  host->resize(count);
  FS_RETURN_IF_CUDA_ERROR(
      cudaMemcpyAsync(host->data(), device, count * sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
  FS_RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(stream));
  return Status::Success;
}

// cu [B+1]: starts at 0, never decreases, ends at the total.
bool valid_offsets(const std::vector<int32_t>& cu, int64_t total) {
  return cu.front() == 0 && cu.back() == total && std::is_sorted(cu.begin(), cu.end());
}

}  // namespace

Status prepare(const AttentionParams& p, cudaStream_t stream, Problem* out) {
  if (const Status st = validate(p, kSupport); st != Status::Success) return st;
  out->p = p;
  out->max_seq_q = p.seq_q;
  out->scale_log2 = softmax_scale(p) * kLog2e;
  const bool packed = p.cu_seqlens_q || p.cu_seqlens_k;
  if (p.seq_lens && packed) return Status::InvalidSeqLens;                   // one layout at a time
  if (!p.cu_seqlens_q != !p.cu_seqlens_k) return Status::InvalidSeqLens;     // packed needs both
  std::vector<int32_t> lens, cu_q, cu_k;
  if (p.seq_lens) {
    if (const Status st = read_lengths(p.seq_lens, p.batch, stream, &lens); st != Status::Success) return st;
    for (int32_t n : lens)
      if (n < 0 || n > std::min(p.seq_q, p.seq_k)) return Status::InvalidSeqLens;
  } else if (packed) {
    if (const Status st = read_lengths(p.cu_seqlens_q, p.batch + 1, stream, &cu_q); st != Status::Success) return st;
    if (const Status st = read_lengths(p.cu_seqlens_k, p.batch + 1, stream, &cu_k); st != Status::Success) return st;
    if (!valid_offsets(cu_q, p.seq_q) || !valid_offsets(cu_k, p.seq_k)) return Status::InvalidSeqLens;
    out->max_seq_q = 0;
    for (int64_t b = 0; b < p.batch; ++b) {
      const int64_t nq = cu_q[b + 1] - cu_q[b], nk = cu_k[b + 1] - cu_k[b];
      if (p.causal && nq > nk) return Status::UnsupportedMask;  // the dense rule, per entry
      out->max_seq_q = std::max(out->max_seq_q, nq);
    }
  }
  return Status::Success;
}

}  // namespace flash

std::size_t flash_fwd_extra_bytes(const AttentionParams& p) { return std::size_t(lse_elems(p)) * sizeof(float); }

constexpr unsigned kHalfDtypes = dtype_bit(DType::FP16) | dtype_bit(DType::BF16);

const AttentionKernel kFlashFwdV1{"stage04", "v1", "mma.sync m16n8k16, warps over query rows, P in registers",
                                  launch_flash_fwd_v1, flash_fwd_extra_bytes, nullptr, kHalfDtypes};
const AttentionKernel kFlashFwdV2{"stage04", "v2", "v1 + causal stage splitting (no blocks above the diagonal, masks only on it)",
                                  launch_flash_fwd_v2, flash_fwd_extra_bytes, nullptr, kHalfDtypes};
const AttentionKernel kFlashFwdV3{"stage04", "v3", "v2 + cp.async double-buffered K/V, ldmatrix, XOR-swizzled shared memory",
                                  launch_flash_fwd_v3, flash_fwd_extra_bytes, nullptr, kHalfDtypes};
const AttentionKernel kFlashFwdV4{"stage04", "v4", "v3 with the tile shape per head_dim picked by timing candidates on this GPU",
                                  launch_flash_fwd_v4, flash_fwd_extra_bytes, nullptr, kHalfDtypes};

}  // namespace fs

namespace {

int call(fs::Status (*launch)(const fs::AttentionParams&, cudaStream_t), const fs_attention_params* params,
         void* stream) {
  if (!params) return FS_ERR_NULL_POINTER;
  return static_cast<int>(launch(*params, static_cast<cudaStream_t>(stream)));
}

}  // namespace

extern "C" int fs_flash_fwd_v1(const fs_attention_params* params, void* stream) {
  return call(fs::launch_flash_fwd_v1, params, stream);
}
extern "C" int fs_flash_fwd_v2(const fs_attention_params* params, void* stream) {
  return call(fs::launch_flash_fwd_v2, params, stream);
}
extern "C" int fs_flash_fwd_v3(const fs_attention_params* params, void* stream) {
  return call(fs::launch_flash_fwd_v3, params, stream);
}
extern "C" int fs_flash_fwd_v4(const fs_attention_params* params, void* stream) {
  return call(fs::launch_flash_fwd_v4, params, stream);
}
