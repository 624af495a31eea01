// Stage 07 attention, role header: a consumer warpgroup's main loop with one product in flight across
// each softmax (v3's), which v4 to v11 keep: its wgmma products (Products), its steps (Consumer) and its
// rounds over the key blocks (run_rounds). The pingpong turns between two consumers are pingpong.cuh.
//
// The consumer's loop (st(j) = j % kStages, parity u(j) & 1: block.cuh):
//   block 0:  wait full_k[st(0)]; S_0 = Q·K_0ᵀ; wait; mask; softmax_scores (O is still 0)
//   block j:  P_{j-1} → A fragments
//             wait full_k[st(j)]; wgmma_fence; S_j = Q·K_jᵀ; commit          (group 1)
//             wait full_v[st(j-1)]; O += P_{j-1}·V_{j-1}; commit             (group 2)
//             wait_group 1: S_j is done;  mask, softmax_scores (alpha_j)     under group 2
//             wait_group 0: P_{j-1}·V_{j-1} is done; O *= alpha_j; release stage st(j-1)
//   after:    P_last → A fragments; wait full_v; O += P_last·V_last; wait; release; O / l and LSE out
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/online_softmax.cuh"
#include "common/device/sm90.cuh"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/tiles.cuh"

namespace fs::flash_tma {

// A consumer warpgroup's products, for its element type T: kK, the k of one wgmma; s(), the k slices of
// S = Q_c·K_jᵀ (Q's rows `first` .. first + 63 of a tile of `q_rows`, K_j's Bc rows), issued; pv(), the
// slices of O += P·V_j with P from registers (Bc / kK A fragments), issued; to_a(), P's fp32 scores as those
// fragments. The caller commits and waits. For fp16 and bf16 here (a k slice is 16 elements, 32 bytes);
// another element type brings its own specialization (v9_fp8.cuh: fp8).
template <class T>
struct Products {
  static constexpr int kK = 16;

  template <int kBc, int D>
  static __device__ __forceinline__ void s(float (&acc)[kBc / 2], uint32_t q_tile, int q_rows, int first,
                                           uint32_t k_tile) {
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks)
      sm90::wgmma_m64nNk16<kBc, T, false, false>(acc, k_major_descriptor(q_tile, q_rows, first, ks),
                                                 k_major_descriptor(k_tile, kBc, 0, ks), ks > 0);
  }
  template <int kBc, int D>
  static __device__ __forceinline__ void pv(float (&acc)[D / 2], const uint32_t (&pa)[kBc / 16][4],
                                            uint32_t v_tile) {
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk)
      sm90::wgmma_m64nNk16_rs<D, T, /*kTransB=*/true>(acc, pa[kk], v_descriptor(v_tile, kBc, kk), true);
  }
  // Two neighbouring 8-column blocks of S per 16-key fragment: the accumulator's layout is the A operand's.
  template <int kNT>
  static __device__ __forceinline__ void to_a(uint32_t (&pa)[kNT / 2][4], const float (&p)[kNT][4]) {
#pragma unroll
    for (int kk = 0; kk < kNT / 2; ++kk) attn::a_from_c<T>(pa[kk], p[2 * kk], p[2 * kk + 1]);
  }
};

namespace ws {

// What a consumer of a persistent block (kRunOn: v11) knows beyond its tile: the stages' uses before
// this tile's first block (the earlier tiles'), the barrier that brings this tile's Q (of the Q buffer
// the tile has: the caller points q_addr at it) and the phase of it that does, and the barrier on which
// it hands that buffer back once its last S has completed, so that a later tile's Q can load there.
// Empty otherwise, so that the other versions' consumers are what they were.
template <bool kRunOn>
struct RunOn {};
template <>
struct RunOn<true> {
  int64_t use0 = 0;
  uint64_t* q_full = nullptr;
  uint32_t q_parity = 0;
  uint64_t* q_empty = nullptr;
};

// One consumer warpgroup's state and steps, so that a version can put its own work between them (v4's
// turns) or replace one (v6's mask and Q, v10's releases):
//   first()      block 0: S_0, its softmax (O is still 0)
//   prepare()    P_{j-1} → A fragments (rS is free again afterwards, for S_j)
//   issue(j)     S_j and P_{j-1}·V_{j-1}, two wgmma groups
//   finish(j)    wait S_j; mask, softmax_scores under P_{j-1}·V_{j-1}; wait it; O *= alpha_j; release j − 1
//   last()       the last block's P·V; release it
//   store()      O / l and LSE to global memory, from registers
// for j = 1 .. n_mine − 1 between first() and last(). Every member is in registers: the kernel inlines
// every call, and every array is indexed by compile-time constants. With kSlice (split-KV: v5, v6, v8,
// v10) the blocks are the tile's key blocks [first, end), a slice: j counts from the slice's first block
// for the stages, and the mask takes first + j; without it they are all of the tile's, from 0.
// With kRunOn (v11's persistent blocks, which run tile after tile) the caller sets RunOn's members and
// points q_addr at the tile's Q buffer: the stages and Q's barriers run on from one tile to the next, so
// block j of this tile is the stages' use use0 + j (use(j)), this tile's Q is q_full's phase of parity
// q_parity, and release_q hands the buffer back on q_empty after the tile's last S. Without it the uses
// count from 0, Q is sQ on q_full's phase 0, and release_q does nothing.
template <class T, class C, bool kSlice = false, bool kRunOn = false>
struct Consumer : RunOn<kRunOn> {
  using Mma = Products<T>;
  static constexpr int D = C::kD;
  static constexpr int kBc = C::kBc, kNT = kBc / 8, kDT = D / 8;  // 8-column tiles of S and of O

  const attn::Args<T>& a;
  const attn::Sequence& s;
  const Smem<C>& sm;
  const int c;          // rows 64c .. 64c + 63 of the tile
  int64_t row0;         // this warp's first query row
  int64_t j0;           // kSlice: the slice's first key block, counted in the tile
  int64_t n_mine;       // key blocks (of the slice) this warpgroup's rows need: the first ones
  int64_t n_unmasked;   // of those, the ones no row of it needs masked
  uint32_t q_addr;
  float rO[1][kDT][4] = {};  // O, unnormalized: the m64nD accumulator, as stage 04's [row tile][8 columns][4]
  float m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {};
  float rS[1][kNT][4];       // S′ = Q_c·K_jᵀ, then P_j: 64 × Bc over the warpgroup, 16 × Bc per warp
  uint32_t pa[kBc / Mma::kK][4];  // P_{j-1} as the A operand of the product in flight across block j's softmax
  float alpha[1][2];         // block j's factors exp2(m_old − m_new), applied to O once P_{j-1}·V_{j-1} is done
  bool moved;                // whether any of them is not 1

  __device__ __forceinline__ Consumer(const attn::Args<T>& args, const attn::Sequence& seq, const Smem<C>& smem,
                                      int consumer, int64_t first = 0, int64_t end = INT64_MAX)
      : a(args), s(seq), sm(smem), c(consumer), j0(first) {
    attn::Sequence mine = s;  // this warpgroup's 64 rows as a tile of their own: its key blocks and masks
    mine.q0 = s.q0 + 64 * c;
    row0 = mine.q0 + threadIdx.x / 32 % 4 * 16;
    n_mine = attn::key_blocks(mine, 64, kBc, a.causal);
    if constexpr (kSlice) n_mine = max(int64_t(0), min(n_mine, end) - first);
    n_unmasked = attn::unmasked_blocks(mine, kBc, a.causal);
    q_addr = sm90::smem_address(sm.sQ);
  }

  __device__ __forceinline__ float (&acc_s())[kBc / 2] { return reinterpret_cast<float(&)[kBc / 2]>(rS); }
  __device__ __forceinline__ float (&acc_o())[D / 2] { return reinterpret_cast<float(&)[D / 2]>(rO); }
  // Block j's use of the stages: what its stage, its phases and its release are counted by.
  __device__ __forceinline__ int64_t use(int64_t j) const {
    if constexpr (kRunOn) return this->use0 + j;
    return j;
  }
  __device__ __forceinline__ uint32_t k_addr(int64_t j) const { return sm90::smem_address(sm.k_tile(use(j))); }

  // S_j = Q_c·K_jᵀ, issued and committed as one group (the first product overwrites rS: scale-d = 0).
  __device__ __forceinline__ void issue_s(int64_t j) {
    Mma::template s<kBc, D>(acc_s(), q_addr, C::kBr, 64 * c, k_addr(j));
    sm90::wgmma_commit_group();
  }
  // O += P_j·V_j from pa, issued and committed as one group.
  __device__ __forceinline__ void issue_pv(int64_t j) {
    Mma::template pv<kBc, D>(acc_o(), pa, k_addr(j) + C::kKVBytes);
    sm90::wgmma_commit_group();
  }
  // Mask S_j (diagonal and tail blocks only) and run the first part of the online softmax on it: P_j in
  // rS, m and l updated, each row's factor in alpha, `moved` set.
  __device__ __forceinline__ void softmax(int64_t j) {
    const int64_t jt = kSlice ? j0 + j : j;  // the block in the tile
    if (jt < n_unmasked)
      attn::mask_scores</*kMasked=*/false>(rS, a.scale_log2 < 0, s, row0, jt * kBc, a.causal);
    else
      attn::mask_scores</*kMasked=*/true>(rS, a.scale_log2 < 0, s, row0, jt * kBc, a.causal);
    moved = attn::softmax_scores(rS, m, l, alpha, fabsf(a.scale_log2));
  }
  // pa and O hold still until the wgmma that read and wrote them has completed (the caller's wait).
  __device__ __forceinline__ void fence_pv_operands() {
    sm90::wgmma_fence_operand(acc_o());
#pragma unroll
    for (int kk = 0; kk < kBc / Mma::kK; ++kk) sm90::wgmma_fence_operand(pa[kk]);
  }

  __device__ __forceinline__ void first() {
    uint64_t* q_full = sm.q_full;  // sQ has landed: its one phase, or (kRunOn) this tile's buffer's
    uint32_t q_parity = 0;
    if constexpr (kRunOn) q_full = this->q_full, q_parity = this->q_parity;
    sm90::mbarrier_wait_parity(q_full, q_parity);
    sm90::mbarrier_wait_parity(&sm.full_k[Smem<C>::stage_of(use(0))], Smem<C>::parity_of(use(0)));
    sm90::wgmma_fence();  // rS last touched by ordinary instructions (zeroed; in v11 the last tile's softmax)
    issue_s(0);
    sm90::wgmma_wait_group<0>();  // S_0 now: nothing else is in flight to run under it
    sm90::wgmma_fence_operand(acc_s());
    if constexpr (kRunOn)
      if (n_mine == 1) release_q();  // S_0 was this tile's last S
    softmax(0);  // O is still 0: nothing to rescale
  }
  __device__ __forceinline__ void prepare() { Mma::to_a(pa, rS[0]); }
  __device__ __forceinline__ void issue(int64_t j) {
    // Both waits before either product is issued: a wait is a loop each thread leaves on its own, and
    // a wgmma issued after one while another wgmma is in flight makes ptxas serialize them (it
    // inserts a warpgroup arrive on the divergent path: info C7520). V_{j-1} landed long ago anyway.
    sm90::mbarrier_wait_parity(&sm.full_k[Smem<C>::stage_of(use(j))], Smem<C>::parity_of(use(j)));  // K_j
    sm90::mbarrier_wait_parity(&sm.full_v[Smem<C>::stage_of(use(j - 1))],
                               Smem<C>::parity_of(use(j - 1)));  // V_{j-1}
    // pa, and O's last rescale, were written by ordinary instructions; rS was read by them.
    sm90::wgmma_fence();
    issue_s(j);
    issue_pv(j - 1);
  }
  __device__ __forceinline__ void finish(int64_t j) {
    sm90::wgmma_wait_group<1>();  // S_j is done; P_{j-1}·V_{j-1} may still run
    sm90::wgmma_fence_operand(acc_s());
    if constexpr (kRunOn)
      if (j == n_mine - 1) release_q();  // S_j was this tile's last S
    softmax(j);                   // under P_{j-1}·V_{j-1}
    sm90::wgmma_wait_group<0>();  // P_{j-1}·V_{j-1} is done: O may change, pa and stage j − 1 are free
    fence_pv_operands();
    if (moved) attn::rescale_o(rO, alpha);
    sm.release(use(j - 1));
  }
  __device__ __forceinline__ void last() {
    prepare();  // P_last
    int64_t u = n_mine - 1;  // use(n_mine − 1), written out: calling use() here reordered v3's PTX
    if constexpr (kRunOn) u += this->use0;
    sm90::mbarrier_wait_parity(&sm.full_v[Smem<C>::stage_of(u)], Smem<C>::parity_of(u));
    sm90::wgmma_fence();  // pa (P_last) just written, and O rescaled, by ordinary instructions
    issue_pv(n_mine - 1);
    sm90::wgmma_wait_group<0>();  // O is final before the store, and V_last's stage is read
    fence_pv_operands();
    sm.release(use(n_mine - 1));
  }
  __device__ __forceinline__ void store() const { attn::write_o_lse(a, s, row0, rO, m, l); }
  // kRunOn: this warp is done with its tile's Q buffer (every S product that reads it has completed):
  // lane 0 arrives on that buffer's q_empty, one of the consumer warps' arrivals that let the producer
  // load a later tile's Q and write its index there.
  __device__ __forceinline__ void release_q() const {
    if constexpr (kRunOn) {
      __syncwarp();  // the whole warp past its wait for the S products that read Q before lane 0 frees it
      if (threadIdx.x % 32 == 0) sm90::mbarrier_arrive(this->q_empty);
    }
  }
};

// A consumer's rounds over the n_blocks key blocks its tile loads (a slice's, for split tiles): its own
// with one product in flight across each softmax, then the ones past its own, released without being
// read. W is a consumer with Consumer's steps, S the block's shared memory (a version may bring its own
// of either).
template <class W, class S>
__device__ __forceinline__ void run_rounds(W& w, const S& sm, int64_t n_blocks) {
  if (w.n_mine > 0)
    w.first();
  else
    w.release_q();  // kRunOn: rows that need no key block read no Q (a no-op otherwise)
  for (int64_t j = 1; j < w.n_mine; ++j) {
    w.prepare();  // P_{j-1}
    w.issue(j);
    w.finish(j);
  }
  if (w.n_mine > 0) w.last();
  for (int64_t j = w.n_mine; j < n_blocks; ++j) sm.release_skipped(w.use(j));
}

}  // namespace ws

}  // namespace fs::flash_tma
