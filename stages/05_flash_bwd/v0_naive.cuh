// flashstages · stage 05 · v0 — the naive backward: P and dS materialized in DRAM, one thread per
// element. The baseline the later versions are measured and held against.
//
// What it does: the backward formulas one step per kernel, as a framework's autograd runs them for
// `softmax(scale · q @ k.T) @ v` (docs/05_flash_bwd.md derives them):
//   0. delta_kernel  delta_i = Σ_c dO_ic O_ic          (common/device/bwd_preprocess.cuh, shared)
//   1. p_kernel      P = exp(scale · Q Kᵀ - LSE)        one thread per (i, j), P written to DRAM
//   2. ds_kernel     dS = P ∘ (dO Vᵀ - delta)           one thread per (i, j), dS written to DRAM
//   3. dkv_kernel    dV = Pᵀ dO,  dK = scale · dSᵀ Q    one thread per (j, c), a column of P and of dS each
//   4. dq_kernel     dQ = scale · dS K                  one thread per (i, c), a row of dS
// Why it is slow: P and dS are 2·B·H·Nq·Nk elements that cross DRAM six times (each written once and
// read twice), and every thread of steps 1–2 reads two whole rows of D from global memory for one
// element; steps 3–4 read their column of P or dS with a stride of Nk elements.
//
// Run: build/release/stages/05_flash_bwd/stage05_flash_bwd --seq 1024 --dim 64 [--causal] [--dtype fp16] --version v0
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/lib/numeric.h"

// P is recomputed from the forward's LSE (the forward kept no N×N matrix either), so no softmax runs
// here. In fp16/bf16, P and dS are stored in the input type and every sum runs in fp32: the roundings
// of the plain autograd graph, whose error (against fp64) is the budget the tensor-core versions get
// twice of. dP is never stored: step 2 computes each dP_ij and uses it at once. Grouped-query
// attention: query head h reads K/V head h / G, and step 3's thread sums over the G query heads of its
// K/V head as well as over their rows (dK = scale · Σ_heads dSᵀ Q): no atomics.

namespace fs::bwd::v0 {

constexpr int kThreads = 256;

// The sizes every kernel of v0 takes. Tensors are dense: Q, dO, dQ [B·H, Nq, D], K, V, dK, dV
// [B·KVH, Nk, D]; P and dS [B·H, Nq, Nk].
struct Shape {
  int64_t heads;     // B·H
  int64_t kv_heads;  // B·KVH
  int64_t group;     // G = H / KVH: query head h reads K/V head h / G (common/lib/attention.h)
  int64_t nq, nk, d;
  float scale;
  bool causal;    // query i sees keys j <= i + (nk - nq)
};

// The element each thread of a one-thread-per-element grid owns, in 64 bits (B·H·Nq·Nk passes 2^31).
__device__ __forceinline__ int64_t element_index() { return int64_t(blockIdx.x) * kThreads + threadIdx.x; }

// Entry (h, i, j) of a [B·H, Nq, Nk] matrix stored at flat index e.
struct Entry {
  int64_t h, i, j;
  bool visible;  // key j is visible to query i
};
__device__ __forceinline__ Entry entry(int64_t e, const Shape& s) {
  const int64_t j = e % s.nk, i = e / s.nk % s.nq;
  return {e / (s.nq * s.nk), i, j, !s.causal || j <= i + (s.nk - s.nq)};
}

// Σ_c x[c] · y[c] over a row of D, in fp32.
template <class T>
__device__ __forceinline__ float dot(const T* x, const T* y, int64_t d) {
  float acc = 0.0f;
  for (int64_t c = 0; c < d; ++c) acc += to_float(x[c]) * to_float(y[c]);
  return acc;
}

// P[h, i, j] = exp(scale · Q_i · K_j - LSE_i), 0 where the mask hides key j. Consecutive threads take
// consecutive j: the P row is written coalesced, and each thread reads row i of Q (the same for the
// warp) and row j of K (32 different rows: the uncoalesced load stage 01's scores kernel has too).
template <class T>
__global__ void __launch_bounds__(kThreads)
    p_kernel(const T* __restrict__ q, const T* __restrict__ k, const float* __restrict__ lse, T* __restrict__ p,
             Shape s) {
  const int64_t e = element_index();
  if (e >= s.heads * s.nq * s.nk) return;
  const Entry x = entry(e, s);
  const float score =
      x.visible ? dot(q + (x.h * s.nq + x.i) * s.d, k + (x.h / s.group * s.nk + x.j) * s.d, s.d) : 0.0f;
  const float value = x.visible ? expf(s.scale * score - lse[x.h * s.nq + x.i]) : 0.0f;
  p[e] = from_float<T>(value);
}

// dS[h, i, j] = P_ij · (dO_i · V_j - delta_i); 0 where the mask hides key j (P is 0 there).
template <class T>
__global__ void __launch_bounds__(kThreads)
    ds_kernel(const T* __restrict__ d_o, const T* __restrict__ v, const T* __restrict__ p,
              const float* __restrict__ delta, T* __restrict__ ds, Shape s) {
  const int64_t e = element_index();
  if (e >= s.heads * s.nq * s.nk) return;
  const Entry x = entry(e, s);
  const float dp =
      x.visible ? dot(d_o + (x.h * s.nq + x.i) * s.d, v + (x.h / s.group * s.nk + x.j) * s.d, s.d) : 0.0f;
  const float value = x.visible ? to_float(p[e]) * (dp - delta[x.h * s.nq + x.i]) : 0.0f;
  ds[e] = from_float<T>(value);
}

// dV[kvh, j, c] = Σ_h Σ_i P_hij dO_hic and dK[kvh, j, c] = scale · Σ_h Σ_i dS_hij Q_hic: one thread per
// (j, c) of K/V head kvh, both sums in one loop over the group's query heads h and the rows that see
// key j (under the causal mask, i >= j - (nk - nq)).
template <class T>
__global__ void __launch_bounds__(kThreads)
    dkv_kernel(const T* __restrict__ q, const T* __restrict__ d_o, const T* __restrict__ p, const T* __restrict__ ds,
               T* __restrict__ dk, T* __restrict__ dv, Shape s) {
  const int64_t e = element_index();
  if (e >= s.kv_heads * s.nk * s.d) return;
  const int64_t c = e % s.d, j = e / s.d % s.nk, kvh = e / (s.nk * s.d);
  const int64_t first = s.causal ? (j - (s.nk - s.nq) > 0 ? j - (s.nk - s.nq) : 0) : 0;
  float acc_v = 0.0f, acc_k = 0.0f;
  for (int64_t h = kvh * s.group; h < (kvh + 1) * s.group; ++h) {
    const T* ph = p + h * s.nq * s.nk;    // [Nq, Nk]
    const T* dsh = ds + h * s.nq * s.nk;  // [Nq, Nk]
    for (int64_t i = first; i < s.nq; ++i) {
      acc_v += to_float(ph[i * s.nk + j]) * to_float(d_o[(h * s.nq + i) * s.d + c]);
      acc_k += to_float(dsh[i * s.nk + j]) * to_float(q[(h * s.nq + i) * s.d + c]);
    }
  }
  dv[e] = from_float<T>(acc_v);
  dk[e] = from_float<T>(s.scale * acc_k);
}

// dQ[h, i, c] = scale · Σ_j dS_ij K_jc: one thread per (i, c), over the keys row i sees.
template <class T>
__global__ void __launch_bounds__(kThreads)
    dq_kernel(const T* __restrict__ k, const T* __restrict__ ds, T* __restrict__ dq, Shape s) {
  const int64_t e = element_index();
  if (e >= s.heads * s.nq * s.d) return;
  const int64_t c = e % s.d, i = e / s.d % s.nq, h = e / (s.nq * s.d);
  const int64_t end = s.causal ? i + (s.nk - s.nq) + 1 : s.nk;  // <= nk: causal needs nq <= nk
  const T* dsi = ds + (h * s.nq + i) * s.nk;  // [Nk]
  float acc = 0.0f;
  const T* kh = k + h / s.group * s.nk * s.d;  // [Nk, D]: its K/V head
  for (int64_t j = 0; j < end; ++j) acc += to_float(dsi[j]) * to_float(kh[j * s.d + c]);
  dq[e] = from_float<T>(s.scale * acc);
}

}  // namespace fs::bwd::v0
