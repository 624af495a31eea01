// flashstages · stage 05 · v1 — the FlashAttention-2 backward in fp32, the algorithm made plain: delta
// once, K and V resident, Q and dO streamed past them, P recomputed from LSE, no N×N buffer.
//
// What changes from v0: the four N×N passes become one kernel that never writes P or dS to DRAM
// (FlashAttention-2, Algorithm 2). A block owns one key block j — Bc rows of K and V, kept in shared
// memory — and the query tiles stream past it, Br rows at a time (the loop below). dQ: every key block
// adds its share of every dQ_i it sees with fp32 atomicAdd straight into dQ (zeroed first); with
// `deterministic` set, a second kernel, one block per query tile, sums dQ_i in registers in key order
// instead — bitwise the same every run, at the price of computing S′ and dP twice.
// Why it should be faster than v0: P and dS stay on chip (v0 moves 6·B·H·Nq·Nk elements through DRAM
// for them), and every Q, K, V, dO element is read from shared memory by a whole row of threads
// instead of from global memory by each thread on its own.
// What it still lacks: fp32 FMA on the CUDA cores (v2: tensor cores), one dQ atomic per key block and
// element, and loads that stall the block until they land.
//
// Run: build/release/stages/05_flash_bwd/stage05_flash_bwd --seq 4096 --dim 64 [--causal] [--deterministic] --version v1
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/attention.cuh"  // attn::kLog2e
#include "common/device/fp32_tile.cuh"
#include "common/device/bwd_args.cuh"

// The loop of a block that owns key block j:
//   preprocess:                         delta = rowsum(dO ∘ O), once per row (common/device/bwd_preprocess.cuh)
//   for each query tile i that sees a key of block j:
//     sQ, sdO, LSE_i, delta_i ← tile i                                     all threads, then a barrier
//     S′ = Q_i K_jᵀ, dP = dO_i V_jᵀ                                        one pass over D for both
//     P = exp(scale · S′ - LSE_i), dS = P ∘ (dP - delta_i) → sP, sdS     the forward's LSE: no softmax
//     dV_j += Pᵀ dO_i,  dK_j += dSᵀ Q_i                                    registers, all tiles long
//     dQ_i += scale · dS K_j                                               atomicAdd into DRAM
//   dK_j = scale · dK_j and dV_j → DRAM, once
// Under the causal mask a key block is seen only from query row j·Bc - (Nk - Nq) on: the tiles above
// that are skipped (each key block of a square problem visits half the tiles on average).
// Grouped-query attention (kv_heads < heads): a block owns key block j of one K/V head and runs the
// loop above once for each of the G query heads that share it, dK_j and dV_j summing on in the same
// registers — dK_j = scale · Σ_heads Σ_i dS_ijᵀ Q_i — and written once. No atomics on dK, dV and no
// per-query-head dK, dV buffers to reduce afterwards (FlashAttention-2 takes one of those two ways,
// with a grid over query heads); the price is G times fewer, G times longer blocks.
// dQ: the atomics add no memory and no second pass, but the order of the additions changes from run to
// run, and with it the last bits of dQ. With `deterministic` the K/V kernel leaves dQ alone, and the
// second kernel streams K_j and V_j past its query tile, recomputes P and dS and sums
// dQ_i = scale · Σ_j dS_ij K_j in registers, in key order (7 of the forward's products instead of 5).
// dK, dV and delta are deterministic either way.
// Thread layout (256 threads as 16 × 16, ty = threadIdx.x / 16, tx = threadIdx.x % 16; the tiles in
// shared memory are padded by one float per row, so the 16 lanes that read down a column of sK or sV
// hit 16 different banks):
//   S′, dP, P, dS  [Br][Bc]  thread (ty, tx): rows ty·kRM + m, columns tx + 16·n
//   dK_j, dV_j     [Bc][D]   thread (ty, tx): key rows ty·kKM + m, columns tx + 16·n
//   dQ_i           [Br][D]   thread (ty, tx): rows ty·kRM + m, columns tx + 16·n

namespace fs::bwd::v1 {

template <int D>
struct Config {
  static constexpr int kThreads = 256;           // 16 × 16
  static constexpr int kBr = 32;                 // query rows per streamed tile
  static constexpr int kBc = D <= 64 ? 64 : 32;  // key rows per block, resident: the dK, dV tiles fit 32 registers
  static constexpr int kRM = kBr / 16;           // rows per thread of a [Br][Bc] or [Br][D] tile
  static constexpr int kCN = kBc / 16;           // columns per thread of a [Br][Bc] tile
  static constexpr int kKM = kBc / 16;           // rows per thread of a [Bc][D] tile
  static constexpr int kDN = D / 16;             // columns per thread of a [Bc][D] or [Br][D] tile
  static constexpr int kLd = D + 1;              // row stride of sK, sV, sQ, sdO
  static constexpr int kLdS = kBc + 1;           // row stride of sP, sdS
  static constexpr int kSmemFloats = 2 * kBc * kLd + 2 * kBr * kLd + 2 * kBr * kLdS + 2 * kBr;
  static constexpr std::size_t kSmemBytes = std::size_t(kSmemFloats) * sizeof(float);
};

using Args = bwd::Args<float>;  // common/device/bwd_args.cuh

// One block's shared memory, as the tiles it holds.
template <int D>
struct Tiles {
  using C = Config<D>;
  float* sK;      // [Bc][D+1]  K_j
  float* sV;      // [Bc][D+1]  V_j
  float* sQ;      // [Br][D+1]  Q_i
  float* sdO;     // [Br][D+1]  dO_i
  float* sP;      // [Br][Bc+1] P_ij
  float* sdS;     // [Br][Bc+1] dS_ij
  float* sLse;    // [Br]       LSE_i · log2(e)
  float* sDelta;  // [Br]       delta_i
  __device__ explicit Tiles(float* smem)
      : sK(smem),
        sV(sK + C::kBc * C::kLd),
        sQ(sV + C::kBc * C::kLd),
        sdO(sQ + C::kBr * C::kLd),
        sP(sdO + C::kBr * C::kLd),
        sdS(sP + C::kBr * C::kLdS),
        sLse(sdS + C::kBr * C::kLdS),
        sDelta(sLse + C::kBr) {}
};

// The part of the problem block x of a grid of heads·ceil(n / rows) blocks owns: head `head` (a query
// head of the dQ grid, a K/V head of the K/V grid), rows row0 .. row0 + rows - 1 of n (query tiles or
// key blocks). A head's blocks are consecutive, so that they run together and share its tensors in L2;
// with `reverse` its last tile comes first.
struct BlockTile {
  int64_t head, row0;
};
__device__ __forceinline__ BlockTile block_tile(int64_t n, int rows, bool reverse) {
  const int64_t tiles = (n + rows - 1) / rows, x = blockIdx.x % tiles;
  return {blockIdx.x / tiles, (reverse ? tiles - 1 - x : x) * rows};
}

// Query tile q0 of head bh into sQ, sdO, sLse and sDelta; rows past Nq become zeros (their P is masked
// to 0 below, so nothing of them counts). The caller waits at a barrier before anyone reads them.
template <int D>
__device__ __forceinline__ void load_query_tile(const Tiles<D>& t, const Args& a, int64_t bh, int64_t q0) {
  using C = Config<D>;
  fp32::load_tile<D, C::kThreads>(t.sQ, C::kLd, a.q + bh * a.seq_q * D, q0, C::kBr, a.seq_q);
  fp32::load_tile<D, C::kThreads>(t.sdO, C::kLd, a.d_o + bh * a.seq_q * D, q0, C::kBr, a.seq_q);
  for (int r = threadIdx.x; r < C::kBr; r += C::kThreads) {
    const bool real = q0 + r < a.seq_q;
    t.sLse[r] = real ? a.lse[bh * a.seq_q + q0 + r] * attn::kLog2e : 0.0f;
    t.sDelta[r] = real ? a.delta[bh * a.seq_q + q0 + r] : 0.0f;
  }
}

// Key block k0 of K/V head kvh into sK and sV; rows past Nk become zeros.
template <int D>
__device__ __forceinline__ void load_key_block(const Tiles<D>& t, const Args& a, int64_t kvh, int64_t k0) {
  using C = Config<D>;
  fp32::load_tile<D, C::kThreads>(t.sK, C::kLd, a.k + kvh * a.seq_k * D, k0, C::kBc, a.seq_k);
  fp32::load_tile<D, C::kThreads>(t.sV, C::kLd, a.v + kvh * a.seq_k * D, k0, C::kBc, a.seq_k);
}

// P and dS of the [Br][Bc] tile of query rows q0.. and keys k0.., this thread's kRM × kCN entries, into
// sP and sdS:
//   S′ = Q_i · K_j,  dP = dO_i · V_j                    one pass over D for both
//   P  = exp2(scale_log2 · S′ - LSE_i · log2 e)         0 where the key is hidden: past Nk, right of the
//                                                       diagonal, or in a row past Nq
//   dS = P · (dP - delta_i)
// LSE is the forward's, so P needs no maximum: it is at most 1 for any scale, negative too.
template <int D>
__device__ __forceinline__ void p_and_ds(const Tiles<D>& t, const Args& a, int64_t q0, int64_t k0) {
  using C = Config<D>;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  float rS[C::kRM][C::kCN] = {}, rdP[C::kRM][C::kCN] = {};  // this thread's S′ and dP
  for (int x = 0; x < D; ++x) {
    float q[C::kRM], d_o[C::kRM], k[C::kCN], v[C::kCN];
#pragma unroll
    for (int m = 0; m < C::kRM; ++m) {
      q[m] = t.sQ[(ty * C::kRM + m) * C::kLd + x];
      d_o[m] = t.sdO[(ty * C::kRM + m) * C::kLd + x];
    }
#pragma unroll
    for (int n = 0; n < C::kCN; ++n) {
      k[n] = t.sK[(tx + 16 * n) * C::kLd + x];
      v[n] = t.sV[(tx + 16 * n) * C::kLd + x];
    }
#pragma unroll
    for (int m = 0; m < C::kRM; ++m)
#pragma unroll
      for (int n = 0; n < C::kCN; ++n) {
        rS[m][n] += q[m] * k[n];
        rdP[m][n] += d_o[m] * v[n];
      }
  }
  const int64_t offset = a.seq_k - a.seq_q;
#pragma unroll
  for (int m = 0; m < C::kRM; ++m) {
    const int r = ty * C::kRM + m;
    const int64_t row = q0 + r;
#pragma unroll
    for (int n = 0; n < C::kCN; ++n) {
      const int c = tx + 16 * n;
      const int64_t col = k0 + c;
      const bool visible = row < a.seq_q && col < a.seq_k && (!a.causal || col <= row + offset);
      const float p = visible ? exp2f(a.scale_log2 * rS[m][n] - t.sLse[r]) : 0.0f;
      t.sP[r * C::kLdS + c] = p;
      t.sdS[r * C::kLdS + c] = p * (rdP[m][n] - t.sDelta[r]);
    }
  }
}

// grid: B·KVH·ceil(Nk/Bc) blocks of 256 threads; block x owns key block x % ceil(Nk/Bc) of K/V head
// x / ceil(Nk/Bc), and meets the query tiles of each query head of its group in turn. Writes dK_j and
// dV_j, summed over the group; with kAtomicDQ, also adds its share of each query head's dQ.
template <int D, bool kAtomicDQ>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_bwd_v1_dkv_kernel(const Args a) {
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kKM = C::kKM, kDN = C::kDN, kLd = C::kLd, kLdS = C::kLdS;
  extern __shared__ float smem[];
  const Tiles<D> t(smem);
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const BlockTile block = block_tile(a.seq_k, kBc, false);
  const int64_t kvh = block.head, k0 = block.row0;
  load_key_block(t, a, kvh, k0);

  float rdK[kKM][kDN] = {}, rdV[kKM][kDN] = {};  // dK_j (before the scale) and dV_j, over the group
  // Under the causal mask query row i sees key k0 from i = k0 - (Nk - Nq) on; the tiles before the one
  // holding that row see no key of this block. The same tiles of each query head of the group, one head
  // after the other, dK_j and dV_j summing on.
  const int64_t first_row = a.causal ? max(k0 - (a.seq_k - a.seq_q), int64_t(0)) : 0;
  for (int64_t bh = kvh * a.group; bh < (kvh + 1) * a.group; ++bh) {
    for (int64_t q0 = first_row / kBr * kBr; q0 < a.seq_q; q0 += kBr) {
      __syncthreads();  // every thread is done with the previous tile's sQ, sdO, sP, sdS, sLse, sDelta
      load_query_tile(t, a, bh, q0);
      __syncthreads();  // sQ, sdO, sLse, sDelta complete (and, the first time, sK and sV)
      p_and_ds(t, a, q0, k0);
      __syncthreads();  // sP and sdS complete: below, each thread reads entries other threads wrote

      // dV_j += Pᵀ dO_i and dK_j += dSᵀ Q_i: a sum over the tile's Br rows.
      for (int r = 0; r < kBr; ++r) {
        float p[kKM], ds[kKM], d_o[kDN], q[kDN];
#pragma unroll
        for (int m = 0; m < kKM; ++m) {
          p[m] = t.sP[r * kLdS + ty * kKM + m];
          ds[m] = t.sdS[r * kLdS + ty * kKM + m];
        }
#pragma unroll
        for (int n = 0; n < kDN; ++n) {
          d_o[n] = t.sdO[r * kLd + tx + 16 * n];
          q[n] = t.sQ[r * kLd + tx + 16 * n];
        }
#pragma unroll
        for (int m = 0; m < kKM; ++m)
#pragma unroll
          for (int n = 0; n < kDN; ++n) {
            rdV[m][n] += p[m] * d_o[n];
            rdK[m][n] += ds[m] * q[n];
          }
      }

      if constexpr (kAtomicDQ) {
        // dQ_i += scale · dS K_j: this key block's share, added to DRAM; the other key blocks add theirs
        // in whatever order they get there.
#pragma unroll
        for (int m = 0; m < C::kRM; ++m) {
          const int r = ty * C::kRM + m;
          float acc[kDN] = {};
          for (int c = 0; c < kBc; ++c) {
            const float ds = t.sdS[r * kLdS + c];
#pragma unroll
            for (int n = 0; n < kDN; ++n) acc[n] += ds * t.sK[c * kLd + tx + 16 * n];
          }
          if (q0 + r < a.seq_q) {
            float* dq_row = a.dq + (bh * a.seq_q + q0 + r) * D;
#pragma unroll
            for (int n = 0; n < kDN; ++n) atomicAdd(dq_row + tx + 16 * n, a.scale * acc[n]);
          }
        }
      }
    }
  }

#pragma unroll
  for (int m = 0; m < kKM; ++m) {
    const int64_t key = k0 + ty * kKM + m;
    if (key >= a.seq_k) continue;
    float* dk_row = a.dk + (kvh * a.seq_k + key) * D;
    float* dv_row = a.dv + (kvh * a.seq_k + key) * D;
#pragma unroll
    for (int n = 0; n < kDN; ++n) {
      dk_row[tx + 16 * n] = a.scale * rdK[m][n];
      dv_row[tx + 16 * n] = rdV[m][n];
    }
  }
}

// Deterministic dQ. grid: B·H·ceil(Nq/Br) blocks of 256 threads; block x owns query tile x % ceil(Nq/Br)
// of query head x / ceil(Nq/Br) (under the causal mask the last tile first: it sees the most keys, and the
// longest blocks should not be the last to start). Streams the key blocks the tile sees past it and
// sums dQ_i = scale · Σ_j dS_ij K_j in registers, always in the same order.
template <int D>
__global__ void __launch_bounds__(Config<D>::kThreads) flash_bwd_v1_dq_kernel(const Args a) {
  using C = Config<D>;
  constexpr int kBr = C::kBr, kBc = C::kBc, kRM = C::kRM, kDN = C::kDN, kLd = C::kLd, kLdS = C::kLdS;
  extern __shared__ float smem[];
  const Tiles<D> t(smem);
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const BlockTile block = block_tile(a.seq_q, kBr, /*reverse=*/a.causal);
  const int64_t bh = block.head, q0 = block.row0, kvh = bh / a.group;  // kvh: its K/V head
  load_query_tile(t, a, bh, q0);

  float rdQ[kRM][kDN] = {};  // dQ_i before the scale: rows ty·kRM + m, columns tx + 16·n
  // The keys the tile's last row sees: all of them, or under the causal mask up to its diagonal.
  const int64_t last_row = min(q0 + kBr, a.seq_q) - 1;
  const int64_t kv_end = a.causal ? min(a.seq_k, last_row + (a.seq_k - a.seq_q) + 1) : a.seq_k;
  for (int64_t k0 = 0; k0 < kv_end; k0 += kBc) {
    __syncthreads();  // every thread is done with the previous key block's sK, sV, sP, sdS
    load_key_block(t, a, kvh, k0);
    __syncthreads();  // sK and sV complete (and, the first time, sQ, sdO, sLse, sDelta)
    p_and_ds(t, a, q0, k0);
    __syncthreads();  // sdS complete: below, each thread reads entries other threads wrote
#pragma unroll
    for (int m = 0; m < kRM; ++m) {
      const int r = ty * kRM + m;
      for (int c = 0; c < kBc; ++c) {
        const float ds = t.sdS[r * kLdS + c];
#pragma unroll
        for (int n = 0; n < kDN; ++n) rdQ[m][n] += ds * t.sK[c * kLd + tx + 16 * n];
      }
    }
  }

#pragma unroll
  for (int m = 0; m < kRM; ++m) {
    const int64_t row = q0 + ty * kRM + m;
    if (row >= a.seq_q) continue;
    float* dq_row = a.dq + (bh * a.seq_q + row) * D;
#pragma unroll
    for (int n = 0; n < kDN; ++n) dq_row[tx + 16 * n] = a.scale * rdQ[m][n];
  }
}

}  // namespace fs::bwd::v1
