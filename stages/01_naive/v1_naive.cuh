// flashstages · stage 01 · v1 — naive attention: three kernels and an N×N score matrix in DRAM.
//
// What it does: the textbook formula, one step per kernel (the first rung: nothing to change from).
//   1. scores_v1_kernel  S = scale · Q Kᵀ     one thread per S element, S written to global memory
//   2. softmax_kernel    P = softmax_rows(S)  one block per row, P written over S, LSE kept
//                                            (common/device/row_softmax.cuh: stage 02 runs it too)
//   3. pv_v1_kernel      O = P V              one thread per O element
// Why it is slow: S is B·H·Nq·Nk elements and crosses DRAM four times: written by the scores kernel,
// read once and written once by the softmax (its three passes over a row read DRAM once as long as the
// row of Nk floats stays in L2 between them: 16 KB at Nk = 4096 does, 64 KB at Nk = 16384 does not,
// docs/02_tiled.md), and read again by the second product: 4·|S| against 4·B·H·N·D elements for Q, K,
// V and O, N/D = 64× more traffic at N = 4096, D = 64. Yet the traffic is not what sets the time: the
// scores kernel's warps read 32 different rows of K per load instruction, and both products re-read
// their operands (through L1/L2) for every output element. docs/01_naive.md counts both with Nsight Compute.
//
// In fp16/bf16 the scores and probabilities are stored in the input type and the softmax runs in fp32:
// the same roundings as a framework's plain `softmax(q @ k.T) @ v` — the "same-precision naive" error
// that later stages are held to (at most 2× this stage's error against fp64).
//
// Run: build/release/stages/01_naive/stage01_naive --seq 4096 --dim 64 [--causal] [--dtype fp16]
#pragma once

#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "common/device/row_softmax.cuh"
#include "common/lib/attention.h"
#include "common/lib/numeric.h"

namespace fs::naive::v1 {

// Is key j visible to query i? Causal masks align to the bottom-right corner: offset = Nk - Nq.
__device__ __forceinline__ bool visible(int64_t i, int64_t j, int64_t offset, bool causal) {
  return !causal || j <= i + offset;
}

// S[bh, i, j] = scale · Σ_c Q[bh, i, c] · K[kv_head(bh), j, c], or -inf where masked.
// grid (ceil(Nk/32), ceil(Nq/8), B·H), block (32, 8): threadIdx.x walks j so that the 32 lanes of a
// warp write 32 consecutive S elements; each of them reads a whole row of K from global memory.
// kv_head: the K/V head query head bh reads (bh itself unless K/V have fewer heads, attention.h).
template <class T>
__global__ void scores_v1_kernel(const T* __restrict__ q, const T* __restrict__ k, T* __restrict__ s, int64_t nq,
                                 int64_t nk, int64_t d, float scale, bool causal, KvHeadOf kv_head) {
  const int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y;
  const int64_t bh = blockIdx.z;
  if (i >= nq || j >= nk) return;
  const T* qi = q + (bh * nq + i) * d;           // [D]
  const T* kj = k + (kv_head(bh) * nk + j) * d;  // [D]
  float acc = -INFINITY;
  if (visible(i, j, nk - nq, causal)) {
    acc = 0.0f;
    for (int64_t c = 0; c < d; ++c) acc += to_float(qi[c]) * to_float(kj[c]);
    acc *= scale;
  }
  s[(bh * nq + i) * nk + j] = from_float<T>(acc);
}

// O[bh, i, c] = Σ_j P[bh, i, j] · V[kv_head(bh), j, c]. grid (ceil(D/32), ceil(Nq/8), B·H), block
// (32, 8): threadIdx.x walks c, so a warp reads 32 consecutive elements of each V row. Under the causal
// mask P is zero past key i + offset, so the loop stops there.
template <class T>
__global__ void pv_v1_kernel(const T* __restrict__ p, const T* __restrict__ v, T* __restrict__ o, int64_t nq,
                             int64_t nk, int64_t d, bool causal, KvHeadOf kv_head) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t i = blockIdx.y * int64_t(blockDim.y) + threadIdx.y;
  const int64_t bh = blockIdx.z;
  if (i >= nq || c >= d) return;
  const T* pi = p + (bh * nq + i) * nk;    // [Nk]
  const T* vb = v + kv_head(bh) * nk * d;  // [Nk, D]
  const int64_t j_end = causal ? i + (nk - nq) + 1 : nk;
  float acc = 0.0f;
  for (int64_t j = 0; j < j_end; ++j) acc += to_float(pi[j]) * to_float(vb[j * d + c]);
  o[(bh * nq + i) * d + c] = from_float<T>(acc);
}

}  // namespace fs::naive::v1
