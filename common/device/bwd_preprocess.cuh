// flashstages — what every backward (stage 05's versions, stage 07's backward rung) does before its
// main kernels: delta, once.
//
//   delta_i = Σ_c dO_ic · O_ic        (= Σ_j P_ij · dP_ij, docs/05_flash_bwd.md derives why)
//
// The gradient of the softmax needs, for every query row i, the dot product of P_i with dP_i. Over
// the whole row that is the dot product of dO_i with O_i: D multiply-adds from two tensors the
// backward reads anyway, instead of Nk. A kernel that walks the keys block by block would otherwise
// need all of row i's P and dP before it could finish any dS_ij; with delta known first, every key
// block's dS is complete on its own. It is computed once per row here, before the main kernels, and
// read by every key block that row meets.
//
// Also here: the host side of it — where delta lives (the caller's buffer, or a workspace when the
// caller did not ask for it) and the launch; and the pass after the main kernels of a backward that
// adds dQ into an fp32 workspace: dQ = scale · dq_accum, rounded once (dq_convert_kernel).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/sm80.cuh"
#include "common/device/bwd_args.cuh"
#include "common/lib/attention.h"
#include "common/lib/cuda_check.h"
#include "common/lib/numeric.h"
#include "common/lib/workspace.h"

namespace fs::bwd {

constexpr int kRowThreads = 256;  // the row kernels (delta here, v2's dQ conversion): 8 warps, one row each
constexpr int kRowsPerBlock = kRowThreads / 32;

// Query slots number every (entry, query head, row) a query row can sit in: B·H·max_seq_q of them.
// Dense and padded batches have max_seq_q = Nq, so slot r is simply row r of [B·H·Nq, D]. A slot's
// row: its index in the contiguous rows of LSE, delta and dq_accum, -1 where there is no row to write
// (past a packed entry's rows, or in an entry that breaks the rules: attn::sequence_of checks it, as
// the main kernels do); and where it lies in Q (dQ) and in O (dO), as their strides lay them out.
struct QueryRow {
  int64_t row;         // of LSE, delta, dq_accum; -1: none
  int64_t q_at, o_at;  // element offsets of the row in Q (dQ) and O (dO)
};
// *real: the row is one of the entry's nq rows; the others, a padded entry's rows past its length, get
// zeros.
template <class T>
__device__ __forceinline__ QueryRow query_row(const Args<T>& a, int64_t r, bool* real, int64_t d) {
  *real = true;
  if (!a.seq_lens && !a.cu_seqlens_q && a.contiguous) return {r, r * d, r * d};
  const int64_t bh = r / a.max_seq_q, i = r % a.max_seq_q;
  const attn::Sequence s = attn::sequence_of(a, bh, bh / a.heads, bh % a.heads, 0, a.max_seq_k);
  *real = i < s.nq;
  if (i >= s.nq_rows) return {-1, 0, 0};
  return {s.q_row0 + i, s.q_at + i * a.q_strides.row, s.o_at + i * a.o_strides.row};
}

// The query slots of a problem: B·H·max_seq_q (the rows of Q for dense and padded batches).
inline int64_t query_slots(const AttentionBwdProblem& pr) { return pr.fwd.p.batch * pr.fwd.p.heads * pr.fwd.max_seq_q; }

// Blocks for a grid of warps striding over `slots` rows: one warp per row, at most 2^20 blocks.
inline int64_t row_blocks(int64_t slots) { return std::min<int64_t>((slots + kRowsPerBlock - 1) / kRowsPerBlock, int64_t(1) << 20); }

// delta[row] = Σ_c dO[row][c] · O[row][c] for the row of every query slot (dO and O read through O's
// strides), summed in fp32; 0 in a
// padded entry's rows past its length (their dO and O are never read). One warp per row: the lanes
// read 32 neighbouring elements at a time (coalesced), then five shuffles add up their partial sums.
// grid: row_blocks(slots) blocks of 256 threads, each warp striding over the slots.
template <class T>
__global__ void __launch_bounds__(kRowThreads)
    delta_kernel(const Args<T> a, float* __restrict__ delta /* [B·H, Nq] or [H, total] */, int64_t slots, int64_t d) {
  const int lane = threadIdx.x % 32;
  const int64_t stride = int64_t(gridDim.x) * kRowsPerBlock;
  // r is the same for the 32 lanes of a warp, so the whole warp takes part in every shuffle.
  for (int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32; r < slots; r += stride) {
    bool real;
    const QueryRow q = query_row(a, r, &real, d);
    if (q.row < 0) continue;
    float acc = 0.0f;
    if (real)
      for (int64_t c = lane; c < d; c += 32) acc += to_float(a.d_o[q.o_at + c]) * to_float(a.o[q.o_at + c]);
    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
    if (lane == 0) delta[q.row] = acc;
  }
}

// Where dq_accum keeps the dQ / scale of a query slot's row: row-major, row q.row at q.row · D floats
// (stage 05; stage 07's backward up to its v5). The offset of columns c, c + 1 (c even, neighbours).
// Stage 07's backward from v6 on keeps tiles in another order and passes its own (its launch.cuh).
template <int D>
struct RowMajorDq {
  template <class T>
  __device__ int64_t operator()(const Args<T>&, int64_t /*slot*/, const QueryRow& q, int c) const {
    return q.row * D + c;
  }
};

// dQ = scale · dq_accum, rounded to T once, in the row of every query slot (dQ where Q's strides put
// it; query_row: nothing in an
// entry that breaks the rules; a padded entry's rows past its length hold zeros, which no key block
// added to), dq_accum read where `offset` says (RowMajorDq, or a layout of the caller's). One warp per
// row, each lane two neighbouring columns at a time (8-byte loads, 4-byte stores). grid:
// row_blocks(slots) blocks of kRowThreads, each warp striding over the slots.
template <class T, int D, class Offset>
__global__ void __launch_bounds__(kRowThreads) dq_convert_kernel(const Args<T> a, int64_t slots, Offset offset) {
  const int lane = threadIdx.x % 32;
  const int64_t stride = int64_t(gridDim.x) * kRowsPerBlock;
  for (int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32; r < slots; r += stride) {
    bool real;
    const QueryRow q = query_row(a, r, &real, D);
    if (q.row < 0) continue;
#pragma unroll
    for (int c = 2 * lane; c < D; c += 64) {
      const float2 x = *reinterpret_cast<const float2*>(a.dq_accum + offset(a, r, q, c));
      *reinterpret_cast<uint32_t*>(a.dq + q.q_at + c) = sm80::pack2<T>(a.scale * x.x, a.scale * x.y);
    }
  }
}

// Launches delta_kernel over every query slot of the problem (compiled once, in shared_kernels.cu).
template <class T>
Status launch_delta(const AttentionBwdProblem& pr, float* delta, cudaStream_t stream) {
  const int64_t slots = query_slots(pr);
  delta_kernel<T><<<unsigned(row_blocks(slots)), kRowThreads, 0, stream>>>(make_args<T>(pr, nullptr), delta,
                                                                           slots, pr.fwd.p.head_dim);
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status::Success;
}

// Calls f(delta), delta being where the backward keeps delta: the caller's buffer when it asked for
// one, otherwise a [B, H, Nq] (packed: [H, total]) fp32 workspace allocated on the stream for this launch
// (delta_extra_bytes in common/lib/flops.h) and freed after the work f enqueues.
template <class F>
Status with_delta(const AttentionBwdProblem& pr, cudaStream_t stream, F&& f) {
  if (pr.p.delta) return f(pr.p.delta);
  const std::size_t bytes = std::size_t(lse_elems(pr.fwd.p)) * sizeof(float);
  return with_workspace(bytes, stream, [&](void* workspace) { return f(static_cast<float*>(workspace)); });
}

}  // namespace fs::bwd
