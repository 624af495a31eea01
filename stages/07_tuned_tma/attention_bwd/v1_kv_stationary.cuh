// flashstages · stage 07 attention backward · v1 — the FlashAttention backward on Hopper's machinery:
// K/V-stationary blocks, TMA loads counted on mbarriers, the five products on wgmma (fp16, bf16; D = 64, 128).
//
// What changes from stage 05 (v10: mma.sync, ldmatrix, cp.async; the algorithm is the same — delta first,
// a block per key block walking the query tiles, dK and dV in registers, dQ added into an fp32 workspace):
// TMA boxes of Q_i and dO_i counted on an mbarrier per stage, and every product one warpgroup's wgmma:
//   Sᵀ  = K_j Q_iᵀ     A: K_j (smem, K-major)    B: Q_i (smem, K-major)     64 keys × Br, fp32 regs
//   dPᵀ = V_j dO_iᵀ    A: V_j (smem, K-major)    B: dO_i (smem, K-major)    64 keys × Br, fp32 regs
//   dV += Pᵀ dO_i      A: Pᵀ (registers)         B: dO_i (smem, N-major)    64 keys × D, fp32 regs
//   dK += dSᵀ Q_i      A: dSᵀ (registers)        B: Q_i (smem, N-major)     64 keys × D, fp32 regs
//   dQ_i += dS K_j     A: dS (smem, K-major)     B: K_j (smem, N-major)     Br × 64 per panel of D
// Sᵀ and dPᵀ (keys as the instruction's m) leave Pᵀ and dSᵀ in the accumulator layout, which is the
// A-fragment layout: dV and dK take them from registers, as the forward's O += P·V takes P.
// Why faster than stage 05: wgmma's rate (mma.sync tops out well below the tensor peak on Hopper,
// ceilings.json). What it lacks: all in order, loads issued by a math thread, dQ by one fp32 atomic per
// element and block (two at D = 64); v2 splits loads from math, v3 adds dQ per tile by TMA reduce-add.
//
// Run: build/h100/stages/07_tuned_tma/attention_bwd/stage07_attention_bwd --dtype fp16 --seq 4096 --dim 128 --batch 2 --heads 16 --version v1
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/device/attention.cuh"
#include "common/device/bwd_args.cuh"
#include "common/device/sm80.cuh"
#include "common/device/sm90.cuh"
#include "common/lib/numeric.h"
#include "stages/07_tuned_tma/attention/tiles.cuh"
#include "stages/07_tuned_tma/attention_bwd/epilogue.cuh"
#include "stages/07_tuned_tma/attention_bwd/turns.cuh"

namespace fs::flash_bwd_tma::v1 {

using namespace fs::attn;
using flash_tma::first_foreign_row;
using flash_tma::k_major_descriptor;
using flash_tma::kv_plane_row;
using flash_tma::load_tile;
using flash_tma::PlaneRow;
using flash_tma::plane_row;
using flash_tma::v_descriptor;
using flash_tma::zero_rows;

// Tile sizes. Bc = 128 keys per block, 64 per consumer warpgroup (the m of every wgmma but dQ's);
// Br = 64 query rows per step. Registers per thread at D = 128: dK and dV 64 each (64 keys × 128 fp32
// over 128 threads), Sᵀ and dPᵀ 32 each (64 × 64), Pᵀ and dSᵀ as A fragments 16 each, a dQ panel 32 —
// about 230 with the addresses if all lived at once; the code keeps Sᵀ, dPᵀ dead before dQ's panel
// lives. Br = 128 would double Sᵀ and dPᵀ and spill at D = 128; at D = 64 it would fit (a later version
// can take tiles per head_dim, as stage 05's v9 does).
template <int D>
struct Config {
  static constexpr int kD = D;
  static constexpr int kBr = 64;          // query rows per step of the walk
  static constexpr int kBc = 128;         // keys per block
  static constexpr int kWarpgroups = 2;   // warpgroup w owns keys 64w .. 64w + 63 of the block
  static constexpr int kKeysPerWarpgroup = kBc / kWarpgroups;
  static constexpr int kThreads = 128 * kWarpgroups;
  static constexpr int kStages = 2;                         // (Q_i, dO_i) tiles in shared memory at once
  static constexpr int kKVBytes = kBc * D * 2;              // sK or sV: [Bc][D]
  static constexpr int kQBytes = kBr * D * 2;               // sQ or sdO: [Br][D]
  static constexpr int kStageBytes = 2 * kQBytes;           // Q_i then dO_i
  static constexpr int kDSBytes = kBr * kKeysPerWarpgroup * 2;  // one warpgroup's dS: [Br][64]
  static constexpr int kRowBytes = 2 * kBr * 4;                   // LSE·log2 e and delta of one step: [2][Br]
  // 1024-byte alignment slack first (the swizzle pattern starts on a 1024-byte boundary), then sK, sV,
  // the stages, the warpgroups' dS tiles, two steps' LSE and delta, and the barriers kv_full,
  // q_full[kStages].
  static constexpr std::size_t kSmemBytes = 1024 + 2 * std::size_t(kKVBytes) + std::size_t(kStages) * kStageBytes +
                                            std::size_t(kWarpgroups) * kDSBytes + 2 * std::size_t(kRowBytes) +
                                            (1 + kStages) * sizeof(uint64_t);
  static_assert(D % 64 == 0, "whole 64-element panels");
  static_assert(kKeysPerWarpgroup == 64 && kBr == 64, "dS is one 128-byte-swizzled panel per warpgroup");
};

// How the pieces work:
//  1. Block x is key block k0 .. k0 + Bc − 1 of one (batch entry, K/V head) (attn::key_block_of). It
//     loads K_j and V_j once, then walks every query tile i of every query head of its K/V group that
//     sees one of its keys: under the causal mask (aligned bottom-right, query i sees keys
//     j <= i + Nk − Nq) the tiles from the one holding row k0 − offset on, the earlier ones skipped.
//  2. Thread 0 fills the stages: Q_i and dO_i of step t go to stage t % 2, announced on q_full[t % 2]
//     with arrive.expect_tx; every thread waits for the phase; after the step every thread meets at a
//     __syncthreads, and thread 0 refills the stage with step t + 2.
//  3. LSE_i and delta_i (64 floats each per step) are copied into shared memory by 128 threads with
//     plain loads during the step before (sRows, two steps deep), so that no thread holds 32 registers
//     of them through the softmax-gradient math. A 1D TMA of them would need a 16-byte aligned first
//     row, which a packed entry's rows (cu_seqlens_q[b] anywhere) do not have; v2's producer stages them.
//  4. Pᵀ = exp2(Sᵀ · scale·log2 e − LSE · log2 e) on the accumulator in place, rounded into A
//     fragments; then dPᵀ, and dSᵀ = Pᵀ ∘ (dPᵀ − delta) with P read back from its fragments (as the
//     naive backward does: there is no room for Sᵀ's and dPᵀ's fp32 accumulators at once beside dK
//     and dV at D = 128). Masked keys and rows (causal, past Nk, past Nq) get P = 0 by a select, not a
//     multiply, so an infinite LSE or a padding NaN never reaches a product.
//  5. dQ: each warpgroup writes its dS (Br × 64, 16-bit) into its own swizzled panel; then warpgroup w
//     computes one Br × 64 block of dS·K_j — at D = 128 D's panel w over all 128 keys (both dS tiles),
//     at D = 64 the whole of D over its own 64 keys — and adds it into dq_accum with fp32 atomics; the
//     deterministic mode waits for its turn (turns.cuh) and adds warpgroup 0's share before warpgroup
//     1's. dq_accum holds dQ / scale; the conversion scales it (dq_convert_kernel).
//  6. At the end, dK = scale · Σ dSᵀ Q and dV = Σ Pᵀ dO are rounded and written from registers (rows
//     past the keys of a padded entry get zeros).
//
// Per step t (query head g, query tile m; stage st = t % 2, its (t / 2)-th use), each warpgroup w:
//   wait q_full[st]                                            Q_i, dO_i have landed
//   Sᵀ = K_w Q_iᵀ (D/16 wgmma); wait                           rS: 64 × 64 fp32
//   mask, Pᵀ → A fragments pa
//   dPᵀ = V_w dO_iᵀ (D/16 wgmma); wait                          rP: 64 × 64 fp32
//   dSᵀ = P ∘ (dPᵀ − delta) → A fragments dsa
//   dV += Pᵀ dO_i, dK += dSᵀ Q_i (2 · Br/16 wgmma); commit      rdV, rdK: 64 × D fp32 each
//   dS → sdS[w] (16-bit stores), fence.proxy.async; wait for the wgmma; barrier (D = 64: the warpgroup's)
//   rQ = dS · K (D = 128: panel w, 8 wgmma; D = 64: K_w, 4 wgmma); wait; add into dq_accum
//   threads 0 .. 127: LSE, delta of step t + 1 → sRows[(t + 1) % 2]
//   __syncthreads                                              no warp reads stage st or sdS any more
//   thread 0: expect_tx(q_full[st]); TMA Q, dO of step t + 2 → stage st
//
// grid: B·KVH·ceil(max Nk / Bc) blocks of two warpgroups (attn::key_block_of). tmQ, tmdO: Q and dO as
// [B][H][Nq][D] (packed: [1][H][total][D]) with their strides, boxes of 64 columns × Br rows; tmK, tmV:
// K and V as [B][KVH][Nk][D], boxes of 64 × Bc (launch.cuh). turns: B·H·ceil(max Nq / Br) zeroed ints
// in deterministic mode, else null.
template <class T, int D>
__global__ void __launch_bounds__(Config<D>::kThreads, 1)
    flash_bwd_tma_v1_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                            const __grid_constant__ CUtensorMap tmV, const __grid_constant__ CUtensorMap tmdO,
                            const bwd::Args<T> a, int32_t* __restrict__ turns) {
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kStages = C::kStages, kKw = C::kKeysPerWarpgroup;
  constexpr int kNT = kBr / 8;  // 8-column tiles of Sᵀ and dPᵀ (columns: query rows)
  constexpr int kDT = D / 8;    // 8-column tiles of dK and dV
  // dQ's split between the warpgroups: its keys (D = 64, one panel of D) or its panels of D (D = 128).
  constexpr bool kDqSplitsKeys = D / 64 < C::kWarpgroups;
  static_assert(kDqSplitsKeys ? D == 64 : D / 64 == C::kWarpgroups, "dQ: one 64-column panel per warpgroup");
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem =
      reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
  unsigned char* sK = smem;                          // [Bc][D], swizzled panels
  unsigned char* sV = sK + C::kKVBytes;              // [Bc][D]
  unsigned char* sQdO = sV + C::kKVBytes;            // [kStages] × (Q_i [Br][D], dO_i [Br][D])
  unsigned char* sdS = sQdO + kStages * C::kStageBytes;  // [kWarpgroups] × dS [Br][64 keys]
  float* sRows = reinterpret_cast<float*>(sdS + C::kWarpgroups * C::kDSBytes);  // [2 steps][LSE·log2 e, delta][Br]
  uint64_t* kv_full = reinterpret_cast<uint64_t*>(sRows + 2 * 2 * kBr);
  uint64_t* q_full = kv_full + 1;  // [kStages]

  const int tid = threadIdx.x, wg = tid / 128, wtid = tid % 128;
  const int warp = wtid / 32, lane = tid % 32, g8 = lane / 4, t4 = lane % 4;
  const KeyBlock kb = key_block_of</*kVarlen=*/true>(a, kBc);
  const int64_t kv_tiles = (a.max_seq_k + kBc - 1) / kBc;
  const int64_t n_block = blockIdx.x % kv_tiles;  // this block's place among its head's key blocks
  const int64_t k0 = kb.k0;
  // What the walk reads of the block's rows, the rest of kb dead until the end: the keys of the block that
  // exist (key_lim), the rows of the sequence (nq), the causal diagonal (key j seen by row i when
  // j − k0 <= i + diag0), where the group's rows start (q_head0, q_shift).
  const int key_lim = int(min(kb.nk - k0, int64_t(kBc)));
  const int64_t nq = kb.nq, diag0 = kb.offset - k0, q_head0 = kb.q_head0, q_shift = kb.q_shift;
  const PlaneRow kv = kv_plane_row(a, kb);

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
  // Thread 0 fills stage t % kStages with Q_i and dO_i of step t.
  auto load_q = [&](int64_t t) {
    const int st = int(t % kStages);
    const Step s = step_of(t);
    const PlaneRow q = plane_row(s.q_base, a.seq_q, a.heads);
    unsigned char* sQ = sQdO + st * C::kStageBytes;
    sm90::mbarrier_arrive_expect_tx(&q_full[st], C::kStageBytes);
    load_tile<D>(sQ, &tmQ, kBr, q.row + s.m * kBr, q.plane, &q_full[st]);
    load_tile<D>(sQ + C::kQBytes, &tmdO, kBr, q.row + s.m * kBr, q.plane, &q_full[st]);
  };

  // Threads 0 .. 2·Br − 1 copy step t's LSE_i · log2 e and delta_i into sRows[t % 2] (0 past the
  // sequence's rows: those columns are masked, whatever LSE holds there).
  auto load_rows = [&](int64_t t) {
    if (tid >= 2 * kBr) return;
    const Step s = step_of(t);
    const int r = tid % kBr;
    const int64_t i = s.m * kBr + r;
    float x = 0.0f;
    if (i < nq) x = tid < kBr ? a.lse[s.q_base + i] * kLog2e : a.delta[s.q_base + i];
    sRows[(t % 2) * 2 * kBr + tid] = x;
  };
  if (steps > 0) load_rows(0);

  if (tid == 0) {
    sm90::mbarrier_init(kv_full, 1);  // thread 0's expect_tx arrival, then the bytes
    for (int st = 0; st < kStages; ++st) sm90::mbarrier_init(&q_full[st], 1);
    sm90::fence_mbarrier_init();  // the inits are seen by the TMA unit that completes them
  }
  __syncthreads();  // every thread sees initialized barriers before it waits on one (and step 0's rows)
  if (tid == 0 && steps > 0) {
    sm90::mbarrier_arrive_expect_tx(kv_full, 2 * C::kKVBytes);
    load_tile<D>(sK, &tmK, kBc, kv.row + k0, kv.plane, kv_full);
    load_tile<D>(sV, &tmV, kBc, kv.row + k0, kv.plane, kv_full);
    for (int64_t t = 0; t < kStages && t < steps; ++t) load_q(t);
  }

  float rdK[kDT][4] = {}, rdV[kDT][4] = {};  // Σ dSᵀ Q, Σ Pᵀ dO: the m64nD accumulators of this warpgroup
  auto& acc_dk = reinterpret_cast<float(&)[D / 2]>(rdK);
  auto& acc_dv = reinterpret_cast<float(&)[D / 2]>(rdV);
  const uint32_t k_addr0 = sm90::smem_address(sK) + wg * kKw * 128;  // this warpgroup's 64 key rows
  const uint32_t v_addr0 = sm90::smem_address(sV) + wg * kKw * 128;
  const uint32_t ds_addr0 = sm90::smem_address(sdS + wg * C::kDSBytes);  // this warpgroup's dS tile
  const int key_l = wg * kKw + warp * 16 + g8;  // this thread's keys within the block: key_l and key_l + 8
  const float scale_log2 = a.scale_log2;

  if (steps > 0) {
    sm90::mbarrier_wait_parity(kv_full, 0);  // sK, sV have landed (used once: phase 0)
    const int kv_from = first_foreign_row(k0, kBc, kb.nk, kv.row, a.seq_k);
    if (kv_from < kBc) {
      zero_rows<D>(sK, kBc, kv_from, tid, C::kThreads);
      zero_rows<D>(sV, kBc, kv_from, tid, C::kThreads);
      __syncthreads();  // every thread's zeros, fenced for the async proxy, before any wgmma reads them
    }
  }

  for (int64_t t = 0; t < steps; ++t) {
    const int st = int(t % kStages);
    const Step s = step_of(t);
    const int64_t i0 = s.m * kBr;  // the tile's first query row, within the sequence
    unsigned char* sQ = sQdO + st * C::kStageBytes;
    // The tiles' shared addresses, hidden from the compiler for this step (an empty asm): otherwise it
    // works out every descriptor of both stages once, before the walk, and keeps them all in registers
    // (64-bit each; ptxas -v: spills at D = 128).
    uint32_t q_addr = sm90::smem_address(sQ), k_addr = k_addr0, v_addr = v_addr0, ds_addr = ds_addr0;
    asm volatile("" : "+r"(q_addr), "+r"(k_addr), "+r"(v_addr), "+r"(ds_addr));
    const uint32_t k_all = k_addr - wg * kKw * 128, ds_all = ds_addr - wg * C::kDSBytes;  // the block's 128 keys
    const uint32_t do_addr = q_addr + C::kQBytes;
    sm90::mbarrier_wait_parity(&q_full[st], uint32_t(t / kStages) & 1);  // Q_i, dO_i have landed
    const int q_from = first_foreign_row(i0, kBr, nq, plane_row(s.q_base, a.seq_q, a.heads).row, a.seq_q);
    if (q_from < kBr) {
      zero_rows<D>(sQ, kBr, q_from, tid, C::kThreads);
      zero_rows<D>(sQ + C::kQBytes, kBr, q_from, tid, C::kThreads);
      __syncthreads();  // the rows of another entry (or the padding) are zeros before any product reads them
    }

    // Sᵀ = K_w Q_iᵀ: 64 keys × Br queries, k = the head dimension.
    float rS[kNT][4], rP[kNT][4];
    auto& acc_s = reinterpret_cast<float(&)[kBr / 2]>(rS);
    auto& acc_p = reinterpret_cast<float(&)[kBr / 2]>(rP);
    sm90::wgmma_fence();  // rdK, rdV were last written by wgmma, rS is fresh: order them all the same
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks)  // the first product overwrites: scale-d = 0
      sm90::wgmma_m64nNk16<kBr, T, false, false>(acc_s, k_major_descriptor(k_addr, kBc, 0, ks),
                                                 k_major_descriptor(q_addr, kBr, 0, ks), ks > 0);
    sm90::wgmma_commit_group();
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(acc_s);  // no read of rS above the wait

    // Pᵀ in place. Element (n, e) of the thread: key k0 + jl, jl = key_l + 8·(e / 2), query i0 + col,
    // col = 8n + 2·t4 + e % 2. The mask only where the tile has a key or row outside the range (the
    // causal diagonal, the tails), in 32-bit offsets within the tile: key jl is kept when jl < key_lim,
    // col < row_lim and (causal) jl − col <= diag.
    const float* rows = sRows + (t % 2) * 2 * kBr;  // this step's LSE · log2 e, then delta
    const int row_lim = int(min(nq - i0, int64_t(kBr)));
    const int diag = a.causal ? int(max(min(i0 + diag0, int64_t(kBc)), int64_t(-2 * kBc))) : kBc;
    const bool edge = diag < kBc - 1 || key_lim < kBc || row_lim < kBr;
#pragma unroll
    for (int n = 0; n < kNT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int jl = key_l + 8 * (e / 2), col = 8 * n + 2 * t4 + e % 2;
        const bool keep = !edge || (jl < key_lim && col < row_lim && jl - col <= diag);
        rS[n][e] = keep ? exp2f(rS[n][e] * scale_log2 - rows[col]) : 0.0f;
      }
    // Pᵀ as A fragments (k = the query rows, Br/16 steps), rounded to T: from here on the only copy of P
    // (rS dies), live and fenced until dV's wgmma is done.
    uint32_t pa[kBr / 16][4], dsa[kBr / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBr / 16; ++kk) a_from_c<T>(pa[kk], rS[2 * kk], rS[2 * kk + 1]);

    // dPᵀ = V_w dO_iᵀ, the same shape, after Sᵀ rather than beside it: Sᵀ's 32 fp32 registers are 16 of
    // P's by now, and dK, dV (128 at D = 128) leave no room for both accumulators and the softmax's
    // temporaries (ptxas -v: 64 bytes of spill when both were in flight).
    sm90::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks)
      sm90::wgmma_m64nNk16<kBr, T, false, false>(acc_p, k_major_descriptor(v_addr, kBc, 0, ks),
                                                 k_major_descriptor(do_addr, kBr, 0, ks), ks > 0);
    sm90::wgmma_commit_group();
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(acc_p);

    // dSᵀ = Pᵀ ∘ (dPᵀ − delta) in place, P read back from its fragments (as the naive backward, stage 05's
    // v0, computes dS from P rounded to T); masked elements have P = 0 and a finite dP, so dS = 0.
#pragma unroll
    for (int n = 0; n < kNT; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = 8 * n + 2 * t4 + e % 2;
        const uint32_t pair = pa[n / 2][(n % 2) * 2 + e / 2];  // a_from_c: (key row, two query columns)
        const float p = half_to_float<T>(uint16_t(e % 2 ? pair >> 16 : pair & 0xffffu));
        rP[n][e] = p * (rP[n][e] - rows[kBr + col]);
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
    sm90::wgmma_commit_group();

    // dS (query rows × this warpgroup's 64 keys) into sdS[w], K-major for dQ's A, from dSᵀ's A fragments
    // (rP is dead by now): element (i, j) at row i, 16-byte chunk (j / 8) ^ (i % 8), the 128-byte swizzle
    // the descriptor reads. The thread's element (n, e) is query i = 8n + 2·t4 + e % 2, key j = warp·16 +
    // g8 + 8·(e / 2): i % 8 and j / 8 do not depend on n, so four offsets serve all 32 stores (+1024·n).
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int r = 2 * t4 + e % 2;  // i % 8
      const uint32_t at = ds_addr + r * 128 + (((2 * warp + e / 2) ^ r) * 16) + g8 * 2;
#pragma unroll
      for (int n = 0; n < kNT; ++n) {
        const uint32_t pair = dsa[n / 2][(n % 2) * 2 + e / 2];  // a_from_c: (key row, two query columns)
        const uint16_t half = uint16_t(e % 2 ? pair >> 16 : pair & 0xffffu);
        asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(at + n * 1024), "h"(half) : "memory");
      }
    }
    sm90::fence_proxy_async();  // these plain stores, visible to wgmma's reads (the async proxy)
    sm90::wgmma_wait_group<0>();
    sm90::wgmma_fence_operand(acc_dv);
    sm90::wgmma_fence_operand(acc_dk);
#pragma unroll
    for (int kk = 0; kk < kBr / 16; ++kk) {
      sm90::wgmma_fence_operand(pa[kk]);  // pa, dsa live until here
      sm90::wgmma_fence_operand(dsa[kk]);
    }
    // dQ_i += dS · K_j, Br × 64 fp32 (32 registers) per warpgroup, added into dq_accum rows q_base + i0 ..
    // (the tile's real rows only). At D = 128 warpgroup w takes D's panel w over all 128 keys (A: both
    // dS tiles, adjacent in shared memory, as one K-major tile of two panels), so each dQ element gets
    // one add per block; at D = 64 (one panel) each takes its own 64 keys, and each element gets two.
    if constexpr (kDqSplitsKeys)
      sm90::bar_sync(1 + wg, 128);  // the warpgroup's four warps have written sdS[w] before any reads it
    else
      __syncthreads();  // both warpgroups have written their dS tiles before either reads both
    auto add_dq = [&] {
      float rQ[8][4];
      auto& acc_q = reinterpret_cast<float(&)[32]>(rQ);
      sm90::wgmma_fence();
      if constexpr (kDqSplitsKeys) {
#pragma unroll
        for (int ks = 0; ks < kKw / 16; ++ks)  // k = 16 keys; K_w read N-major (D contiguous)
          sm90::wgmma_m64nNk16<64, T, false, /*kTransB=*/true>(
              acc_q, k_major_descriptor(ds_addr, kBr, 0, ks), v_descriptor(k_addr, kBc, ks), ks > 0);
      } else {
#pragma unroll
        for (int ks = 0; ks < kBc / 16; ++ks)  // k = 16 keys of the block's 128; K read N-major, panel w
          sm90::wgmma_m64nNk16<64, T, false, /*kTransB=*/true>(
              acc_q, k_major_descriptor(ds_all, kBr, 0, ks), v_descriptor(k_all + wg * kBc * 128, kBc, ks), ks > 0);
      }
      sm90::wgmma_commit_group();
      sm90::wgmma_wait_group<0>();
      sm90::wgmma_fence_operand(acc_q);
      const int col0 = kDqSplitsKeys ? 0 : wg * 64;
#pragma unroll
      for (int e2 = 0; e2 < 2; ++e2) {
        const int il = warp * 16 + g8 + 8 * e2;  // rows of this thread in the m64n64 accumulator
        if (il >= row_lim) continue;
        float* row = a.dq_accum + (s.q_base + i0 + il) * D + col0 + 2 * t4;
#pragma unroll
        for (int n = 0; n < 8; ++n) {
          atomicAdd(row + 8 * n, rQ[n][2 * e2]);
          atomicAdd(row + 8 * n + 1, rQ[n][2 * e2 + 1]);
        }
      }
    };
    // Deterministic mode: key block n adds after n − 1 (turns.cuh), warpgroup 0's share before 1's. One
    // call of add_dq either way (two would double its code, and ptxas's register demand with it).
    int32_t* turn = nullptr;
    if (turns) {
      const int64_t b = blockIdx.x / kv_tiles / (a.heads / a.group);
      turn = turns + ((b * a.heads + s.bh % a.heads) * ((a.max_seq_q + kBr - 1) / kBr) + s.m);
      if (tid == 0) wait_turn(turn, int32_t(n_block));
      __syncthreads();  // the turn is this block's: every thread's adds come after the previous block's
    }
#pragma unroll 1
    for (int w = 0; w < (turns ? C::kWarpgroups : 1); ++w) {
      if (!turns || wg == w) add_dq();
      if (turns) {
        __threadfence();  // this thread's adds, visible GPU-wide before the next warpgroup's and the turn
        __syncthreads();  // warpgroup w's adds are all issued before w + 1 starts
      }
    }
    if (turn && tid == 0) pass_turn(turn);

    if (t + 1 < steps) load_rows(t + 1);  // into the other half of sRows, last read in step t − 1
    // Both warpgroups' waits cover their products: stage st and sdS are free once all have met here
    // (and step t + 1's rows are in sRows).
    __syncthreads();
    if (tid == 0 && t + kStages < steps) load_q(t + kStages);
  }

  // dK = scale · Σ dSᵀ Q, dV = Σ Pᵀ dO, rounded, written once (epilogue.cuh).
  write_dk_dv<T, D>(a, kBc, key_l, t4, rdK, rdV);
}

}  // namespace fs::flash_bwd_tma::v1
