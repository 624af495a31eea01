// flashstages — split-KV, shared by the attention forwards that split a query tile's keys over several
// blocks (stage 04's v6, stage 07's v5): which slice of the tile's key blocks a block takes, its partial
// result written to an fp32 workspace, and the kernel that merges the slices by their log-sum-exps.
//
// Block s of `splits` computes, for its rows, the attention over its slice of the keys alone, normalized
// as a whole attention over that slice would be:
//   O_s   = softmax(S[:, slice s]) V[slice s]      (rows: [splits][rows][D])
//   LSE_s = log Σ_{j in slice s} exp(S_ij)         ([splits][rows]; -inf where no key of the slice is seen)
// and the merge combines them per row (docs/04_flash_fwd.md derives it):
//   LSE = log Σ_s exp(LSE_s)        O = Σ_s exp(LSE_s - LSE) · O_s
// Normalized partials, not the raw accumulator and its running (m, l): each slice's result is then an
// attention output in its own right, bounded by the largest |V|, and the merge needs one number per row
// and slice (LSE_s) instead of two; it is also the form in which another GPU would hand over its share
// (ring attention). The workspace is splits · rows · (D + 1) · 4 bytes (common/lib/split_kv.h).
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/online_softmax.cuh"
#include "common/lib/split_kv.h"
#include "common/lib/workspace.h"

namespace fs::attn {

// The split kernel's arguments: the attention's, and where the slices' partial results go. `rows` is
// the number of rows of O ((B or 1)·H·Nq): partial row r of split s is o_part[(s·rows + r)·D ..],
// lse_part[s·rows + r].
template <class T>
struct SplitArgs {
  Args<T> a;
  float* __restrict__ o_part;    // [splits][rows][D]
  float* __restrict__ lse_part;  // [splits][rows]
  int64_t rows;
};

// Block `split` of `splits`: key blocks [begin, end) of the n_tile its tile visits, equal slices (under
// the causal mask a tile visits fewer, so its slices are shorter: every tile's work is spread evenly
// over its splits). Empty when the tile has fewer blocks than splits (or no real row): that block only
// writes O_s = 0, LSE_s = -inf.
struct KeySlice {
  int64_t begin, end;
};
__device__ __forceinline__ KeySlice key_slice(int64_t n_tile, int64_t split, int64_t splits) {
  const int64_t per_split = (n_tile + splits - 1) / splits;
  const int64_t begin = min(n_tile, split * per_split);
  return {begin, min(n_tile, begin + per_split)};
}

// write_o_lse (online_softmax.cuh) into the fp32 workspace of one split: O_s = rO / l and
// LSE_s = ln 2 · (m + log2 l) for the rows that O has, row `row` of the sequence at partial row
// first_row + row (o_part[(first_row + row)·D ..], lse_part[first_row + row]; first_row = s.q_row0 puts
// the partials in O's own row order); a row that saw no key of this slice gets O_s = 0 and
// LSE_s = -inf, which the merge gives zero weight.
template <int kMT, int kDT>
__device__ __forceinline__ void write_partial(float* o_part, float* lse_part, const Sequence& s, int64_t first_row,
                                              int64_t row0, const float (&rO)[kMT][kDT][4],
                                              const float (&m)[kMT][2], const float (&l)[kMT][2]) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  constexpr int D = kDT * 8;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float row_sum = quad_sum(l[mt][h]);  // all 32 lanes shuffle, before any of them leaves
      const int64_t row = row0 + mt * 16 + g + 8 * h;
      if (row >= s.nq_rows) continue;
      const bool seen = row < s.nq && row_sum > 0.0f;
      const float inv_l = seen ? 1.0f / row_sum : 0.0f;
      float* o_row = o_part + (first_row + row) * D;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt)
        *reinterpret_cast<float2*>(o_row + dt * 8 + 2 * t) =
            make_float2(rO[mt][dt][2 * h] * inv_l, rO[mt][dt][2 * h + 1] * inv_l);
      if (t == 0) lse_part[first_row + row] = seen ? (m[mt][h] + log2f(row_sum)) * kLn2 : -INFINITY;
    }
}

// The merge: kMergeThreads threads per block, D/4 of them per row (four columns each), so a block
// holds kMergeThreads·4/D rows of one (batch entry, head).
constexpr int kMergeThreads = 256;
template <int D>
constexpr int kMergeRows = kMergeThreads * 4 / D;

// One row's merge, columns c .. c + 3 (this thread's), into row `row` of sequence s in O (as its strides
// lay it out) and LSE; split i's partial row is p + i·stride. Per row: M = max_s LSE_s; w_s = exp(LSE_s - M) (0 for a slice that saw nothing);
// LSE = M + log Σ w_s and O = Σ w_s O_s / Σ w_s, the same as Σ exp(LSE_s - LSE) O_s. Subtracting M
// keeps every exponent at or below 0; a row that saw no key in any slice (M = -inf) gets O = 0 and
// LSE = -inf, as an unsplit launch gives it, without computing -inf - -inf.
template <class T, int D>
__device__ __forceinline__ void merge_row(const Args<T>& a, const Sequence& s, int64_t row, int c, const float* o_part,
                                          const float* lse_part, int64_t p, int64_t stride, int splits) {
  float lse_max = -INFINITY;
  for (int i = 0; i < splits; ++i) lse_max = fmaxf(lse_max, lse_part[i * stride + p]);
  float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  float sum = 0.0f;
  if (lse_max != -INFINITY)
    for (int i = 0; i < splits; ++i) {
      const float lse_i = lse_part[i * stride + p];
      if (lse_i == -INFINITY) continue;  // this slice saw no key of the row: weight 0, O_s unread
      const float w = expf(lse_i - lse_max);
      const float4 o = *reinterpret_cast<const float4*>(o_part + (i * stride + p) * D + c);
      sum += w;
      acc.x += w * o.x, acc.y += w * o.y, acc.z += w * o.z, acc.w += w * o.w;
    }
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;  // sum >= 1 when any slice saw a key (the max's w is 1)
  *reinterpret_cast<uint2*>(a.o + s.o_at + row * a.o_strides.row + c) =
      make_uint2(sm80::pack2<T>(acc.x * inv, acc.y * inv), sm80::pack2<T>(acc.z * inv, acc.w * inv));
  if (a.lse && c == 0) a.lse[s.q_row0 + row] = sum > 0.0f ? lse_max + logf(sum) : -INFINITY;
}

// The merge of every row, kMergeRows<D> per block. `a` is built with that row count as its tile
// (make_args), so that locate() finds the same sequences, and skips the same invalid entries, as the
// split kernel did: the merge writes exactly the rows an unsplit launch would write. Partial row r of
// split i is o_part[(i·rows + r)·D ..], lse_part[i·rows + r].
template <class T, int D>
__global__ void __launch_bounds__(kMergeThreads) merge_splits_kernel(const Args<T> a, const float* o_part,
                                                                     const float* lse_part, int64_t rows,
                                                                     int splits) {
  constexpr int kLanes = D / 4;  // threads per row
  const Sequence s = locate(a, kMergeRows<D>, /*reverse_tiles=*/false);
  const int64_t row = s.q0 + threadIdx.x / kLanes;
  if (row >= s.nq_rows) return;
  const int64_t r = s.q_row0 + row;  // row of LSE and of each split's partials
  merge_row<T, D>(a, s, row, threadIdx.x % kLanes * 4, o_part, lse_part, r, rows, splits);
}

// ---- The split path's launch (host) ---------------------------------------------------------------

// One workspace for `splits` slices (sa's o_part, lse_part), launch(sa) to fill it with the split
// kernel, then the merge of the slices into O and LSE, all on `stream`, so the merge starts after every
// slice is written. A merge grid too large for gridDim.x returns its code before anything runs.
template <int D, class T, class Launch>
Status split_and_merge(const AttentionProblem& pr, int splits, SplitArgs<T> sa, cudaStream_t stream, Launch launch) {
  const Args<T> merge_args = make_args<T>(pr, kMergeRows<D>);  // the merge's tile: its rows
  const int64_t merge_blocks = pr.p.batch * pr.p.heads * merge_args.q_tiles;
  if (merge_blocks > INT_MAX) return Status::InvalidSize;
  return with_workspace(split_workspace_bytes(pr.p, splits), stream, [&](void* ws) {
    sa.o_part = static_cast<float*>(ws);
    sa.lse_part = sa.o_part + int64_t(splits) * sa.rows * D;
    FS_RETURN_IF_ERROR(launch(sa));
    merge_splits_kernel<T, D>
        <<<unsigned(merge_blocks), kMergeThreads, 0, stream>>>(merge_args, sa.o_part, sa.lse_part, sa.rows, splits);
    FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
    return Status::Success;
  });
}

}  // namespace fs::attn
