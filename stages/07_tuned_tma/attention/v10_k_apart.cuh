// flashstages · stage 07 attention · v10 — K_j released apart from V_j: the producer refills K's half of a
// stage as soon as S_j = Q·K_jᵀ is done (fp16, bf16; D = 64, 128, 256).
//
// What changes from v8 (v7's tiles, the grid's last wave split over the keys): when a stage is free.
// In v3's loop a consumer holds two blocks at once, K_j for S_j and V_{j-1} for the product in flight
// under block j's softmax, and releases a stage only when its P·V is done; K_j's half of it has been
// idle since S_j completed, a softmax and a P·V earlier. With kStages stages the producer can then run
// only kStages − 2 blocks ahead of the products that need them: at D = 256, where only 2 stages fit
// beside Q, none — every round waits for its K_j to be loaded after the previous P·V retired. v10 gives
// each stage a second release barrier, empty_k[st] (Smem below): a consumer warp arrives on it once S_j
// is done (Consumer below), on empty[st] once P_j·V_j is, and the producer waits for each before it
// refills that half (produce_k_apart below).
// Why it is faster: K_{j+2} is on its way while block j's softmax and P_{j-1}·V_{j-1} run.
// At D = 64 and 128 (4 and 3 stages) the producer already loads ahead: there v10 is v8 (kKApart false).
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 8192 --dim 256 --batch 2 --heads 8 --version v10
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/online_softmax.cuh"
#include "common/device/sm90.cuh"
#include "common/device/split_kv.cuh"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/last_wave.cuh"
#include "stages/07_tuned_tma/attention/mainloop.cuh"
#include "stages/07_tuned_tma/attention/producer.cuh"
#include "stages/07_tuned_tma/attention/tiles.cuh"

namespace fs::flash_tma::v10 {

using namespace fs::attn;

// v8's tiles (v7's: three consumers at D = 64 and 128, two at D = 256), K released apart from V where a
// block has 2 stages (D = 256). With 3 or 4 stages (D = 128, 64) the producer already loads ahead, and
// the separate release was not kept there (NOTES.md).
template <int D>
struct Config : ws::Config<D, D == 64 ? 128 : D == 128 ? 80 : ws::default_bc(D), D <= 128 ? 3 : 2> {
  using Base = ws::Config<D, D == 64 ? 128 : D == 128 ? 80 : ws::default_bc(D), D <= 128 ? 3 : 2>;
  static constexpr bool kKApart = Base::kStages == 2;
  // v8's shared memory, and with kKApart empty_k [kStages] after its barriers.
  static constexpr std::size_t kSmemBytes = Base::kSmemBytes + (kKApart ? Base::kStages * sizeof(uint64_t) : 0);
  static_assert(kSmemBytes <= 227 * 1024, "what one block may have on an H100");
};
static_assert(!Config<64>::kKApart && !Config<128>::kKApart && Config<256>::kKApart, "K apart at D = 256 alone");

// ws::Smem, and with kKApart the second release barrier of each stage:
//   empty[st]     V_j in stage st is no longer read (P_j·V_j is done): one arrival per consumer warp
//   empty_k[st]   K_j in stage st is no longer read (S_j is done): one arrival per consumer warp
// A parity still names its phase: full_k[st] phase u + 1 needs the refill that waits for empty_k[st]
// phase u, full_v[st] phase u + 1 the one that waits for empty[st] phase u.
template <class Cfg>
struct Smem : ws::Smem<Cfg> {
  using C = Cfg;
  uint64_t* empty_k;  // kKApart only

  __device__ explicit Smem(unsigned char* raw) : ws::Smem<Cfg>(raw) { empty_k = this->v_landed + 1; }

  // Thread 0, before the block's one __syncthreads.
  __device__ __forceinline__ void init_barriers() const {
    sm90::mbarrier_init(this->q_full, 1);  // the producer's expect_tx arrival, then the bytes
    for (int st = 0; st < C::kStages; ++st) {
      sm90::mbarrier_init(&this->full_k[st], 1);
      sm90::mbarrier_init(&this->full_v[st], 1);
      sm90::mbarrier_init(&this->empty[st], C::kConsumerWarps);  // one arrival per consumer warp
      if constexpr (C::kKApart) sm90::mbarrier_init(&empty_k[st], C::kConsumerWarps);
    }
    sm90::mbarrier_init(this->q_landed, 1);
    sm90::mbarrier_init(this->v_landed, 1);
    sm90::fence_mbarrier_init();  // the inits are seen by the TMA unit that completes them
  }

  // kKApart: a consumer warp's release of K_j alone, once S_j is done (release() then frees V_j's half);
  // otherwise nothing (release frees K_j with V_j).
  __device__ __forceinline__ void release_k(int64_t j) const {
    if constexpr (C::kKApart)
      if (threadIdx.x % 32 == 0) sm90::mbarrier_arrive(&empty_k[this->stage_of(j)]);
  }

  // ws::Smem's release of a skipped block, per half: K_j's landing shows only that K's half of use u
  // was released, so V's half waits for V_j's.
  __device__ __forceinline__ void release_skipped(int64_t j) const {
    sm90::mbarrier_wait_parity(&this->full_k[this->stage_of(j)], this->parity_of(j));
    release_k(j);
    if constexpr (C::kKApart) sm90::mbarrier_wait_parity(&this->full_v[this->stage_of(j)], this->parity_of(j));
    this->release(j);
  }
};

// ws::Consumer, with K_j released as soon as S_j is done: its first and finish, each with release_k.
template <class T, class C, bool kSlice = false>
struct Consumer : ws::Consumer<T, C, kSlice> {
  using Base = ws::Consumer<T, C, kSlice>;
  const Smem<C>& smk;  // the same shared memory as Base::sm, with empty_k

  __device__ __forceinline__ Consumer(const Args<T>& args, const Sequence& seq, const Smem<C>& smem, int consumer,
                                      int64_t first = 0, int64_t end = INT64_MAX)
      : Base(args, seq, smem, consumer, first, end), smk(smem) {}

  __device__ __forceinline__ void first() {
    sm90::mbarrier_wait_parity(this->sm.q_full, 0);  // sQ has landed (used once: phase 0)
    sm90::mbarrier_wait_parity(&this->sm.full_k[Smem<C>::stage_of(0)], Smem<C>::parity_of(0));
    sm90::wgmma_fence();  // first wgmma of the warpgroup
    this->issue_s(0);
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(this->acc_s());
    smk.release_k(0);  // K_0 is read
    this->softmax(0);  // O is still 0: nothing to rescale
  }
  __device__ __forceinline__ void finish(int64_t j) {
    sm90::wgmma_wait_group<1>();  // S_j is done; P_{j-1}·V_{j-1} may still run
    sm90::wgmma_fence_operand(this->acc_s());
    smk.release_k(j);             // K_j is read: the producer may refill its half of the stage
    this->softmax(j);             // under P_{j-1}·V_{j-1}
    sm90::wgmma_wait_group<0>();  // P_{j-1}·V_{j-1} is done: O may change, pa and V_{j-1}'s half are free
    this->fence_pv_operands();
    if (this->moved) rescale_o(this->rO, this->alpha);
    this->sm.release(j - 1);
  }
};

// ws::produce with each half of a stage refilled on its own release: K_j once K_{j-kStages} is released
// (empty_k), V_j once V_{j-kStages} is (empty). For kKApart configurations.
template <class C, class T>
__device__ __forceinline__ void produce_k_apart(const Smem<C>& sm, const CUtensorMap* tmQ, const CUtensorMap* tmK,
                                                const CUtensorMap* tmV, const Args<T>& a, const Sequence& s,
                                                int64_t n_blocks, int64_t first) {
  static_assert(C::kKApart, "two release barriers per stage");
  constexpr int D = C::kD, E = C::kElemBytes;
  sm90::setmaxnreg_dec<ws::kProducerRegs>();
  if (threadIdx.x >= 32 || n_blocks == 0) return;
  const bool issuer = threadIdx.x == 0;
  const PlaneRow q = q_plane_row(a, s), kv = kv_plane_row(a, s);
  const int64_t last = n_blocks - 1;  // stages count from `first`; rows of K and V from block 0
  const int q_from = first_foreign_row(s.q0, C::kBr, s.nq, q.row, a.seq_q);
  const int v_from = first_foreign_row((first + last) * C::kBc, C::kBc, s.nk, kv.row, a.seq_k);
  // K_j, then V_j once `v_free` (if any) has completed its phase of that parity.
  auto load_kv = [&](int64_t j, uint64_t* v_free, uint32_t parity) {
    const int st = Smem<C>::stage_of(j);
    unsigned char* sK = sm.k_tile(j);
    uint64_t* v_bar = j == last && v_from < C::kBc ? sm.v_landed : &sm.full_v[st];
    sm90::mbarrier_arrive_expect_tx(&sm.full_k[st], C::kKVBytes);
    const int64_t row = kv.row + (first + j) * C::kBc;
    load_tile<D, E>(sK, tmK, C::kBc, row, kv.plane, &sm.full_k[st]);
    if (v_free) sm90::mbarrier_wait_parity(v_free, parity);
    sm90::mbarrier_arrive_expect_tx(v_bar, C::kKVBytes);
    load_tile<D, E>(sK + C::kKVBytes, tmV, C::kBc, row, kv.plane, v_bar);
  };
  const int64_t prologue = n_blocks < C::kStages ? n_blocks : C::kStages;  // stages free from the start
  if (issuer) {
    uint64_t* q_bar = q_from < C::kBr ? sm.q_landed : sm.q_full;
    sm90::mbarrier_arrive_expect_tx(q_bar, C::kQBytes);
    load_tile<D, E>(sm.sQ, tmQ, C::kBr, q.row + s.q0, q.plane, q_bar);
    for (int64_t j = 0; j < prologue; ++j) load_kv(j, nullptr, 0);
  }
  // Q's zeros go in while the first blocks are on their way: the consumers need Q before they can free
  // a stage for the blocks after them.
  if (q_from < C::kBr) ws::zero_and_publish<D, E>(sm.sQ, C::kBr, q_from, sm.q_landed, sm.q_full);
  if (issuer)
    for (int64_t j = prologue; j < n_blocks; ++j) {
      // K_j waits for K_{j-kStages} alone, released a softmax and a P·V earlier than V_{j-kStages}; V_j
      // then for V_{j-kStages}. Each wait's acquire orders the tensor cores' reads of that half before the
      // TMA writes issued after it.
      const int st = Smem<C>::stage_of(j);
      const uint32_t parity = Smem<C>::parity_of(j) ^ 1;
      sm90::mbarrier_wait_parity(&sm.empty_k[st], parity);
      load_kv(j, &sm.empty[st], parity);
    }
  if (v_from < C::kBc)
    ws::zero_and_publish<D, E>(sm.k_tile(last) + C::kKVBytes, C::kBc, v_from, sm.v_landed,
                               &sm.full_v[Smem<C>::stage_of(last)]);
}

// grid: whole_tiles + tail tiles · splits blocks of 1 + C::kConsumers warpgroups (Br = 192 or 128;
// LastWaveArgs, last_wave.cuh). Maps as v7's (launch.cuh).
template <class T, class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v10_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                         const __grid_constant__ CUtensorMap tmV, const LastWaveArgs<T> la) {
  extern __shared__ unsigned char smem_raw[];
  const Args<T>& a = la.a;
  const Smem<C> sm(smem_raw);
  const int64_t x = blockIdx.x, part = x - la.whole_tiles;  // part >= 0: partial block (tile i, slice k)
  const bool whole = part < 0;
  const Sequence s = locate(a, C::kBr, /*reverse_tiles=*/a.causal, whole ? x : la.whole_tiles + part / la.splits);
  const int64_t n_tile = key_blocks(s, C::kBr, C::kBc, a.causal);  // what the tile's Br rows need
  const KeySlice slice = whole ? KeySlice{0, n_tile} : key_slice(n_tile, part % la.splits, la.splits);
  const int64_t n_blocks = slice.end - slice.begin;
  const int wg = ws::warpgroup();

  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();  // the barriers are initialized; from here on the warpgroups meet only through them
  if (wg == 0) {
    if constexpr (C::kKApart)
      produce_k_apart(sm, &tmQ, &tmK, &tmV, a, s, n_blocks, slice.begin);
    else
      ws::produce(sm, &tmQ, &tmK, &tmV, a, s, n_blocks, slice.begin);
    return;
  }

  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  if (whole) {  // a whole tile, as v8 runs it
    Consumer<T, C> w(a, s, sm, wg - 1);
    ws::run_rounds(w, sm, n_blocks);
    w.store();
  } else {
    Consumer<T, C, /*kSlice=*/true> w(a, s, sm, wg - 1, slice.begin, slice.end);
    ws::run_rounds(w, sm, n_blocks);
    // The slice's result, normalized over its keys alone: the tile's row q0 + r at partial row part·Br + r.
    write_partial(la.o_part, la.lse_part, s, part * C::kBr - s.q0, w.row0, w.rO, w.m, w.l);
  }
}

}  // namespace fs::flash_tma::v10
