// fp64 CPU references: attention forward (O, LSE), attention backward (dQ, dK, dV, delta), GEMM.
// Slow on purpose: plain loops in double, written to be read against the equations in docs/.
#pragma once

#include <cstdint>
#include <vector>

namespace fs::ref {

// Is key j visible to query i? Causal masks align to the bottom-right corner, as FlashAttention's do:
// query i sees keys j <= i + (Nk - Nq).
inline bool visible(int64_t i, int64_t j, int64_t nq, int64_t nk, bool causal) {
  return !causal || j <= i + (nk - nq);
}

// One head. q [nq, d], k and v [nk, d], o [nq, d], lse [nq], all row-major.
//   S = scale · Q Kᵀ (masked entries are -inf),  LSE_i = log Σ_j exp(S_ij),
//   P_ij = exp(S_ij - LSE_i),  O = P V.
void attention_forward_head(const double* q, const double* k, const double* v, int64_t nq, int64_t nk,
                            int64_t d, double scale, bool causal, double* o, double* lse);

// One head of the backward pass, given dO:
//   delta_i = Σ_c dO_ic O_ic,  dP = dO Vᵀ,  dS_ij = P_ij (dP_ij - delta_i),
//   dQ = scale · dS K,  dK = scale · dSᵀ Q,  dV = Pᵀ dO.
void attention_backward_head(const double* q, const double* k, const double* v, const double* d_o,
                             int64_t nq, int64_t nk, int64_t d, double scale, bool causal, double* dq,
                             double* dk, double* dv, double* delta);

// One K/V head and the G query heads that share it (grouped-query attention): q, d_o, dq [G, nq, d],
// delta [G, nq], k, v, dk, dv [nk, d]. Each query head's dQ and delta are its own; dK and dV are the sums
// of every head's dK and dV over the group (the K/V head reaches the loss through each of them).
void attention_backward_group(const double* q, const double* k, const double* v, const double* d_o, int64_t group,
                              int64_t nq, int64_t nk, int64_t d, double scale, bool causal, double* dq, double* dk,
                              double* dv, double* delta);

// C = alpha · op(A) · op(B) + beta · C, row-major. op(A) is M×K: A is stored M×K (lda ≥ K), or K×M
// when trans_a (lda ≥ M). op(B) is K×N: B is stored K×N (ldb ≥ N), or N×K when trans_b (ldb ≥ K).
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

}  // namespace fs::ref
