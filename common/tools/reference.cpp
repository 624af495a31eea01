#include "common/tools/reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fs::ref {

namespace {

// Row i of P = softmax(scale · q_i Kᵀ) over the visible keys; returns LSE_i.
double softmax_row(const double* qi, const double* k, int64_t i, int64_t nq, int64_t nk, int64_t d,
                   double scale, bool causal, std::vector<double>& p) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < nk; ++j) {
    if (!visible(i, j, nq, nk, causal)) {
      p[j] = -std::numeric_limits<double>::infinity();
      continue;
    }
    double s = 0.0;
    for (int64_t c = 0; c < d; ++c) s += qi[c] * k[j * d + c];
    p[j] = scale * s;
    m = std::max(m, p[j]);
  }
  double l = 0.0;
  for (int64_t j = 0; j < nk; ++j) l += std::exp(p[j] - m);
  const double lse = m + std::log(l);
  for (int64_t j = 0; j < nk; ++j) p[j] = std::exp(p[j] - lse);
  return lse;
}

}  // namespace

void attention_forward_head(const double* q, const double* k, const double* v, int64_t nq, int64_t nk,
                            int64_t d, double scale, bool causal, double* o, double* lse) {
  std::vector<double> p(nk);
  for (int64_t i = 0; i < nq; ++i) {
    lse[i] = softmax_row(q + i * d, k, i, nq, nk, d, scale, causal, p);
    for (int64_t c = 0; c < d; ++c) {
      double acc = 0.0;
      for (int64_t j = 0; j < nk; ++j) acc += p[j] * v[j * d + c];
      o[i * d + c] = acc;
    }
  }
}

void attention_backward_head(const double* q, const double* k, const double* v, const double* d_o,
                             int64_t nq, int64_t nk, int64_t d, double scale, bool causal, double* dq,
                             double* dk, double* dv, double* delta) {
  std::fill(dk, dk + nk * d, 0.0);
  std::fill(dv, dv + nk * d, 0.0);
  std::vector<double> p(nk), o(d);
  for (int64_t i = 0; i < nq; ++i) {
    softmax_row(q + i * d, k, i, nq, nk, d, scale, causal, p);
    const double* doi = d_o + i * d;
    delta[i] = 0.0;
    for (int64_t c = 0; c < d; ++c) {
      double acc = 0.0;
      for (int64_t j = 0; j < nk; ++j) acc += p[j] * v[j * d + c];
      o[c] = acc;
      delta[i] += doi[c] * acc;
    }
    std::fill(dq + i * d, dq + (i + 1) * d, 0.0);
    for (int64_t j = 0; j < nk; ++j) {
      if (p[j] == 0.0 && !visible(i, j, nq, nk, causal)) continue;
      double dp = 0.0;
      for (int64_t c = 0; c < d; ++c) dp += doi[c] * v[j * d + c];
      const double ds = p[j] * (dp - delta[i]);
      for (int64_t c = 0; c < d; ++c) {
        dq[i * d + c] += scale * ds * k[j * d + c];
        dk[j * d + c] += scale * ds * q[i * d + c];
        dv[j * d + c] += p[j] * doi[c];
      }
    }
  }
}

void attention_backward_group(const double* q, const double* k, const double* v, const double* d_o, int64_t group,
                              int64_t nq, int64_t nk, int64_t d, double scale, bool causal, double* dq, double* dk,
                              double* dv, double* delta) {
  std::fill(dk, dk + nk * d, 0.0);
  std::fill(dv, dv + nk * d, 0.0);
  std::vector<double> dk_h(nk * d), dv_h(nk * d);  // one query head's share
  for (int64_t h = 0; h < group; ++h) {
    attention_backward_head(q + h * nq * d, k, v, d_o + h * nq * d, nq, nk, d, scale, causal, dq + h * nq * d,
                            dk_h.data(), dv_h.data(), delta + h * nq);
    for (int64_t e = 0; e < nk * d; ++e) {
      dk[e] += dk_h[e];
      dv[e] += dv_h[e];
    }
  }
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double aip = trans_a ? a[p * lda + i] : a[i * lda + p];
        const double bpj = trans_b ? b[j * ldb + p] : b[p * ldb + j];
        acc += aip * bpj;
      }
      // beta = 0 must not read C: C may hold NaN poison, and 0 · NaN is NaN.
      c[i * ldc + j] = alpha * acc + (beta == 0.0 ? 0.0 : beta * c[i * ldc + j]);
    }
}

}  // namespace fs::ref
