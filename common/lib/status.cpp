#include "common/lib/status.h"

namespace {

struct StatusText {
  const char* name;
  const char* message;
};

// Indexed by the code; the static_assert below keeps it in step with the enum.
constexpr StatusText kStatusText[] = {
    {"FS_SUCCESS", "success"},
    {"FS_ERR_NULL_POINTER", "a required tensor pointer (q, k, v, o; for the backward also lse, d_o, dq, dk, dv) is null"},
    {"FS_ERR_INVALID_SIZE",
     "every size must be positive, and the sizes within the limits: a tensor's bytes within 64 bits and the "
     "device's memory, the grid and TMA extents within the hardware's"},
    {"FS_ERR_UNSUPPORTED_HEAD_DIM", "this kernel has no instance for this head_dim"},
    {"FS_ERR_UNSUPPORTED_DTYPE", "this kernel does not take this element type"},
    {"FS_ERR_MISALIGNED_POINTER",
     "a tensor pointer is not aligned as this kernel's loads need, or an output overlaps another tensor"},
    {"FS_ERR_UNSUPPORTED_MASK", "causal masking needs seq_q <= seq_k, or some query rows would see no key"},
    {"FS_ERR_INVALID_SCALE", "scale must be finite (0 selects 1/sqrt(head_dim))"},
    {"FS_ERR_OUT_OF_MEMORY", "the kernel's device workspace could not be allocated"},
    {"FS_ERR_CUDA", "the CUDA runtime reported an error (no usable device, or a failed launch)"},
    {"FS_ERR_INVALID_SEQLENS", "seq_lens / cu_seqlens are inconsistent with the sizes, or this kernel takes none"},
    {"FS_ERR_INVALID_LEADING_DIM",
     "a leading dimension (lda, ldb, ldc) is smaller than its matrix's row, or not the multiple this kernel's "
     "loads need"},
    {"FS_ERR_UNSUPPORTED_DEVICE",
     "this kernel cannot run on the current GPU: this build has no code for its architecture, or a block "
     "needs more shared memory than the GPU allows, or the GPU cannot hold one of its clusters of blocks at once"},
    {"FS_ERR_INVALID_KV_HEADS",
     "kv_heads must be 0 (one K/V head per query head) or a divisor of heads: it is negative, larger than heads, "
     "or does not divide heads"},
    {"FS_ERR_UNSUPPORTED_LAYOUT",
     "this kernel does not take this layout: a GEMM kernel this pair of transposes (stage 07's int8 version reads "
     "A stored M×K and B stored N×K, trans_a = 0, trans_b = 1, alone, both k-contiguous as integer wgmma needs), "
     "an attention kernel strides other than the contiguous layout's (fs_kernel_info.strided is 0)"},
    {"FS_ERR_INVALID_STRIDES",
     "an attention tensor's strides are negative, make two of its rows overlap, address past 2^63 elements, or "
     "are not the multiple of 16 bytes this kernel's loads need"},
};
constexpr int kLastStatus = FS_ERR_INVALID_STRIDES;
static_assert(sizeof(kStatusText) / sizeof(kStatusText[0]) == kLastStatus + 1,
              "every fs_status code needs a name and a message");

bool known(int status) { return status >= 0 && status <= kLastStatus; }

}  // namespace

extern "C" const char* fs_status_name(int status) {
  return known(status) ? kStatusText[status].name : "FS_UNKNOWN_STATUS";
}

extern "C" const char* fs_status_message(int status) {
  return known(status) ? kStatusText[status].message : "not a flashstages status code";
}
