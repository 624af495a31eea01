// Stage 07 attention, role header: the producer warpgroup of the warp-specialized block (block.cuh) —
// its whole work: Q once, then K_j and V_j block after block, up to kStages blocks ahead of the
// consumers, and the zeros of what a tile brings past its sequence's end. v2 to v9 run it as it is, but
// v6 (whose consumers fill sQ: it brings a producer of K and V alone), v10 (K_j and V_j refilled on
// releases of their own) and v11 (tile after tile: its own loop, produce_tiles).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/sm90.cuh"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/tiles.cuh"

namespace fs::flash_tma::ws {

// The producer warp's part for a tile that holds rows past its sequence's end (first_foreign_row): wait
// for it to land on `landed` (its phase of parity `parity`: 0, as `landed` is used once per block, but
// in v11, whose blocks run several tiles), zero those rows, and hand it to the consumers with the one
// arrival that completes `publish` (q_full or full_v[st], which then waits for no bytes).
template <int D, int ElemBytes>
__device__ __forceinline__ void zero_and_publish(unsigned char* tile, int rows, int from, uint64_t* landed,
                                                 uint64_t* publish, uint32_t parity = 0) {
  sm90::mbarrier_wait_parity(landed, parity);
  zero_rows<D, ElemBytes>(tile, rows, from, threadIdx.x % 32, 32);
  __syncwarp();  // every lane's zeros, and its fence, before the arrival that publishes them
  if (threadIdx.x % 32 == 0) sm90::mbarrier_arrive(publish);
}

// How the producer fills V_j's tile from the keys `key` .. key + Bc − 1 of a plane: here as K_j's, [Bc][D]
// rows of keys. A version whose V tile is not rows of keys (v9's Vᵀ_j: [D][Bc], the keys along a row)
// brings its own, with kKeyRows false: rows past a sequence's end cannot be zeroed there.
struct VRows {
  static constexpr bool kKeyRows = true;
  template <class C>
  static __device__ __forceinline__ void load(unsigned char* tile, const CUtensorMap* map, int64_t key,
                                              Plane plane, uint64_t* bar) {
    load_tile<C::kD, C::kElemBytes>(tile, map, C::kBc, key, plane, bar);
  }
};

// The producer warpgroup's whole work: give its registers back (a warpgroup instruction), then one
// thread loads Q once and K_j, V_j for n_blocks key blocks of the tile from block `first` on (0; a
// split-KV block's slice starts later: the stages count from the slice's first block), up to kStages
// blocks ahead of the consumers; its warp zeroes what Q's tile and the last V tile hold past the
// sequence's end. VTile loads V_j (VRows, or a version's own).
// No producer thread touches shared memory or a barrier afterwards: its warps may leave, the loads in
// flight complete on their barriers whether or not the issuing thread still runs, and the consumers
// wait for every one of them before they leave.
template <class C, class T, class VTile = VRows>
__device__ __forceinline__ void produce(const Smem<C>& sm, const CUtensorMap* tmQ, const CUtensorMap* tmK,
                                        const CUtensorMap* tmV, const attn::Args<T>& a, const attn::Sequence& s,
                                        int64_t n_blocks, int64_t first = 0) {
  constexpr int D = C::kD, E = C::kElemBytes;
  sm90::setmaxnreg_dec<kProducerRegs>();
  if (threadIdx.x >= 32 || n_blocks == 0) return;
  const bool issuer = threadIdx.x == 0;
  const PlaneRow q = q_plane_row(a, s), kv = kv_plane_row(a, s);
  const int64_t last = n_blocks - 1;  // stages count from `first`; rows of K and V from block 0
  const int q_from = first_foreign_row(s.q0, C::kBr, s.nq, q.row, a.seq_q);
  const int v_from =
      VTile::kKeyRows ? first_foreign_row((first + last) * C::kBc, C::kBc, s.nk, kv.row, a.seq_k) : C::kBc;
  // K_j, then V_j.
  auto load_kv = [&](int64_t j) {
    const int st = Smem<C>::stage_of(j);
    unsigned char* sK = sm.k_tile(j);
    uint64_t* v_bar = j == last && v_from < C::kBc ? sm.v_landed : &sm.full_v[st];
    sm90::mbarrier_arrive_expect_tx(&sm.full_k[st], C::kKVBytes);
    const int64_t row = kv.row + (first + j) * C::kBc;
    load_tile<D, E>(sK, tmK, C::kBc, row, kv.plane, &sm.full_k[st]);
    sm90::mbarrier_arrive_expect_tx(v_bar, C::kKVBytes);
    VTile::template load<C>(sK + C::kKVBytes, tmV, row, kv.plane, v_bar);
  };
  const int64_t prologue = n_blocks < C::kStages ? n_blocks : C::kStages;  // stages free from the start
  if (issuer) {
    uint64_t* q_bar = q_from < C::kBr ? sm.q_landed : sm.q_full;
    sm90::mbarrier_arrive_expect_tx(q_bar, C::kQBytes);
    load_tile<D, E>(sm.sQ, tmQ, C::kBr, q.row + s.q0, q.plane, q_bar);
    for (int64_t j = 0; j < prologue; ++j) load_kv(j);
  }
  // Q's zeros go in while the first blocks are on their way: the consumers need Q before they can free
  // a stage for the blocks after them.
  if (q_from < C::kBr) zero_and_publish<D, E>(sm.sQ, C::kBr, q_from, sm.q_landed, sm.q_full);
  if (issuer)
    for (int64_t j = prologue; j < n_blocks; ++j) {
      // A stage's next use needs its last one (key block j − kStages) released by every consumer warp:
      // the phase of the opposite parity. The wait's acquire, after their wgmma_wait_group and arrivals,
      // orders the tensor cores' reads of the stage before the TMA writes issued below.
      const int st = Smem<C>::stage_of(j);
      const uint32_t parity = Smem<C>::parity_of(j) ^ 1;
      sm90::mbarrier_wait_parity(&sm.empty[st], parity);
      load_kv(j);
    }
  if (v_from < C::kBc)
    zero_and_publish<D, E>(sm.k_tile(last) + C::kKVBytes, C::kBc, v_from, sm.v_landed,
                           &sm.full_v[Smem<C>::stage_of(last)]);
}

}  // namespace fs::flash_tma::ws
