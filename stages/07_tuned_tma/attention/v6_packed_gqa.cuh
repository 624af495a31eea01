// flashstages · stage 07 attention · v6 — packed grouped-query heads: one tile holds rows of every
// query head of a K/V group, so K and V are read once per group (fp16, bf16; D = 64, 128, 256).
//
// What changes from v5: which rows a tile holds, where the grid has grouped K/V (G = H / KVH > 1) and
// query heads too short to fill a tile. v5's tile is 128 rows of one query head, so the G heads of a
// group each load the group's K and V; decoding is the worst case (each head has one query row, so a
// tile holds one real row of 128). v6 packs: the tile's rows are the (query, head) pairs of one (batch
// entry, K/V head), query-major —
//     packed row p  =  query i = p / G  of  query head kvh·G + p % G
// — so a decoding tile holds all G heads, and the grid takes B·KVH·ceil(Nq·G / 128) tiles instead of
// B·H·ceil(Nq / 128), v5's split-KV spreading their keys over the SMs. The consumers fill sQ themselves
// (a tile's rows come from G planes of Q, which no TMA box describes), mask each row with its own query,
// and scatter each row to its head when they store.
// Why it is faster: G times less K/V traffic where the work is memory-bound. Where G = 1, or the heads
// fill their tiles, the launch is v5's (v6.cu, packs()).
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --batch 4 --heads 32 --kv-heads 1 --seq 1 --seq-k 8192 --dim 128 --version v6
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/online_softmax.cuh"
#include "common/device/sm80.cuh"
#include "common/device/sm90.cuh"
#include "common/device/split_kv.cuh"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/mainloop.cuh"
#include "stages/07_tuned_tma/attention/pingpong.cuh"
#include "stages/07_tuned_tma/attention/producer.cuh"

namespace fs::flash_tma::v6 {

using namespace fs::attn;
// v2's block, v3's consumer steps, v4's turns, v5's slices; v6 changes the rows.
using ws::Config;
using ws::Consumer;
using ws::kWarpgroup;
using ws::Smem;

// The three changes, in the code below:
//  1. The consumers fill sQ themselves (GroupConsumer::load_q): a tile's rows come from G planes of Q,
//     interleaved, which no TMA box describes. Each consumer warpgroup copies its 64 rows with
//     cp.async into the same 128-byte-swizzled layout TMA writes (a row past the sequence's end
//     becomes zeros), makes the copies visible to the async proxy, and meets at a named barrier
//     before its first wgmma. The producer loads only K and V (produce_kv).
//  2. The mask takes each row's own query (GroupConsumer::mask): row r's diagonal is i + offset, with
//     i = p / G, no longer the row's index. The key blocks a consumer visits are those of the queries
//     its 64 rows cover (query_span).
//  3. The store scatters rows to their heads (store_rows): packed row p goes to row i of head
//     kvh·G + p % G of O and LSE, or of the split workspace, whose rows are O's: v5's merge is unchanged.
//
// Block x of a B·KVH·q_tiles grid (a.q_tiles: tiles of Br packed rows per (batch entry, K/V head)) →
// the sequence of the group's first query head, kvh·G, with q0 the tile's first packed row.
template <class T>
__device__ __forceinline__ Sequence locate_group(const Args<T>& a, int Br) {
  const int64_t x = blockIdx.x, kv_heads = a.heads / a.group;
  const int64_t bkv = x / a.q_tiles;  // b·KVH + kvh
  // Under the causal mask the last tiles have the most keys: they go first, as in locate().
  const int64_t tile = a.causal ? a.q_tiles - 1 - x % a.q_tiles : x % a.q_tiles;
  const int64_t b = bkv / kv_heads, h = bkv % kv_heads * a.group;
  return sequence_of(a, b * a.heads + h, b, h, tile * Br);
}

// The queries that packed rows p .. p + n − 1 of sequence s cover, as a tile of `rows` query rows
// starting at q.q0 — what key_blocks and unmasked_blocks take. Past the real rows (p >= nq·G) it
// starts at or past nq, where both give 0.
struct QuerySpan {
  Sequence q;
  int rows;
};
__device__ __forceinline__ QuerySpan query_span(const Sequence& s, int64_t group, int64_t p, int n) {
  QuerySpan v{s, 1};
  v.q.q0 = p / group;
  if (p < s.nq * group) v.rows = int((min(p + n, s.nq * group) - 1) / group - v.q.q0) + 1;
  return v;
}

// ws::Consumer over packed rows: consumer c owns packed rows q0 + 64c .. q0 + 64c + 63 of the tile,
// and this thread rows g and g + 8 of its warp's 16 of those (g = lane / 4). Its issue, prepare and
// last serve as they are; what depends on which query a row is — the key blocks, the mask, where Q
// comes from, where a row is stored — is replaced here: the constructor's counts, softmax (and finish,
// which calls it), first (and its Q).
template <class T, class C>
struct GroupConsumer : Consumer<T, C, /*kSlice=*/true> {
  using Base = Consumer<T, C, true>;
  using Base::a, Base::s, Base::sm, Base::c, Base::j0, Base::n_mine, Base::n_unmasked, Base::rS, Base::m, Base::l,
      Base::alpha, Base::moved, Base::rO;
  static constexpr int kBc = C::kBc;

  int64_t p0;        // the warpgroup's first packed row
  int64_t query[2];  // the query i of this thread's two rows
  int64_t out[2];    // their row of O and LSE (and of each split's partials)

  __device__ __forceinline__ GroupConsumer(const Args<T>& args, const Sequence& seq, const Smem<C>& smem, int consumer,
                                           int64_t first, int64_t end)
      : Base(args, seq, smem, consumer, first, end), p0(seq.q0 + 64 * consumer) {
    const QuerySpan mine = query_span(s, a.group, p0, 64);  // the queries this warpgroup's rows cover
    n_mine = max(int64_t(0), min(key_blocks(mine.q, mine.rows, kBc, a.causal), end) - first);
    n_unmasked = unmasked_blocks(mine.q, kBc, a.causal);
    const int64_t p = p0 + threadIdx.x / 32 % 4 * 16 + threadIdx.x % 32 / 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      query[h] = (p + 8 * h) / a.group;
      out[h] = s.q_row0 + (p + 8 * h - query[h] * a.group) * a.seq_q + query[h];  // head kvh·G + p % G, row i
    }
  }

  // attn::mask_scores with each row's own diagonal: key col is hidden from row h when col >= nk or,
  // under the causal mask, col > query[h] + offset; in block coordinates c >= nk − col0 and
  // c > diagonal[h].
  template <bool kMasked>
  __device__ __forceinline__ void mask(int64_t col0) {
    mask_scores</*kMasked=*/false>(rS, a.scale_log2 < 0, s, 0, col0, a.causal);  // the negation alone
    if constexpr (kMasked) {
      constexpr int64_t kFar = 1 << 20;  // further than any key of the block is from any row
      const int t = threadIdx.x % 4;
      const int keys = int(min(s.nk - col0, kFar));
      int diagonal[2];
#pragma unroll
      for (int h = 0; h < 2; ++h)
        diagonal[h] = a.causal ? int(max(min(query[h] + s.offset - col0, kFar), -kFar)) : int(kFar);
#pragma unroll
      for (int nt = 0; nt < kBc / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int col = 8 * nt + 2 * t + e % 2;
          if (col >= keys || col > diagonal[e / 2]) rS[0][nt][e] = -INFINITY;
        }
    }
  }
  __device__ __forceinline__ void softmax(int64_t j) {
    const int64_t jt = j0 + j;  // the block in the tile
    if (jt < n_unmasked)
      mask</*kMasked=*/false>(jt * kBc);
    else
      mask</*kMasked=*/true>(jt * kBc);
    moved = softmax_scores(rS, m, l, alpha, fabsf(a.scale_log2));
  }

  // This warpgroup's 64 rows of sQ [Br][D], copied by its 128 threads: 16-byte chunk ch of tile row r
  // (packed row p = q0 + r: query i of head kvh·G + g) from Q's row i of that head (q_at, then g head
  // strides and i row strides: any layout of Q), stored where a
  // 128-byte-swizzled TMA box would put it (panel ch / 8, chunk (ch % 8) ^ (r % 8)); rows past nq
  // are zero-filled and read nothing. Thread t takes chunk t % (D/8) of every (128 / (D/8))-th row, so
  // (i, g) steps by a constant: one division by G before the loop.
  __device__ __forceinline__ void load_q() const {
    constexpr int D = C::kD, kChunks = D / 8, kRowsPerPass = kWarpgroup / kChunks;
    const int t = threadIdx.x % kWarpgroup, ch = t % kChunks;
    const int64_t group = a.group, step_i = kRowsPerPass / group, step_g = kRowsPerPass % group;
    int64_t i = (p0 + t / kChunks) / group, g = p0 + t / kChunks - i * group;
#pragma unroll
    for (int k = 0; k < 64 / kRowsPerPass; ++k) {
      const int row = 64 * c + t / kChunks + k * kRowsPerPass;  // of the tile
      const bool real = i < s.nq;
      const T* src = real ? a.q + s.q_at + g * a.q_strides.head + i * a.q_strides.row + ch * 8 : a.q;
      sm80::cp_async_cg_16_zfill(sm.sQ + ch / 8 * (C::kBr * 128) + row * 128 + ((ch % 8) ^ (row % 8)) * 16, src,
                                 real ? 16 : 0);
      i += step_i, g += step_g;
      if (g >= group) g -= group, ++i;
    }
    sm80::cp_async_commit_group();
    sm80::cp_async_wait_group<0>();
    // cp.async writes through the generic proxy, wgmma reads through the async proxy: each thread's
    // fence after its copies, then the barrier, before any warp of the warpgroup issues a wgmma.
    sm90::fence_proxy_async();
    sm90::bar_sync(3 + c, kWarpgroup);  // named barriers 3 and 4: 1 and 2 are the turns
  }

  // ws::Consumer's first and finish, with this Q and this softmax.
  __device__ __forceinline__ void first() {
    load_q();
    sm90::mbarrier_wait_parity(&sm.full_k[Smem<C>::stage_of(0)], Smem<C>::parity_of(0));
    sm90::wgmma_fence();  // first wgmma of the warpgroup
    this->issue_s(0);
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(this->acc_s());
    softmax(0);  // O is still 0: nothing to rescale
  }
  __device__ __forceinline__ void finish(int64_t j) {
    sm90::wgmma_wait_group<1>();  // S_j is done; P_{j-1}·V_{j-1} may still run
    sm90::wgmma_fence_operand(this->acc_s());
    softmax(j);                   // under P_{j-1}·V_{j-1}
    sm90::wgmma_wait_group<0>();  // P_{j-1}·V_{j-1} is done: O may change, pa and stage j − 1 are free
    this->fence_pv_operands();
    if (moved) rescale_o(rO, alpha);
    sm.release(j - 1);
  }
};

// write_o_lse / write_partial (online_softmax.cuh, split_kv.cuh) for packed rows: this thread's two
// rows go to out[h] of LSE and to row query[h] of head kvh·G + p % G of O, as O's strides lay it out
// (kSplit: to out[h] of split blockIdx.y's partials, which the merge reads as v5's); a row past the
// written rows (query >= nq_rows) is skipped, a real row that saw no key gets 0 and -inf.
template <bool kSplit, class T, class C>
__device__ __forceinline__ void store_rows(const SplitArgs<T>& sa, const GroupConsumer<T, C>& w) {
  constexpr int D = C::kD, kDT = D / 8;
  const Sequence& s = w.s;
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float row_sum = quad_sum(w.l[0][h]);  // all 32 lanes shuffle, before any of them leaves
    if (w.query[h] >= s.nq_rows) continue;
    const bool seen = w.query[h] < s.nq && row_sum > 0.0f;
    const float inv_l = seen ? 1.0f / row_sum : 0.0f;
    const float lse = seen ? (w.m[0][h] + log2f(row_sum)) * kLn2 : -INFINITY;
    if constexpr (kSplit) {
      const int64_t r = blockIdx.y * sa.rows + w.out[h];
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt)
        *reinterpret_cast<float2*>(sa.o_part + r * D + dt * 8 + 2 * t) =
            make_float2(w.rO[0][dt][2 * h] * inv_l, w.rO[0][dt][2 * h + 1] * inv_l);
      if (t == 0) sa.lse_part[r] = lse;
    } else {
      const int64_t p = w.p0 + threadIdx.x / 32 % 4 * 16 + threadIdx.x % 32 / 4 + 8 * h;  // the packed row
      const int64_t g = p - w.query[h] * sa.a.group;                                     // its head in the group
      T* o_row = sa.a.o + s.o_at + g * sa.a.o_strides.head + w.query[h] * sa.a.o_strides.row;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt)
        *reinterpret_cast<uint32_t*>(o_row + dt * 8 + 2 * t) =
            sm80::pack2<T>(w.rO[0][dt][2 * h] * inv_l, w.rO[0][dt][2 * h + 1] * inv_l);
      if (sa.a.lse && t == 0) sa.a.lse[w.out[h]] = lse;
    }
  }
}

// The producer warpgroup, as ws::produce (producer.cuh) without Q: K_j and V_j for the slice's n_blocks
// key blocks from block `first`, up to kStages ahead of the consumers, and the zeros of the last V tile's
// rows past the sequence's end. q_full goes unused: the consumers fill sQ and meet at a named barrier.
template <class C, class T>
__device__ __forceinline__ void produce_kv(const Smem<C>& sm, const CUtensorMap* tmK, const CUtensorMap* tmV,
                                           const Args<T>& a, const Sequence& s, int64_t n_blocks, int64_t first) {
  constexpr int D = C::kD, E = C::kElemBytes;
  sm90::setmaxnreg_dec<ws::kProducerRegs>();
  if (threadIdx.x >= 32 || n_blocks == 0) return;
  const bool issuer = threadIdx.x == 0;
  const PlaneRow kv = kv_plane_row(a, s);
  const int64_t last = n_blocks - 1;  // stages count from `first`; rows of K and V from block 0
  const int v_from = first_foreign_row((first + last) * C::kBc, C::kBc, s.nk, kv.row, a.seq_k);
  // K_j, then V_j.
  auto load_kv = [&](int64_t j) {
    const int st = Smem<C>::stage_of(j);
    unsigned char* sK = sm.k_tile(j);
    uint64_t* v_bar = j == last && v_from < C::kBc ? sm.v_landed : &sm.full_v[st];
    sm90::mbarrier_arrive_expect_tx(&sm.full_k[st], C::kKVBytes);
    const int64_t row = kv.row + (first + j) * C::kBc;
    load_tile<D, E>(sK, tmK, C::kBc, row, kv.plane, &sm.full_k[st]);
    sm90::mbarrier_arrive_expect_tx(v_bar, C::kKVBytes);
    load_tile<D, E>(sK + C::kKVBytes, tmV, C::kBc, row, kv.plane, v_bar);
  };
  const int64_t prologue = n_blocks < C::kStages ? n_blocks : C::kStages;  // stages free from the start
  if (issuer)
    for (int64_t j = 0; j < prologue; ++j) load_kv(j);
  if (issuer)
    for (int64_t j = prologue; j < n_blocks; ++j) {
      // A stage's next use needs its last one released by every consumer warp (ws::produce says why).
      const int st = Smem<C>::stage_of(j);
      const uint32_t parity = Smem<C>::parity_of(j) ^ 1;
      sm90::mbarrier_wait_parity(&sm.empty[st], parity);
      load_kv(j);
    }
  if (v_from < C::kBc)
    ws::zero_and_publish<D, E>(sm.k_tile(last) + C::kKVBytes, C::kBc, v_from, sm.v_landed,
                               &sm.full_v[Smem<C>::stage_of(last)]);
}

// grid: (B·KVH·ceil(max Nq·G / Br), splits) blocks of three warpgroups (locate_group on blockIdx.x, Br =
// 128 packed rows; the slice from blockIdx.y). tmK, tmV as v4's (launch.cuh); Q is read by the
// consumers. kSplit: the slices' partials to the workspace (v5's merge follows); else O and LSE.
template <class T, class C, bool kSplit>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v6_kernel(const __grid_constant__ CUtensorMap tmK, const __grid_constant__ CUtensorMap tmV,
                        const SplitArgs<T> sa) {
  extern __shared__ unsigned char smem_raw[];
  const Args<T>& a = sa.a;
  const Smem<C> sm(smem_raw);
  const Sequence s = locate_group(a, C::kBr);
  const int wg = ws::warpgroup();
  const QuerySpan tile = query_span(s, a.group, s.q0, C::kBr);
  const KeySlice slice = key_slice(key_blocks(tile.q, tile.rows, C::kBc, a.causal), blockIdx.y, gridDim.y);
  const int64_t n_blocks = slice.end - slice.begin;  // what the tile's 128 rows need of this slice

  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();  // the barriers are initialized; from here on the warpgroups meet only through them
  if (wg == 0) {
    produce_kv(sm, &tmK, &tmV, a, s, n_blocks, slice.begin);
    return;
  }

  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  const int c = wg - 1;
  GroupConsumer<T, C> w(a, s, sm, c, slice.begin, slice.end);
  ws::take_turns(w, sm, c, n_blocks);  // v4's rounds and turns over the slice's blocks
  store_rows<kSplit>(sa, w);
}

}  // namespace fs::flash_tma::v6
