// flashstages · stage 07 attention backward · v11 — deterministic dQ under the causal mask, shortest
// walk first: a head's key blocks add into each query tile last key first.
//
// What changes from v10 (deterministic mode: key block n adds into query tile m after blocks 0 … n − 1
// have, turns.cuh): under the causal mask a key block's walk starts at the query tile of its diagonal, so
// block n reaches tile m in fewer steps than block n − 1 and then waits for it. v11 turns the order round
// where the mask is on: tile m's adds come from the last key block that sees it down to block 0 (turn
// count(m) − 1 − n, count(m) the key blocks that see the tile), and a head's key blocks are dispatched
// last key first (blockIdx.x runs down the keys), so that every block waited for has the lower blockIdx.x
// and has started (the deadlock rule of turns.cuh). A later key's block reaches each of its tiles before
// an earlier key's block does: no block waits on a longer walk (FlashAttention-3's "shortest processing
// time first" for its deterministic backward).
// Why it is faster: in v10's order the last keys' blocks, whose walks are a few tiles, sit resident until
// the first keys' long walks reach those tiles: under the mask about half of a head's block-time idles.
// The price: within a head the longest walks now start last. Without the mask, or on the atomic path,
// v11 is v10 (the order of the key blocks and of the adds unchanged).
// Measured: not yet on a GPU.
//
// Run: build/h100/stages/07_tuned_tma/attention_bwd/stage07_attention_bwd --dtype fp16 --seq 4096 --dim 128 --batch 2 --heads 16 --causal --deterministic --version v11
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/device/attention.cuh"
#include "common/device/bwd_args.cuh"
#include "common/device/sm80.cuh"
#include "common/device/sm90.cuh"
#include "common/lib/numeric.h"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/tiles.cuh"
#include "stages/07_tuned_tma/attention_bwd/epilogue.cuh"
#include "stages/07_tuned_tma/attention_bwd/dq_writer.cuh"
#include "stages/07_tuned_tma/attention_bwd/producer.cuh"

namespace fs::flash_bwd_tma::v11 {

using namespace fs::attn;
using flash_tma::k_major_descriptor;
using flash_tma::plane_row;
using flash_tma::v_descriptor;
using flash_tma::ws::kWarpgroup;

// v8's: D = 128 Br = 64, two dQ tiles; D = 64: Br = 128, one dQ tile; two stages at both.
template <int D>
struct Config {
  static constexpr int kD = D;
  static constexpr int kBr = D == 64 ? 128 : 64;
  static constexpr int kBc = 128;
  static constexpr int kConsumers = 2;  // consumer c (warpgroup c + 1) owns keys 64c .. 64c + 63 of the block
  static constexpr int kKeysPerWarpgroup = kBc / kConsumers;
  static constexpr int kThreads = (1 + kConsumers) * kWarpgroup;
  static constexpr int kConsumerWarps = kConsumers * kWarpgroup / 32;  // the arrivals that release a stage
  // setmaxnreg: D = 128 as v7 and v8 (40 / 232); D = 64 the forward's 24 / 240, since at 232 the consumers
  // spill 40 bytes (fp16; 60 bf16) with m64n128 accumulators, and at 240 none (fp16; 20 bf16), the
  // producer warpgroup's latency-tolerant loops spilling instead (ptxas -v, NOTES.md).
  static constexpr int kProducerRegs = D == 64 ? 24 : 40;
  static constexpr int kConsumerRegs = D == 64 ? 240 : 232;
  static constexpr int kStages = 2;                                 // steps in shared memory at once
  static constexpr int kDqTiles = D == 64 ? 1 : 2;                  // dQ tiles in shared memory: step t's, t % kDqTiles
  static constexpr int kKVBytes = kBc * D * 2;                      // sK or sV: [Bc][D]
  static constexpr int kQBytes = kBr * D * 2;                       // sQ or sdO: [Br][D]
  static constexpr int kStageBytes = 2 * kQBytes;                   // Q_i then dO_i (what TMA brings)
  static constexpr int kRowBytes = kBr * 8;                         // (LSE·log2 e, delta) of a step: [Br] pairs
  static constexpr bool kPaddedRows = true;                          // the launch pads them (launch.cuh)
  static constexpr bool kDqTileOrder = true;                         // dq_accum as tiles (launch.cuh)
  static constexpr int kDSBytes = kBr * kKeysPerWarpgroup * 2;      // one consumer's dS: [Br][64]
  // One step's dQ tile, fp32, [Br][D] as [kConsumers] blocks of [8 n-blocks][128 threads] float4s,
  // consumer c's m64n64 accumulator in its own order (D = 128: D's panel c; D = 64: rows 64c …).
  static constexpr int kDQBytes = kBr * D * 4;
  // 1024-byte alignment slack, sK, sV, the stages, dS (two steps × two consumers), the dQ tiles, the
  // stages' rows, then the barriers kv_full, kv_landed, full[kStages], empty[kStages], landed[kStages],
  // dq_full[kDqTiles], dq_empty[kDqTiles].
  static constexpr std::size_t kSmemBytes = 1024 + 2 * std::size_t(kKVBytes) + std::size_t(kStages) * kStageBytes +
                                            2 * std::size_t(kConsumers) * kDSBytes + std::size_t(kDqTiles) * kDQBytes +
                                            std::size_t(kStages) * kRowBytes +
                                            (2 + 3 * kStages + 2 * kDqTiles) * sizeof(uint64_t);
  static_assert(D % 64 == 0, "whole 64-element panels");
  static_assert(kKeysPerWarpgroup == 64 && kBr % 64 == 0, "dS is one 128-byte-swizzled panel per consumer");
  static_assert(kDQBytes == kConsumers * 64 * 64 * 4, "dQ: one m64n64 block per consumer");
  static_assert(kSmemBytes <= 227 * 1024, "what one block may have on an H100");
  static_assert(kWarpgroup * (flash_tma::ws::launch_regs(kThreads) - kProducerRegs) >=
                    kConsumers * kWarpgroup * (kConsumerRegs - flash_tma::ws::launch_regs(kThreads)),
                "the producer gives back at least what the consumers take");
};

// How the pieces work (v9's; only where a consumer issues Sᵀ differs: the protocol below):
//  1. The producer's warp 0 loads K_j and V_j once and Q_i, dO_i and their rows per step, as in v4.
//  2. Each consumer computes v9's step up to dQ_i's product, issuing the next step's Sᵀ on the way, dS·K_j
//     into 32 fp32 registers per thread (D = 128: D's panel c; D = 64: rows 64c … of the step's 128).
//     It then waits until dQ tile t % kDqTiles is free (dq_empty: the writer's copy of step t − kDqTiles
//     has read it), stores its accumulator there in the accumulator's order (every row: those past the
//     sequence are zeros), makes the stores visible to the async proxy, and each warp arrives on
//     dq_full[t % kDqTiles].
//  3. The writer (the producer's warp 1, one thread) waits for dq_full, and adds the whole tile into
//     dq_accum's tile (b·H + h, m) with one cp.reduce.async.bulk (D = 128: both panels; D = 64: both
//     64-row blocks). Once the copy has read the tile, dq_empty frees it.
//  4. Deterministic mode: the writer waits for the tile's turn, adds, waits until the add has completed,
//     and passes the turn on; the proxy fences order its bulk add with the turn's acquire and release.
//     The consumers' order of work does not change with the mode.
//
// The protocol, per step t (stage st = t % kStages, its use u = t / kStages):
//   prologue  thread 0:  init kv_full, kv_landed, full[st], landed[st], dq_empty[b] (1), empty[st],
//                        dq_full[b] (8); fence;
//                        __syncthreads; producer: setmaxnreg.dec 40 (D = 64: 24); consumers: .inc 232 (240)
//   producer  warp 0:    (u ≥ 1) wait empty[st], parity (u − 1) & 1            step t − kStages released
//                        lane 0: expect_tx(full[st] or landed[st]); TMA Q_i, dO_i and the rows
//                        (rows past the sequence) wait landed[st]; zero; __syncwarp; lane 0 arrives full[st]
//   consumer  all 128:   (t = 0, before the walk: wait kv_full, parity 0; wait full[0]; issue Sᵀ of step 0)
//                        wait for Sᵀ; Pᵀ, dPᵀ, dSᵀ as v9; issue dV += Pᵀ dO_i, dK += dSᵀ Q_i; dS → sdS[t % 2][c]
//                        wait for dV, dK; __syncwarp; lane 0 of each warp: arrive empty[st]
//                        (t + 1 < steps) wait full[st'], parity u' & 1 of step t + 1; issue its Sᵀ
//                        barrier of both consumers (256 threads): both dS tiles are in
//                        rQ = dS K_j (wgmma; wait: Sᵀ of step t + 1 has completed too)
//                        (t ≥ kDqTiles) wait dq_empty[b], b = t % kDqTiles, parity ((t / kDqTiles) − 1) & 1
//                        rQ → sdQ[b] (8 st.shared.v4); fence.proxy.async; __syncwarp; lane 0: arrive dq_full[b]
//   writer    warp 1, lane 0:  wait dq_full[b], parity (t / kDqTiles) & 1; (deterministic: wait for the turn)
//                        bulk reduce-add of sdQ[b] into dq_accum's tile; commit
//                        wait until read (deterministic: completed; pass the turn); arrive dq_empty[b]
//
// grid: B·KVH·ceil(max Nk / Bc) blocks of three warpgroups (attn::key_block_of). tmQ, tmdO: Q and dO as
// [B][H][Nq][D] (packed: [1][H][total][D]) with their strides, boxes of 64 columns × Br rows; tmK, tmV:
// K and V as [B][KVH][Nk][D], boxes of 64 × Bc; tmRows: the padded (LSE · log2 e, delta) pairs as B·H
// rows of floats, boxes of one tile's 2·Br (launch.cuh). a.dq_accum: B·H·ceil(max Nq / Br) zeroed tiles of
// Br·D floats in the accumulator's order. turns: B·H·ceil(max Nq / Br) zeroed ints in deterministic mode,
// else null.
template <class T, int D>
__global__ void __launch_bounds__(Config<D>::kThreads, 1)
    flash_bwd_tma_v11_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                            const __grid_constant__ CUtensorMap tmV, const __grid_constant__ CUtensorMap tmdO,
                            const __grid_constant__ CUtensorMap tmRows, const bwd::Args<T> a,
                            int32_t* __restrict__ turns) {
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kStages = C::kStages, kKw = C::kKeysPerWarpgroup;
  constexpr int kNT = kBr / 8;  // 8-column tiles of Sᵀ and dPᵀ (columns: query rows)
  constexpr int kDT = D / 8;    // 8-column tiles of dK and dV
  // dQ's split between the consumers: its panels of D (D = 128) or its rows (D = 64, Br = 128).
  constexpr bool kDqSplitsRows = kBr / 64 == C::kConsumers;
  static_assert(kDqSplitsRows ? D == 64 : D / 64 == C::kConsumers, "dQ: one m64n64 block per consumer");
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  unsigned char* sK = smem;                              // [Bc][D], swizzled panels
  unsigned char* sV = sK + C::kKVBytes;                  // [Bc][D]
  unsigned char* sQdO = sV + C::kKVBytes;                // [kStages] × (Q_i [Br][D], dO_i [Br][D])
  unsigned char* sdS = sQdO + kStages * C::kStageBytes;  // [2 steps][kConsumers] × dS [Br][64 keys]
  unsigned char* sdQ = sdS + 2 * C::kConsumers * C::kDSBytes;  // [kDqTiles] × the dQ tile, fp32 (Config)
  float2* sRows = reinterpret_cast<float2*>(sdQ + C::kDqTiles * C::kDQBytes);  // [kStages][Br] (LSE·log2 e, delta)
  uint64_t* kv_full = reinterpret_cast<uint64_t*>(sRows + kStages * kBr);
  uint64_t* kv_landed = kv_full + 1;
  uint64_t* full = kv_landed + 1;       // [kStages]
  uint64_t* empty = full + kStages;     // [kStages]
  uint64_t* landed = empty + kStages;   // [kStages]
  uint64_t* dq_full = landed + kStages;  // [kDqTiles]
  uint64_t* dq_empty = dq_full + C::kDqTiles;  // [kDqTiles]

  const int tid = threadIdx.x, wg = flash_tma::ws::warpgroup();
  const int64_t kv_tiles = (a.max_seq_k + kBc - 1) / kBc;
  // Deterministic and causal: the head's key blocks last key first, block x of the grid (x: the place in
  // the key blocks' order that key_block_of reads; the head, b·KVH + kvh = x / kv_tiles, is blockIdx.x's).
  const bool shortest_first = a.causal && turns != nullptr;
  auto block_x = [&] {  // worked out again where needed, rather than held in registers through the walk
    return shortest_first ? blockIdx.x / kv_tiles * kv_tiles + (kv_tiles - 1 - blockIdx.x % kv_tiles)
                          : int64_t(blockIdx.x);
  };
  const int64_t x = block_x();
  const KeyBlock kb = key_block_of</*kVarlen=*/true>(a, kBc, x);
  const int64_t n_block = x % kv_tiles;  // this block's place among its head's key blocks
  const int64_t k0 = kb.k0;
  const int key_lim = int(min(kb.nk - k0, int64_t(kBc)));
  const int64_t nq = kb.nq, diag0 = kb.offset - k0, q_head0 = kb.q_head0, q_shift = kb.q_shift;

  // The query tiles this block meets, per query head: m_first .. m_end − 1.
  const int64_t m_end = (kb.nq + kBr - 1) / kBr;
  const int64_t first_row = a.causal ? k0 - kb.offset : 0;  // the first query row that sees key k0
  const int64_t m_first = first_row > 0 ? first_row / kBr : 0;
  const int64_t m_count = m_end > m_first ? m_end - m_first : 0;
  const int64_t steps = a.group * m_count;

  // Step t's query head and tile, and where its rows are.
  struct Step {
    int64_t bh;      // flat query head as the row index counts it (b·H + h, or h packed)
    int64_t m;       // query tile
    int64_t q_base;  // row of LSE, delta, dq_accum (and of Q's plane, through plane_row) of its row 0
  };
  auto step_of = [&](int64_t t) {
    Step s;
    s.bh = q_head0 + t / m_count;
    s.m = m_first + t % m_count;
    s.q_base = s.bh * a.seq_q + q_shift;  // KeyBlock::q_base
    return s;
  };
  // In 32 bits: a step index is below 2^31 (the query heads of a group times Nq / 64).
  auto stage_of = [](int64_t t) { return int(uint32_t(t) % kStages); };
  auto use_of = [](int64_t t) { return uint32_t(t) / kStages; };

  if (tid == 0) {
    sm90::mbarrier_init(kv_full, 1);    // the producer's expect_tx arrival and the bytes, or its plain arrival
    sm90::mbarrier_init(kv_landed, 1);  // after it zeroed what the tiles brought past the sequence's end
    for (int st = 0; st < kStages; ++st) {
      sm90::mbarrier_init(&full[st], 1);
      sm90::mbarrier_init(&empty[st], C::kConsumerWarps);  // one arrival per consumer warp
      sm90::mbarrier_init(&landed[st], 1);
    }
    for (int b = 0; b < C::kDqTiles; ++b) {
      sm90::mbarrier_init(&dq_full[b], C::kConsumerWarps);  // one arrival per consumer warp
      sm90::mbarrier_init(&dq_empty[b], 1);                 // the writer's, once its copy has read the tile
    }
    sm90::fence_mbarrier_init();  // the inits are seen by the TMA unit that completes them
  }
  // Every thread sees initialized barriers before it waits on one. The only block-wide barrier: from here
  // on the producer and the consumers meet only through the mbarriers.
  __syncthreads();

  if (wg == 0) {
    // The producer warpgroup: warp 0 loads, warp 1's lane 0 writes dQ, the other threads leave. The loads
    // complete on their barriers whether or not warp 0 still runs, and the consumers wait for every one.
    sm90::setmaxnreg_dec<C::kProducerRegs>();
    if (tid > 32 || steps == 0) return;
    if (tid == 32) {
      // The writer (dq_writer.cuh): step t's tile, b = t % kDqTiles, added into its tile of dq_accum.
      // The turn of step s's tile: n_block, or shortest first, count(m) − 1 − n_block, where the key blocks
      // that see query tile m are 0 … count(m) − 1: those whose walk's m_first is at most m (first key at
      // most the tile's last row's diagonal, (m + 1)·Br − 1 + offset) and that hold a key of the sequence.
      const int64_t last_block = (kb.nk + kBc - 1) / kBc - 1;
      auto turn_of = [&](const Step& s) {
        return shortest_first ? min(((s.m + 1) * kBr - 1 + kb.offset) / kBc, last_block) - n_block : n_block;
      };
      write_dq<D, kBr, /*kSplitsKeys=*/false, /*kWholeTiles=*/true, C::kDqTiles>(
          a, steps, step_of, nq, sdQ, C::kDQBytes, dq_full, dq_empty, turns, kv_tiles, n_block, turn_of);
      return;
    }
    // The loader (producer.cuh): K_j, V_j once, then Q_i, dO_i and their rows per step, up to kStages steps ahead.
    load_steps<C, /*kRows=*/true>({sK, sV, sQdO, sRows, kv_full, kv_landed, full, empty, landed}, &tmQ, &tmK, &tmV,
                                 &tmdO, &tmRows, a, kb, steps, step_of, kv_tiles);
    return;
  }

  // A consumer: keys 64c .. 64c + 63 of the block, warp w of it keys 16w .. 16w + 15 of those.
  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  const int c = wg - 1, wtid = tid % kWarpgroup;
  const int warp = wtid / 32, lane = tid % 32, g8 = lane / 4, t4 = lane % 4;
  float rdK[kDT][4] = {}, rdV[kDT][4] = {};  // Σ dSᵀ Q, Σ Pᵀ dO: the m64nD accumulators of this consumer
  auto& acc_dk = reinterpret_cast<float(&)[D / 2]>(rdK);
  auto& acc_dv = reinterpret_cast<float(&)[D / 2]>(rdV);
  const uint32_t k_addr0 = sm90::smem_address(sK) + c * kKw * 128;  // this consumer's 64 key rows
  const uint32_t v_addr0 = sm90::smem_address(sV) + c * kKw * 128;
  const uint32_t ds_addr0 = sm90::smem_address(sdS + c * C::kDSBytes);  // this consumer's dS tile, step 0
  // This thread's float4 of the consumer's block in a dQ tile (tile 0; n-block n at + n·kWarpgroup·16).
  const uint32_t dq_addr0 = sm90::smem_address(sdQ) + uint32_t(c * 64 * 64 * 4 + wtid * 16);
  const int key_l = c * kKw + warp * 16 + g8;  // this thread's keys within the block: key_l and key_l + 8
  const float scale_log2 = a.scale_log2;

  // Sᵀ = K_c Q_iᵀ of step t: 64 keys × Br queries, k = the head dimension, one wgmma group, into rS, which
  // lives across the loop's turn: step t − 1 issues it (step 0: before the walk) once step t's tiles are in.
  float rS[kNT][4];
  auto& acc_s = reinterpret_cast<float(&)[kBr / 2]>(rS);
  auto issue_s = [&](int64_t t) {
    const int st = stage_of(t);
    uint32_t q_addr = sm90::smem_address(sQdO + st * C::kStageBytes), k_addr = k_addr0;
    asm volatile("" : "+r"(q_addr), "+r"(k_addr));  // as the step's addresses below
    sm90::mbarrier_wait_parity(&full[st], use_of(t) & 1);  // Q_i, dO_i have landed, zeroed past the sequence
    sm90::wgmma_fence();  // rS was last read by ordinary instructions (the step before's P pass)
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks)  // the first product overwrites: scale-d = 0
      sm90::wgmma_m64nNk16<kBr, T, false, false>(acc_s, k_major_descriptor(k_addr, kBc, 0, ks),
                                                 k_major_descriptor(q_addr, kBr, 0, ks), ks > 0);
    sm90::wgmma_commit_group();  // Sᵀ's group, waited for at the top of its step
  };
  if (steps > 0) {
    sm90::mbarrier_wait_parity(kv_full, 0);  // sK, sV have landed, zeroed past the keys
    issue_s(0);
  }

  for (int64_t t = 0; t < steps; ++t) {
    const int st = stage_of(t);
    const Step s = step_of(t);
    const int64_t i0 = s.m * kBr;  // the tile's first query row, within the sequence
    // The tiles' shared addresses, hidden from the compiler for this step, as v1 (ptxas -v: otherwise
    // every descriptor of every stage is worked out before the walk and kept in registers).
    uint32_t q_addr = sm90::smem_address(sQdO + st * C::kStageBytes), k_addr = k_addr0, v_addr = v_addr0;
    uint32_t ds_addr = ds_addr0 + uint32_t(t & 1) * C::kConsumers * C::kDSBytes;
    asm volatile("" : "+r"(q_addr), "+r"(k_addr), "+r"(v_addr), "+r"(ds_addr));
    const uint32_t k_all = k_addr - c * kKw * 128, ds_all = ds_addr - c * C::kDSBytes;  // the block's 128 keys
    const uint32_t do_addr = q_addr + C::kQBytes;
    float rP[kNT][4];
    auto& acc_p = reinterpret_cast<float(&)[kBr / 2]>(rP);

    // The step's rows for this thread's query columns 8n + 2·t4 and + 1: {LSE·log2 e, delta} of both, one
    // 16-byte load per n (they landed with Q_i: full[st], waited for when Sᵀ was issued). rows[n]: (x, y)
    // column 8n + 2·t4, (z, w) the next.
    float4 rows[kNT];
    const uint32_t rows_addr = sm90::smem_address(sRows + st * kBr + 2 * t4);
#pragma unroll
    for (int n = 0; n < kNT; ++n) rows[n] = sm80::ld_shared_v4_f32(rows_addr + n * 8 * sizeof(float2));
    sm90::wgmma_wait_group<0>();       // Sᵀ, issued before the walk or in the step before
    sm90::wgmma_fence_operand(acc_s);  // no read of rS above the wait

    // Pᵀ in place: the logits Sᵀ·c − LSE (c = scale · log2 e), −∞ where masked on an edge tile (key jl kept
    // when jl < key_lim, col < row_lim and, causal, jl − col <= diag: v1's rule), then 2^x for all.
    const int row_lim = int(min(nq - i0, int64_t(kBr)));
    const int diag = a.causal ? int(max(min(i0 + diag0, int64_t(kBc)), int64_t(-2 * kBc))) : kBc;
    const bool edge = diag < kBc - 1 || key_lim < kBc || row_lim < kBr;
#pragma unroll
    for (int n = 0; n < kNT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) rS[n][e] = fmaf(rS[n][e], scale_log2, -(e % 2 ? rows[n].z : rows[n].x));
    if (edge) {
#pragma unroll
      for (int n = 0; n < kNT; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int jl = key_l + 8 * (e / 2), col = 8 * n + 2 * t4 + e % 2;
          if (!(jl < key_lim && col < row_lim && jl - col <= diag)) rS[n][e] = -INFINITY;
        }
    }
#pragma unroll
    for (int n = 0; n < kNT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) rS[n][e] = sm80::ex2_approx_ftz(rS[n][e]);
    uint32_t pa[kBr / 16][4], dsa[kBr / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBr / 16; ++kk) a_from_c<T>(pa[kk], rS[2 * kk], rS[2 * kk + 1]);

    // dPᵀ = V_c dO_iᵀ, after Sᵀ (v1: no room for both accumulators beside dK and dV at D = 128).
    sm90::wgmma_fence();  // acc_p last read by ordinary instructions (the step before's dSᵀ)
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks)
      sm90::wgmma_m64nNk16<kBr, T, false, false>(acc_p, k_major_descriptor(v_addr, kBc, 0, ks),
                                                 k_major_descriptor(do_addr, kBr, 0, ks), ks > 0);
    sm90::wgmma_commit_group();   // dPᵀ's group
    sm90::wgmma_wait_group<0>();  // dPᵀ now: dSᵀ needs it (and nothing else is in flight)
    sm90::wgmma_fence_operand(acc_p);
    // The rows again, for delta (the first load's registers are not kept across dPᵀ: with Sᵀ of the next
    // step in flight at the step's end, they would not fit; ptxas -v).
#pragma unroll
    for (int n = 0; n < kNT; ++n) rows[n] = sm80::ld_shared_v4_f32(rows_addr + n * 8 * sizeof(float2));

    // dSᵀ = Pᵀ ∘ (dPᵀ − delta) in place, P read back from its fragments (rounded to T, as v1).
#pragma unroll
    for (int n = 0; n < kNT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const uint32_t pair = pa[n / 2][(n % 2) * 2 + e / 2];  // a_from_c: (key row, two query columns)
        const float p = half_to_float<T>(uint16_t(e % 2 ? pair >> 16 : pair & 0xffffu));
        rP[n][e] = p * (rP[n][e] - (e % 2 ? rows[n].w : rows[n].y));
      }
#pragma unroll
    for (int kk = 0; kk < kBr / 16; ++kk) a_from_c<T>(dsa[kk], rP[2 * kk], rP[2 * kk + 1]);
    sm90::wgmma_fence();  // pa, dsa written by ordinary instructions before wgmma reads them
#pragma unroll
    for (int kk = 0; kk < kBr / 16; ++kk)  // dV += Pᵀ dO_i: k = 16 query rows, dO_i read N-major
      sm90::wgmma_m64nNk16_rs<D, T, /*kTransB=*/true>(acc_dv, pa[kk], v_descriptor(do_addr, kBr, kk), true);
#pragma unroll
    for (int kk = 0; kk < kBr / 16; ++kk)  // dK += dSᵀ Q_i (unscaled), Q_i read N-major
      sm90::wgmma_m64nNk16_rs<D, T, /*kTransB=*/true>(acc_dk, dsa[kk], v_descriptor(q_addr, kBr, kk), true);
    sm90::wgmma_commit_group();  // dV's and dK's group: it runs while dS is stored below

    // dS (query rows × this consumer's 64 keys) into sdS[t % 2][c], K-major for dQ's A, swizzled as v1
    // stores it. dsa[kk] holds four 8×8 matrices of dSᵀ (a_from_c): register x is keys warp·16 + 8·(x % 2)
    // … + 7 by queries 16·kk + 8·(x / 2) … + 7. Transposed on the way, matrix x lands as 8 query rows of
    // those 8 keys: lane 8x + q gives query row i = 16·kk + 8·(x / 2) + q, its 16-byte chunk of keys
    // 2·warp + x % 2 (i % 8 = q for the swizzle).
    const int mx = lane / 8, mq = lane % 8;
    const uint32_t ds_row = ds_addr + (8 * (mx / 2) + mq) * 128 + (((2 * warp + mx % 2) ^ mq) * 16);
#pragma unroll
    for (int kk = 0; kk < kBr / 16; ++kk)
      sm90::stmatrix_x4_trans(ds_row + kk * 16 * 128, dsa[kk][0], dsa[kk][1], dsa[kk][2], dsa[kk][3]);
    sm90::fence_proxy_async();  // these plain stores, visible to wgmma's reads (the async proxy)
    sm90::wgmma_wait_group<0>();  // dV, dK done: pa and dsa free, Q_i and dO_i past their last product
    sm90::wgmma_fence_operand(acc_dv);
    sm90::wgmma_fence_operand(acc_dk);
#pragma unroll
    for (int kk = 0; kk < kBr / 16; ++kk) {
      sm90::wgmma_fence_operand(pa[kk]);  // pa, dsa live until here
      sm90::wgmma_fence_operand(dsa[kk]);
    }
    // Q_i, dO_i (the tensor cores) and the rows (every lane) have had their last reader in this warp: its
    // share of the release.
    __syncwarp();  // every lane's reads of the rows before lane 0's arrival lets TMA overwrite them
    if (lane == 0) sm90::mbarrier_arrive(&empty[st]);

    // The next step's Sᵀ: it runs while this consumer meets the other and computes dQ_i. Issued after the
    // wait for dV and dK, when pa and dsa are dead (before it, at D = 64 they and Sᵀ's 64 accumulators
    // would not fit beside dK and dV: ptxas spills).
    if (t + 1 < steps) issue_s(t + 1);

    // dQ_i += dS · K_j over all 128 keys (both dS tiles): at D = 128 consumer c takes D's panel c, at
    // D = 64 query rows 64c … 64c + 63.
    sm90::bar_sync(1, C::kConsumers * kWarpgroup);  // both dS tiles are written before either consumer reads both
    {
      float rQ[8][4];
      auto& acc_q = reinterpret_cast<float(&)[32]>(rQ);
      sm90::wgmma_fence();  // rQ last touched by ordinary instructions (the step before's copy to sdQ)
      if constexpr (kDqSplitsRows) {
#pragma unroll
        for (int ks = 0; ks < kBc / 16; ++ks)  // k = 16 keys of the block's 128; dS rows 64c …, K read N-major
          sm90::wgmma_m64nNk16<64, T, false, /*kTransB=*/true>(
              acc_q, k_major_descriptor(ds_all, kBr, 64 * c, ks), v_descriptor(k_all, kBc, ks), ks > 0);
      } else {
#pragma unroll
        for (int ks = 0; ks < kBc / 16; ++ks)  // k = 16 keys of the block's 128; K read N-major, panel c
          sm90::wgmma_m64nNk16<64, T, false, /*kTransB=*/true>(
              acc_q, k_major_descriptor(ds_all, kBr, 0, ks), v_descriptor(k_all + c * kBc * 128, kBc, ks), ks > 0);
      }
      sm90::wgmma_commit_group();   // dQ's group
      sm90::wgmma_wait_group<0>();  // dQ's group, and the next step's Sᵀ before it
      sm90::wgmma_fence_operand(acc_q);
      // Into dQ tile b in the accumulator's order: n-block n of thread wtid at float4 n·128 + wtid of the
      // consumer's 16 KiB (D = 128: its panel; D = 64: its rows), a warp's store 512 contiguous bytes.
      // The tile is free once the writer's copy of step t − kDqTiles has read it.
      const int b = int(t % C::kDqTiles);
      if (t >= C::kDqTiles)
        sm90::mbarrier_wait_parity(&dq_empty[b], (uint32_t(t / C::kDqTiles) & 1) ^ 1);
      const uint32_t tile = dq_addr0 + uint32_t(b * C::kDQBytes);
#pragma unroll
      for (int n = 0; n < 8; ++n)
        sm80::st_shared_v4_f32(tile + n * kWarpgroup * 16, make_float4(rQ[n][0], rQ[n][1], rQ[n][2], rQ[n][3]));
      sm90::fence_proxy_async();  // these plain stores, visible to the bulk copy's reads (the async proxy)
      __syncwarp();               // every lane's stores and fence before lane 0's arrival announces them
      if (lane == 0) sm90::mbarrier_arrive(&dq_full[b]);
    }
  }

  // dK = scale · Σ dSᵀ Q, dV = Σ Pᵀ dO, rounded, written once (epilogue.cuh).
  write_dk_dv<T, D>(a, kBc, key_l, t4, rdK, rdV, block_x());
}

}  // namespace fs::flash_bwd_tma::v11
