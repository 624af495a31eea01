// Stage 07 attention backward, role header: the producer warp of v2 on — its whole walk. K_j and V_j
// once; then, step after step, Q_i and dO_i (from v4 on also the step's rows of LSE and delta) into
// stage t % kStages as soon as the consumers have released it, up to kStages steps ahead; and the zeros
// of what a tile brings past its sequence's end inside the plane (padded and packed batches), written
// before the tile is handed over.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/bwd_args.cuh"
#include "common/device/sm90.cuh"
#include "stages/07_tuned_tma/attention/tiles.cuh"

namespace fs::flash_bwd_tma {

// What the producer fills, carved out of a version's shared memory: sK, sV [Bc][D]; the stages, each
// Q_i then dO_i ([Br][D] each); rows: [kStages][Br] (LSE · log2 e, delta) pairs (v4 on; unused before).
// The barriers, each counting one arrival of the producer's (an expect_tx or, after zeroing, a plain
// one) but empty[kStages], which counts one per consumer warp:
//   kv_full       K_j, V_j have landed (zeroed past the keys); used once
//   kv_landed     they have landed, when they hold rows past the keys: the warp zeroes them, then kv_full
//   full[st]      stage st's tiles (and rows) are in, zeroed past the sequence; phase u: use u of st
//   empty[st]     the consumers are done with stage st's use u
//   landed[st]    stage st's tiles have landed, when they hold rows past the sequence (then full[st])
struct Stages {
  unsigned char* sK;
  unsigned char* sV;
  unsigned char* sQdO;
  float2* rows;
  uint64_t* kv_full;
  uint64_t* kv_landed;
  uint64_t* full;
  uint64_t* empty;
  uint64_t* landed;
};

// The walk of the producer's warp 0 (all 32 lanes: lane 0 issues the copies, the lanes share the
// zeroing) over the block's `steps` steps; step_of(t): the step's query head bh, tile m and first row
// q_base, as the kernel numbers them. kRows: bring each step's Br rows of the padded (LSE · log2 e,
// delta) pairs (tmRows, launch.cuh) with the tiles, one box of Br · 8 bytes on full[st]; tmRows is
// null without them. block: the block's place in the key blocks' order (attn::key_block_of), which
// names its batch entry; blockIdx.x unless the kernel numbers its blocks otherwise (v12: s blocks per
// key block).
template <class C, bool kRows, class T, class StepOf>
__device__ __forceinline__ void load_steps(const Stages& sm, const CUtensorMap* tmQ, const CUtensorMap* tmK,
                                           const CUtensorMap* tmV, const CUtensorMap* tmdO,
                                           const CUtensorMap* tmRows, const bwd::Args<T>& a,
                                           const attn::KeyBlock& kb, int64_t steps, StepOf step_of,
                                           int64_t kv_tiles, int64_t block = -1) {
  constexpr int D = C::kD, kBr = C::kBr, kBc = C::kBc, kStages = C::kStages;
  const int lane = threadIdx.x % 32;
  const flash_tma::PlaneRow kv = flash_tma::kv_plane_row(a, kb);
  const int kv_from = flash_tma::first_foreign_row(kb.k0, kBc, kb.nk, kv.row, a.seq_k);
  if (lane == 0) {
    uint64_t* bar = kv_from < kBc ? sm.kv_landed : sm.kv_full;
    sm90::mbarrier_arrive_expect_tx(bar, 2 * C::kKVBytes);
    flash_tma::load_tile<D>(sm.sK, tmK, kBc, kv.row + kb.k0, kv.plane, bar);
    flash_tma::load_tile<D>(sm.sV, tmV, kBc, kv.row + kb.k0, kv.plane, bar);
  }
  // K_j's and V_j's rows past the sequence's end, zeroed once the first steps' loads are on their way.
  auto zero_kv = [&] {
    sm90::mbarrier_wait_parity(sm.kv_landed, 0);  // used once: phase 0
    flash_tma::zero_rows<D>(sm.sK, kBc, kv_from, lane, 32);
    flash_tma::zero_rows<D>(sm.sV, kBc, kv_from, lane, 32);
    __syncwarp();  // every lane's zeros, and its fence, before the arrival that publishes them
    if (lane == 0) sm90::mbarrier_arrive(sm.kv_full);
  };
  const int64_t prologue = steps < kStages ? steps : kStages;
  uint32_t landed_phase = 0;  // bit st: the parity of landed[st]'s next phase
  for (int64_t t = 0; t < steps; ++t) {
    if (t == prologue && kv_from < kBc) zero_kv();
    // In 32 bits: a step index is below 2^31 (the query heads of a group times Nq / 64).
    const int st = int(uint32_t(t) % kStages);
    const uint32_t use = uint32_t(t) / kStages;
    // A stage's next use needs its last one (step t − kStages) released by every consumer warp: the
    // phase of the opposite parity. The wait's acquire, after their wgmma waits and arrivals, orders
    // the tensor cores' (and, from v4 on, the lanes') reads of the stage before the TMA writes below.
    if (t >= kStages) sm90::mbarrier_wait_parity(&sm.empty[st], (use & 1) ^ 1);
    const auto s = step_of(t);
    const int64_t i0 = s.m * kBr;
    const flash_tma::PlaneRow q = flash_tma::plane_row(s.q_base, a.seq_q, a.heads);
    const int q_from = flash_tma::first_foreign_row(i0, kBr, kb.nq, q.row, a.seq_q);
    uint64_t* bar = q_from < kBr ? &sm.landed[st] : &sm.full[st];
    unsigned char* sQ = sm.sQdO + st * C::kStageBytes;
    if (lane == 0) {
      sm90::mbarrier_arrive_expect_tx(bar, C::kStageBytes + (kRows ? kBr * 8 : 0));
      flash_tma::load_tile<D>(sQ, tmQ, kBr, q.row + i0, q.plane, bar);
      flash_tma::load_tile<D>(sQ + C::kQBytes, tmdO, kBr, q.row + i0, q.plane, bar);
      if constexpr (kRows) {
        // The step's rows: padded query slot (b·H + h, m·Br), b the block's batch entry, h the step's
        // head; floats 2·i0 .. 2·i0 + 2·Br − 1 of row b·H + h (below 2^31: launch.cuh checks the map).
        // A tensor copy, not the plain cp.async.bulk: racecheck pairs that one's writes with the issuing
        // lane and, not following the bytes the barrier counts, reports every read of the rows.
        const int64_t b = (block < 0 ? int64_t(blockIdx.x) : block) / kv_tiles / (a.heads / a.group);
        sm90::tma_load_2d(sm.rows + st * kBr, tmRows, int32_t(2 * i0), int32_t(b * a.heads + s.bh % a.heads), bar);
      }
    }
    if (q_from < kBr) {
      sm90::mbarrier_wait_parity(&sm.landed[st], (landed_phase >> st) & 1);
      landed_phase ^= 1u << st;
      flash_tma::zero_rows<D>(sQ, kBr, q_from, lane, 32);
      flash_tma::zero_rows<D>(sQ + C::kQBytes, kBr, q_from, lane, 32);
      __syncwarp();  // every lane's zeros, and its fence, before the arrival that publishes them
      if (lane == 0) sm90::mbarrier_arrive(&sm.full[st]);
    }
  }
  if (prologue == steps && kv_from < kBc) zero_kv();
}

}  // namespace fs::flash_bwd_tma
