// The GEMM problem every GEMM stage solves, what a kernel takes, and the validation each launch runs
// first. Host code.
//
//   C = alpha · op(A) · op(B) + beta · C, row-major; op(A) is M×K, op(B) is K×N, C is M×N.
//   A is stored M×K (lda >= K), or K×M when trans_a (lda >= M); B is stored K×N (ldb >= N), or N×K
//   when trans_b (ldb >= K); ldc >= N. beta = 0 never reads C.
#pragma once

#include <cstdint>
#include <string>

#include "common/lib/dtype.h"
#include "common/lib/flashstages.h"
#include "common/lib/status.h"

namespace fs {

using GemmParams = fs_gemm_params;

// The bit of one pair of transposes in GemmSupport::layouts: bit 2·trans_a + trans_b.
constexpr uint32_t layout_bit(bool trans_a, bool trans_b) { return 1u << (2 * int(trans_a) + int(trans_b)); }
constexpr uint32_t kAllLayouts = 0xF;

// What one GEMM kernel takes: sets of input (A, B) and output (C) types, as dtype_bit() masks, the
// pairs of transposes it reads, and the alignment its loads of A and B need.
// TMA's limits: signed 32-bit coordinates, and global strides below 2^40 bytes.
constexpr int64_t kTmaMaxExtent = 2147483647;
constexpr int64_t kTmaMaxStrideBytes = int64_t(1) << 40;

struct GemmSupport {
  uint32_t ab_dtypes = 0;
  uint32_t c_dtypes = 0;
  // Bytes that the bases of A and B and their row strides (lda, ldb times the element size) must be
  // multiples of; 0 asks only the element alignment. Stage 07's TMA loads need 16 (stage 06 asks
  // none: its kernels check wider alignment themselves and fall back to narrower copies).
  uint32_t operand_align = 0;
  // The pairs (trans_a, trans_b) it takes, as layout_bit() masks: all four but for stage 07's int8
  // version, whose integer wgmma reads both operands k-contiguous only (A untransposed, B transposed).
  uint32_t layouts = kAllLayouts;
  // Stage 07: A and B are read by TMA, whose tensor maps take each extent (M, N, K) up to kTmaMaxExtent
  // elements and row strides below kTmaMaxStrideBytes (tensor_map.cpp refuses the same when it encodes
  // one): checked here, so that the picking entry passes over such a version instead of running it.
  bool tma_operands = false;

  bool takes_layout(bool trans_a, bool trans_b) const { return (layouts & layout_bit(trans_a, trans_b)) != 0; }
};

// Checks, in this order: null pointers (FS_ERR_NULL_POINTER), sizes (FS_ERR_INVALID_SIZE: not
// positive, or a matrix whose byte count passes 64 bits), leading dimensions
// (FS_ERR_INVALID_LEADING_DIM), dtypes (FS_ERR_UNSUPPORTED_DTYPE), the pair of transposes
// (FS_ERR_UNSUPPORTED_LAYOUT), that every pointer is aligned to its element size
// (FS_ERR_MISALIGNED_POINTER), then the kernel's operand_align: A's and B's bases
// (FS_ERR_MISALIGNED_POINTER), then their row strides (FS_ERR_INVALID_LEADING_DIM); for tma_operands,
// last, the extents (FS_ERR_INVALID_SIZE) and the row strides' bytes (FS_ERR_INVALID_LEADING_DIM).
Status validate(const GemmParams& p, const GemmSupport& support);

// The element counts A, B and C span in memory: the last row needs only its used columns.
int64_t gemm_a_span(const GemmParams& p);
int64_t gemm_b_span(const GemmParams& p);
int64_t gemm_c_span(const GemmParams& p);

// The bytes of the largest of A, B, C as stored. For validated params.
double largest_matrix_bytes(const GemmParams& p);

// "M=4096 N=4096 K=4096 B^T fp16->fp32 alpha=1 beta=0"
std::string describe(const GemmParams& p);

}  // namespace fs
