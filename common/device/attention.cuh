// flashstages — the attention problem as a tiled kernel sees it, shared by the tensor-core attention
// stages (04 forward, and the backward and Hopper stages built on it): the launch arguments, where a
// block's rows live in dense, padded and packed batches (with the variable lengths checked here, on
// the device) — a query tile's for the forward, a key block's for the backward — which key blocks a
// query tile visits and which need a mask, the mask itself on
// m16n8k16 C fragments, the plain 16-byte loader into padded shared tiles and the 32-bit fragment
// gathers from them, C fragments turned into A fragments, and one kernel launch.
#pragma once

#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "common/device/sm80.cuh"
#include "common/lib/attention.h"
#include "common/lib/cuda_check.h"

namespace fs::attn {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

// The launch arguments every tiled attention kernel takes. Tensors are [B, H, N, D] (dense and padded
// batches) or [H, total, D] (packed batches, seq_q / seq_k = the totals), with KVH heads in place of H
// for K and V (grouped-query attention); see fs_attention_params. Where they lie is their strides'
// (q_strides ...: strides_of, the contiguous layout's unless the caller set others); a kernel that takes
// no strides (its descriptor's AttentionSupport::strided false) addresses rows by the contiguous
// layout's row index (Sequence::q_row0) instead, and validate() lets it run on that layout alone.
template <class T>
struct Args {
  const T* __restrict__ q;
  const T* __restrict__ k;
  const T* __restrict__ v;
  T* __restrict__ o;
  float* __restrict__ lse;  // may be null
  int64_t seq_q, seq_k;
  int64_t heads;
  int64_t group;            // query heads per K/V head, H / KVH (1: multi-head attention)
  int64_t max_seq_q;        // the most query rows of one entry (packed: an entry with more is invalid)
  int64_t q_tiles;          // query tiles per (batch entry, head): the grid is B·H·q_tiles blocks
  float scale_log2;         // softmax scale · log2(e): exp(scale·s) = exp2(scale_log2·s); may be negative
  bool causal;
  const int32_t* __restrict__ seq_lens;      // [B] or null
  const int32_t* __restrict__ cu_seqlens_q;  // [B+1] or null (then cu_seqlens_k is null too)
  const int32_t* __restrict__ cu_seqlens_k;
  TensorStrides q_strides, k_strides, v_strides, o_strides;  // element strides {batch, head, row}
};

template <class T>
Args<T> make_args(const AttentionProblem& pr, int Br) {
  const AttentionParams& p = pr.p;
  Args<T> a;
  a.q = static_cast<const T*>(p.q);
  a.k = static_cast<const T*>(p.k);
  a.v = static_cast<const T*>(p.v);
  a.o = static_cast<T*>(p.o);
  a.lse = p.lse;
  a.seq_q = p.seq_q;
  a.seq_k = p.seq_k;
  a.heads = p.heads;
  a.group = group_size(p);
  a.max_seq_q = pr.max_seq_q;
  a.q_tiles = (pr.max_seq_q + Br - 1) / Br;
  a.scale_log2 = pr.scale * kLog2e;
  a.causal = p.causal != 0;
  a.seq_lens = p.seq_lens;
  a.cu_seqlens_q = p.cu_seqlens_q;
  a.cu_seqlens_k = p.cu_seqlens_k;
  a.q_strides = strides_of(p, Tensor::Q);
  a.k_strides = strides_of(p, Tensor::K);
  a.v_strides = strides_of(p, Tensor::V);
  a.o_strides = strides_of(p, Tensor::O);
  return a;
}

// One block's share of the problem: query rows [q0, q0 + Br) of one (batch entry, head).
struct Sequence {
  int64_t q_row0;   // row of Q, O (and entry of LSE) where this (b, h) starts ([*, D] row index)
  int64_t k_row0;   // the same for K, V: the K/V head of this query head (several share one under GQA)
  int64_t nq, nk;   // query and key rows that take part
  int64_t nq_rows;  // query rows to write: nq, or seq_q for padded batches (rows past nq get zeros)
  int64_t q0;       // this block's first query row, within the sequence
  int64_t offset;   // nk - nq: query i sees keys j <= i + offset under the causal mask
  // The strided kernels' view of the same rows: the element offsets of the sequence's first row in Q,
  // K, V and O as their strides lay them out (row r of Q at q + q_at + r·q_strides.row). LSE, and every
  // workspace, keep q_row0's contiguous rows.
  int64_t q_at, k_at, v_at, o_at;
};

// The rows of query head h of batch entry b (flat index bh = b·H + h, its K/V head h / G): where they
// start in Q, O, LSE and in K, V, and how many take part; the block's tile starts at row q0 of them.
//
// The variable lengths are checked here, on the device, entry by entry (the launch never reads them
// on the host, so that it can be captured into a CUDA graph): padded, 0 <= seq_lens[b] <= min(Nq, Nk);
// packed, 0 <= cu[b] <= cu[b+1] <= the total for Q and for K, at most max_seq_q query rows, and under
// the causal mask no more queries than keys. An entry that breaks them becomes an empty sequence
// (nq = nk = nq_rows = 0): its blocks read nothing and write nothing. fs_check_varlen names the fault.
// (Only those three fields are cleared: clearing the row offsets too cost v1 at D = 64 a fifth of its
// speed, through a different register allocation, measured on the H100.)
// A: Args or the backward's arguments (stage 05's bwd::Args), which hold the same fields. The backward
// passes max_seq_k, the bound its key-block grid was sized by: a packed entry with more keys breaks its
// rules too. The forward passes none, and the test folds away.
template <class A>
__device__ __forceinline__ Sequence sequence_of(const A& a, int64_t bh, int64_t b, int64_t h, int64_t q0,
                                                int64_t max_seq_k = INT64_MAX) {
  Sequence s{};
  s.q0 = q0;
  bool valid = true;
  if (a.cu_seqlens_q) {
    const int64_t q_begin = a.cu_seqlens_q[b], q_end = a.cu_seqlens_q[b + 1];
    const int64_t k_begin = a.cu_seqlens_k[b], k_end = a.cu_seqlens_k[b + 1];
    s.nq = q_end - q_begin;
    s.nk = k_end - k_begin;
    valid = q_begin >= 0 && s.nq >= 0 && q_end <= a.seq_q && k_begin >= 0 && s.nk >= 0 && k_end <= a.seq_k &&
            s.nq <= a.max_seq_q && s.nk <= max_seq_k && !(a.causal && s.nq > s.nk);
    s.nq_rows = s.nq;
    s.q_row0 = h * a.seq_q + q_begin;
    s.k_row0 = h / a.group * a.seq_k + k_begin;  // K/V: [KVH, total, D]
    s.q_at = h * a.q_strides.head + q_begin * a.q_strides.row;
    s.o_at = h * a.o_strides.head + q_begin * a.o_strides.row;
    s.k_at = h / a.group * a.k_strides.head + k_begin * a.k_strides.row;
    s.v_at = h / a.group * a.v_strides.head + k_begin * a.v_strides.row;
  } else {
    s.nq = a.seq_lens ? a.seq_lens[b] : a.seq_q;
    s.nk = a.seq_lens ? a.seq_lens[b] : a.seq_k;
    valid = s.nq >= 0 && s.nq <= a.seq_q && s.nk <= a.seq_k;
    s.nq_rows = a.seq_q;
    s.q_row0 = bh * a.seq_q;
    s.k_row0 = bh / a.group * a.seq_k;  // K/V head b·KVH + h / G = bh / G (common/lib/attention.h)
    s.q_at = b * a.q_strides.batch + h * a.q_strides.head;
    s.o_at = b * a.o_strides.batch + h * a.o_strides.head;
    s.k_at = b * a.k_strides.batch + h / a.group * a.k_strides.head;
    s.v_at = b * a.v_strides.batch + h / a.group * a.v_strides.head;
  }
  if (!valid) s.nq = s.nk = s.nq_rows = 0;  // no row to read or write: the row offsets go unused
  s.offset = s.nk - s.nq;
  return s;
}

// Tile x of the grid's B·H·q_tiles → its sequence and query tile. Tiles of one (b, h) are consecutive so
// that they run together and share that head's K and V in L2 (and so are the heads of one group under
// grouped-query attention, which read the same K and V). With reverse_tiles the last query tile comes
// first: under a causal mask it has the most keys, and starting the longest blocks first keeps the end
// of the grid from waiting on one of them.
template <class T>
__device__ __forceinline__ Sequence locate(const Args<T>& a, int Br, bool reverse_tiles, int64_t x) {
  const int64_t bh = x / a.q_tiles, b = bh / a.heads, h = bh % a.heads;
  const int64_t tile = reverse_tiles ? a.q_tiles - 1 - x % a.q_tiles : x % a.q_tiles;
  return sequence_of(a, bh, b, h, tile * Br);
}
// The tile of block blockIdx.x, for a grid of one block per tile.
template <class T>
__device__ __forceinline__ Sequence locate(const Args<T>& a, int Br, bool reverse_tiles) {
  return locate(a, Br, reverse_tiles, blockIdx.x);
}

// The mirror of locate for the backward's K/V-outer kernels: key rows [k0, k0 + Bc) of one (batch
// entry, K/V head), and the G query heads of its group, which the block streams past them.
struct KeyBlock {
  int64_t k_row0;   // row of K, V, dK, dV where this (b, K/V head) starts ([*, D] row index)
  int64_t q_head0;  // the group's first query head, as the row index counts heads: b·H + h, or h (packed)
  int64_t q_shift;  // rows before the entry within each head: cu_seqlens_q[b] (packed), else 0
  int64_t nq, nk;   // query and key rows that take part (nq 0 for a block past the last key: it meets none)
  int64_t nk_rows;  // key rows to write: nk, or Nk for padded batches (rows past nk get zeros)
  int64_t k0;       // this block's first key row, within the sequence
  int64_t offset;   // nk - nq: query i sees keys j <= i + offset under the causal mask
  // The strided kernels' view (Sequence::q_at): the element offsets of the K/V head's first row in K
  // (dK) and V (dV), and of the entry's first row of the group's first query head in Q (dQ) and O (dO).
  int64_t k_at, v_at, q_at, o_at;
  // The first row of Q, dO, dQ (and entry of LSE, delta) of query head bh, q_head0 <= bh < q_head0 + G;
  // seq_q: Nq, or the packed total, the rows of one head.
  __device__ int64_t q_base(int64_t bh, int64_t seq_q) const { return bh * seq_q + q_shift; }
};

// Block x of a grid of B·KVH·ceil(max_seq_k / Bc) blocks → its key block. Its entry is checked as
// sequence_of checks it, with max_seq_k (packed batches: an entry with more keys has no block for
// some of them), and one that breaks the rules gets nq = nk = nk_rows = 0: nothing read, nothing
// written. A padded entry's key blocks at or past nk still write their rows' zeros.
// kVarlen false: a dense batch, every field from the sizes alone. The kernels are built both ways
// because the variable-length fields, live in registers across the whole key loop, pushed the tuned
// kernels into spilling (v9 at D = 64: 28 bytes where the dense build has none; ptxas -v, sm_90).
// x: the block's place in that order, blockIdx.x unless a kernel dispatches its key blocks in another
// order (stage 07's backward v11: last key first within a head).
template <bool kVarlen, class A>
__device__ __forceinline__ KeyBlock key_block_of(const A& a, int Bc, int64_t x) {
  KeyBlock kb;
  if constexpr (!kVarlen) {
    const int64_t kv_tiles = (a.seq_k + Bc - 1) / Bc, bkv = x / kv_tiles;  // bkv: b·KVH + kvh
    kb.k_row0 = bkv * a.seq_k;
    kb.q_head0 = bkv * a.group;  // b·H + kvh·G
    kb.q_shift = 0;
    kb.nq = a.seq_q;
    kb.nk = kb.nk_rows = a.seq_k;
    kb.k0 = x % kv_tiles * Bc;
    kb.offset = a.seq_k - a.seq_q;
    const int64_t kv_heads = a.heads / a.group, b = bkv / kv_heads, kvh = bkv % kv_heads;
    kb.k_at = b * a.k_strides.batch + kvh * a.k_strides.head;
    kb.v_at = b * a.v_strides.batch + kvh * a.v_strides.head;
    kb.q_at = b * a.q_strides.batch + kvh * a.group * a.q_strides.head;
    kb.o_at = b * a.o_strides.batch + kvh * a.group * a.o_strides.head;
  } else {
    const int64_t kv_tiles = (a.max_seq_k + Bc - 1) / Bc;
    const int64_t bkv = x / kv_tiles, kv_heads = a.heads / a.group;
    const int64_t b = bkv / kv_heads, h = bkv % kv_heads * a.group;  // h: the group's first query head
    const Sequence s = sequence_of(a, bkv * a.group, b, h, 0, a.max_seq_k);
    kb.k_row0 = s.k_row0;
    kb.q_head0 = a.cu_seqlens_q ? h : bkv * a.group;
    kb.q_shift = s.q_row0 - kb.q_head0 * a.seq_q;
    kb.k0 = x % kv_tiles * Bc;
    kb.nq = kb.k0 < s.nk ? s.nq : 0;
    kb.nk = s.nk;
    kb.nk_rows = a.seq_lens && s.nq_rows > 0 ? a.seq_k : s.nk;  // an entry that breaks the rules has nq_rows 0
    kb.offset = s.offset;
    kb.k_at = s.k_at, kb.v_at = s.v_at, kb.q_at = s.q_at, kb.o_at = s.o_at;
  }
  return kb;
}
// The key block of block blockIdx.x.
template <bool kVarlen, class A>
__device__ __forceinline__ KeyBlock key_block_of(const A& a, int Bc) {
  return key_block_of<kVarlen>(a, Bc, int64_t(blockIdx.x));
}

// How many key blocks of Bc the tile's rows see: all of them, or under the causal mask up to the
// diagonal of its last real row. Zero when the tile holds no real row (then it only writes zeros).
__device__ __forceinline__ int64_t key_blocks(const Sequence& s, int Br, int Bc, bool causal) {
  if (s.q0 >= s.nq) return 0;
  const int64_t last_row = min(s.q0 + Br, s.nq) - 1;
  const int64_t kv_end = causal ? min(s.nk, last_row + s.offset + 1) : s.nk;
  return (kv_end + Bc - 1) / Bc;
}

// How many of those blocks need no mask for any real row of the tile: every key in range and, under
// the causal mask, at or left of the tile's first row's diagonal (row q0 sees keys <= q0 + offset).
__device__ __forceinline__ int64_t unmasked_blocks(const Sequence& s, int Bc, bool causal) {
  if (s.q0 >= s.nq) return 0;
  const int64_t in_range = s.nk / Bc;
  return causal ? min(in_range, (s.q0 + s.offset + 1) / Bc) : in_range;
}

// Readies the raw scores S of one key block (m16n8k16 C fragments: [row tile][key tile][4]) for the
// softmax: -inf where the mask hides a key, and all of them negated first when the scale is negative
// (a negative scale reverses the order of the scores; flipped, the row maximum is still a plain max
// and the exponent uses |scale|).
// Key col is hidden from query row when col >= nk (past the end) or, under the causal mask, when
// col > row + offset. Entry e of tile nt is row row0 + r, column col0 + c with r = 16·mt + g + 8·(e/2)
// and c = 8·nt + 2t + e%2 (row0: the warp's first row, col0: the block's first key); in those 32-bit
// block coordinates the tests are c >= nk - col0 and c - r > row0 + offset - col0, where c - r is a
// constant plus 2t - g.
template <bool kMasked, int kMT, int kNT>
__device__ __forceinline__ void mask_scores(float (&rS)[kMT][kNT][4], bool negate, const Sequence& s, int64_t row0,
                                            int64_t col0, bool causal) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  if (negate)  // the same for the whole grid: no divergence, and usually not taken
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) rS[mt][nt][e] = -rS[mt][nt][e];
  if constexpr (kMasked) {
    constexpr int64_t kFar = 1 << 20;  // further than any key of the block is from any row of the warp
    const int keys = int(min(s.nk - col0, kFar));
    const int diagonal = causal ? int(max(min(row0 + s.offset - col0, kFar), -kFar)) : int(kFar);
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = 16 * mt + g + 8 * (e / 2), c = 8 * nt + 2 * t + e % 2;
          if (c >= keys || c - r > diagonal) rS[mt][nt][e] = -INFINITY;
        }
  }
}

// ---- Padded shared tiles: plain loads in, 32-bit fragment gathers out --------------------------
// A [rows][D] tile stored with rows kStride = D + 8 elements apart: the 8 extra elements (16 bytes)
// put the 8 lanes that read one column of fragments on 8 different 4-byte banks instead of one
// (docs/04_flash_fwd.md, "bank conflicts").

// Rows [first, first + rows) of a sequence's [n, D] matrix, its rows ld elements apart (D: contiguous;
// a strided tensor's row stride), into a padded shared tile, 16 bytes per load and store; rows past n
// become zeros (a zero V row times P = 0 adds nothing; garbage could be NaN).
template <class T, int D, int kThreads>
__device__ __forceinline__ void load_tile(T* dst /* [rows][D+8] */, const T* src /* [n, D] */, int64_t first,
                                          int rows, int64_t n, int64_t ld = D) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int e = threadIdx.x; e < rows * kChunks; e += kThreads) {
    const int r = e / kChunks, c = e % kChunks * 8;
    uint4 x = make_uint4(0, 0, 0, 0);
    if (first + r < n) x = *reinterpret_cast<const uint4*>(src + (first + r) * ld + c);
    *reinterpret_cast<uint4*>(dst + r * (D + 8) + c) = x;
  }
}

// The same copy with cp.async: each 16-byte chunk goes global → shared without a register round trip
// and without stalling the thread; rows past n read nothing and are zero-filled by cp.async itself.
// The caller commits the group and waits for it.
template <class T, int D, int kThreads>
__device__ __forceinline__ void load_tile_async(T* dst /* [rows][D+8] */, const T* src /* [n, D] */,
                                                int64_t first, int rows, int64_t n) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  for (int e = threadIdx.x; e < rows * kChunks; e += kThreads) {
    const int r = e / kChunks, c = e % kChunks * 8;
    const bool in_range = first + r < n;
    sm80::cp_async_cg_16_zfill(dst + r * (D + 8) + c, in_range ? src + (first + r) * D + c : src, in_range ? 16 : 0);
  }
}

__device__ __forceinline__ uint32_t lds32(const void* p) { return *reinterpret_cast<const uint32_t*>(p); }

// A fragment (16 rows × 16 columns starting at r0, k0) of a padded row-major tile.
template <int kStride, class T>
__device__ __forceinline__ void lds_a(uint32_t (&a)[4], const T* tile, int r0, int k0) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const T* p = tile + (r0 + g) * kStride + k0 + 2 * t;
  a[0] = lds32(p);
  a[1] = lds32(p + 8 * kStride);
  a[2] = lds32(p + 8);
  a[3] = lds32(p + 8 * kStride + 8);
}

// B fragment of S = Q Kᵀ (k = head dim k0.., n = keys n0..n0+7): B[k][n] = K[n][k], so each register
// is two neighbours in a row of sK.
template <int kStride, class T>
__device__ __forceinline__ void lds_b_rows(uint32_t& b0, uint32_t& b1, const T* tile, int n0, int k0) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const T* p = tile + (n0 + g) * kStride + k0 + 2 * t;
  b0 = lds32(p);
  b1 = lds32(p + 8);
}

// The gather of lds_b_cols (below) with the lane's column n given: lane 4·g + t supplies column g of the B
// fragment, and that column is column n of the tile. lds_b_cols passes n0 + g (the 8 columns n0..n0+7
// in order); a caller may pass any column per lane and so choose which tile column lands where in
// the C fragment (stage 05 v3 does, to put four neighbouring columns in one thread).
template <int kStride, class T>
__device__ __forceinline__ void lds_b_col_of_lane(uint32_t& b0, uint32_t& b1, const T* tile, int k0, int n) {
  const int t = threadIdx.x % 4;
  const uint16_t* p = reinterpret_cast<const uint16_t*>(tile) + (k0 + 2 * t) * kStride + n;
  b0 = sm80::pack2_bits(p[0], p[kStride]);
  b1 = sm80::pack2_bits(p[8 * kStride], p[9 * kStride]);
}

// B fragment of O += P V (k = keys k0.., n = head dim n0..n0+7): B[k][n] = V[k][n], so each register
// pairs two rows of sV in one column: two 16-bit loads.
template <int kStride, class T>
__device__ __forceinline__ void lds_b_cols(uint32_t& b0, uint32_t& b1, const T* tile, int k0, int n0) {
  lds_b_col_of_lane<kStride>(b0, b1, tile, k0, n0 + threadIdx.x % 32 / 4);
}

// Two fp32 C fragments side by side (columns n0..n0+7 and n0+8..n0+15 of the same 16 rows) → the A
// fragment of a 16-wide k step over those columns, rounded to T, without leaving registers: the C
// layout (c[0..1] = row g, columns 2t, 2t+1; c[2..3] = row g+8) of the two tiles is exactly the A layout
// (a[0], a[1] from the left tile, a[2], a[3] from the right). What a product of a product needs:
// P of S = Q Kᵀ as the A operand of P V (forward), Pᵀ and dSᵀ as the A operands of dV += Pᵀ dO and
// dK += dSᵀ Q (backward).
template <class T>
__device__ __forceinline__ void a_from_c(uint32_t (&a)[4], const float (&left)[4], const float (&right)[4]) {
  a[0] = sm80::pack2<T>(left[0], left[1]);    // row g,     columns 2t, 2t+1
  a[1] = sm80::pack2<T>(left[2], left[3]);    // row g + 8, columns 2t, 2t+1
  a[2] = sm80::pack2<T>(right[0], right[1]);  // row g,     columns 8 + 2t, 8 + 2t+1
  a[3] = sm80::pack2<T>(right[2], right[3]);  // row g + 8, columns 8 + 2t, 8 + 2t+1
}

// ---- One launch (host) ---------------------------------------------------------------------------

// Launches a kernel built for tile configuration C (kBr, kThreads, kSmemBytes) on `stream`:
// B·H·ceil(max Nq / Br) blocks.
template <class C, class T>
Status launch_kernel(void (*kernel)(Args<T>), const AttentionProblem& pr, cudaStream_t stream) {
  const Args<T> a = make_args<T>(pr, C::kBr);
  const int64_t blocks = pr.p.batch * pr.p.heads * a.q_tiles;
  if (blocks > INT_MAX) return Status::InvalidSize;  // gridDim.x limit: about 2^31 · 64 query rows
  // Above 48 KB a kernel must opt in to the larger dynamic shared memory carve-out.
  FS_RETURN_IF_CUDA_ERROR(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::kSmemBytes)));
  kernel<<<unsigned(blocks), C::kThreads, C::kSmemBytes, stream>>>(a);
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status::Success;
}

}  // namespace fs::attn
