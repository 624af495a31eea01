// FLOP and byte counts, defined once: every TFLOPS and GB/s figure in the project comes from here.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/lib/attention.h"

namespace fs {

// The (query, key) pairs a causal head computes, bottom-right aligned as the kernels define it: query
// row i sees keys j <= i + (Nk - Nq), so row i has min(max(i + Nk - Nq + 1, 0), Nk) of them.
//   Nq <= Nk:  Σ_{i<Nq} (i + Nk - Nq + 1) = Nq·Nk - Nq·(Nq - 1)/2
//   Nq >  Nk:  the first Nq - Nk rows see nothing, the rest 1, 2, ..., Nk: Nk·(Nk + 1)/2
inline double causal_visible_pairs(int64_t nq, int64_t nk) {
  if (nq <= nk) return double(nq) * double(nk) - double(nq) * double(nq - 1) / 2.0;
  return double(nk) * double(nk + 1) / 2.0;
}

// Forward attention: two matrix products of 2·Nq·Nk·D each per head, so 4·B·H·Nq·Nk·D. Causal: with
// Nq = Nk half of that (N²/2 pairs, FlashAttention's convention, which the N×N results have always
// used; the exact count is N·(N + 1)/2); with Nq ≠ Nk the exact count of visible pairs, since there
// the mask can hide far less than half (Nq = 512 queries against Nk = 16384 keys see 98% of them).
inline double attention_fwd_flops(int64_t b, int64_t h, int64_t nq, int64_t nk, int64_t d, bool causal) {
  const double per_pair = 4.0 * double(b) * double(h) * double(d);
  if (!causal) return per_pair * double(nq) * double(nk);
  return nq == nk ? per_pair * double(nq) * double(nk) / 2.0 : per_pair * causal_visible_pairs(nq, nk);
}
inline double attention_fwd_flops(const AttentionParams& p) {
  return attention_fwd_flops(p.batch, p.heads, p.seq_q, p.seq_k, p.head_dim, p.causal != 0);
}
// Backward attention: five products (recompute S, dV, dP, dQ, dK) against the forward's two: 2.5×.
inline double attention_bwd_flops(const AttentionParams& p) { return 2.5 * attention_fwd_flops(p); }

// The fewest bytes the forward pass must move: Q, K, V read once, O written once, LSE written once.
inline double attention_fwd_min_bytes(const AttentionParams& p) {
  const double e = double(dtype_size(dtype_of(p))), out = double(dtype_size(output_dtype(p)));  // fp8 in, bf16 out
  return e * double(q_elems(p) + 2 * kv_elems(p)) + out * double(q_elems(p)) + 4.0 * double(lse_elems(p));
}

// Device memory an attention launch allocates beyond Q, K, V, O, and the LSE it writes:
//   stages 01–02 keep the N×N score matrix S (B·H·Nq·Nk elements in the input type) in DRAM,
//   from stage 03 on only the O(B·H·N) LSE remains.
inline std::size_t lse_extra_bytes(const AttentionParams& p) { return std::size_t(lse_elems(p)) * sizeof(float); }
inline std::size_t score_buffer_extra_bytes(const AttentionParams& p) {
  return std::size_t(p.batch * p.heads) * std::size_t(p.seq_q * p.seq_k) * dtype_size(dtype_of(p)) +
         lse_extra_bytes(p);
}

// The DRAM traffic of a forward pass through S: the least, plus S written by QKᵀ, read and rewritten
// by the softmax, and read again by PV: 4·|S|.
inline double score_buffer_traffic_bytes(const AttentionParams& p) {
  const double s = double(p.batch * p.heads) * double(p.seq_q) * double(p.seq_k) * double(dtype_size(dtype_of(p)));
  return attention_fwd_min_bytes(p) + 4.0 * s;
}

// The fewest bytes the backward pass must move: Q, K, V, O, dO and LSE read once, dQ, dK, dV written
// once (delta, an optional by-product, is not counted).
inline double attention_bwd_min_bytes(const AttentionParams& p) {
  const double e = double(dtype_size(dtype_of(p)));
  return e * double(4 * q_elems(p) + 4 * kv_elems(p)) + 4.0 * double(lse_elems(p));
}

// Device memory a backward launch allocates when the caller gives no delta buffer: delta, [B, H, Nq]
// fp32. The backward versions from v1 on allocate nothing else.
inline std::size_t delta_extra_bytes(const AttentionParams& p) { return lse_extra_bytes(p); }

// GEMM: M·N dot products of length K, one multiply and one add each.
inline double gemm_flops(int64_t m, int64_t n, int64_t k) { return 2.0 * double(m) * double(n) * double(k); }

// The fewest bytes a GEMM must move: A and B read once, C read (when beta ≠ 0) and written once.
inline double gemm_min_bytes(int64_t m, int64_t n, int64_t k, double in_bytes, double out_bytes,
                             bool reads_c) {
  return in_bytes * double(m * k + k * n) + out_bytes * double(m * n) * (reads_c ? 2.0 : 1.0);
}

}  // namespace fs
