// Comparing a kernel's output with an fp64 reference, and the tolerances, named per dtype in one place.
#pragma once

#include <cstdint>
#include <string>

#include "common/lib/dtype.h"

namespace fs {

struct ErrorStats {
  double max_abs = 0.0;     // max |out - ref|
  double rel_l2 = 0.0;      // ‖out - ref‖₂ / ‖ref‖₂
  int64_t nonfinite = 0;    // NaN or Inf in out: unwritten (poisoned) or broken elements
  int64_t mismatches = 0;   // out != ref exactly (meaningful for exact checks)
  int64_t count = 0;

  void add(double out, double ref);  // accumulate one element
  void merge(const ErrorStats& other);
  std::string str() const;           // "max_abs=1.2e-06 rel_l2=3.4e-07"
  double ref_l2() const;             // ‖ref‖₂ of the elements added so far
 private:
  double sq_err_ = 0.0, sq_ref_ = 0.0;
};

struct Tolerance {
  double max_abs;
  double rel_l2;
};

// Attention output O (|O| <= max|V| = 1 on the tests' inputs) against fp64. fp32 kernels accumulate in
// fp32; fp16/bf16 kernels are further held to the naive-stage rule below.
constexpr Tolerance kAttentionTolerance[] = {
    /* fp32 */ {1e-4, 2e-5},
    /* fp16 */ {4e-3, 4e-3},
    /* bf16 */ {3e-2, 3e-2},
};
// LSE (always fp32). For fp16/bf16 the scores are rounded before the softmax in the naive stage.
constexpr Tolerance kLseTolerance[] = {
    /* fp32 */ {1e-4, 1e-5},
    /* fp16 */ {4e-3, 2e-3},
    /* bf16 */ {3e-2, 1e-2},
};
// fp8 (e4m3) inputs, O in bf16 (stage 07 attention v9), against fp64 on the values the inputs stand for
// (descale × stored: the inputs' own rounding is the caller's quantization, not the kernel's error). There is
// no fp8 naive stage to hold them to: the kernel's own rounding is P's, to e4m3 (3 mantissa bits, a relative
// error of up to 2^-4 per probability, about 3.6% in rms) before P·V, so O's relative error is about that
// size on rows of many keys (measured 2.6% at N = 4096) and O's own rounding to bf16 on rows of one. LSE
// comes from fp32 scores and sums, but fp8 wgmma keeps fewer bits of its fp32 sums than fp16 wgmma does (about
// 14, DeepSeek-V3's measurement on the H800): measured up to 1.6e-4 relative (N = 1) and 9.3e-3 absolute
// (scale 2, LSE near 100) on the H100, against fp32's 1e-5.
constexpr Tolerance kFp8AttentionTolerance = {6e-2, 5e-2};
constexpr Tolerance kFp8LseTolerance = {3e-2, 1e-3};
inline Tolerance attention_tolerance(DType t) {
  return t == DType::FP8_E4M3 ? kFp8AttentionTolerance : kAttentionTolerance[static_cast<int>(t)];
}
inline Tolerance lse_tolerance(DType t) {
  return t == DType::FP8_E4M3 ? kFp8LseTolerance : kLseTolerance[static_cast<int>(t)];
}

// Attention backward: dQ, dK, dV (in the input type) and delta (fp32, from O rounded to the input type)
// against fp64, on the tests' inputs (uniform [-1, 1]). Set before any GPU run from a NumPy model of
// the naive backward's arithmetic (stage05/v0: P and dS rounded to the input type, every sum in fp32)
// over the tests' shapes and scales, which reached max_abs about 2.4e-5 / 4.6e-3 / 3.5e-2 and rel_l2
// about 4e-6 / 5e-4 / 5e-3 (fp32 / fp16 / bf16): these leave 3-4× room; the GPU tests print what the
// kernels reach. fp16/bf16 kernels are further held to the naive-stage rule below.
constexpr Tolerance kBackwardTolerance[] = {
    /* fp32 */ {1e-4, 2e-5},
    /* fp16 */ {1.5e-2, 2e-3},
    /* bf16 */ {1.2e-1, 1.5e-2},
};
inline Tolerance backward_tolerance(DType t) { return kBackwardTolerance[static_cast<int>(t)]; }

// fp32 GEMM against fp64: K products summed in fp32, so the bound grows with K (√K for random signs).
Tolerance sgemm_tolerance(int64_t k);

// The FlashAttention rule for low precision: a kernel's max error against fp64 may be at most
// kNaiveErrorFactor × the error of the naive stage run in the same dtype on the same inputs
// (plus a floor for the case where the naive stage happens to be exact).
constexpr double kNaiveErrorFactor = 2.0;
constexpr double kNaiveErrorFloor = 1e-5;

inline bool within(const ErrorStats& e, const Tolerance& t) {
  return e.nonfinite == 0 && e.max_abs <= t.max_abs && e.rel_l2 <= t.rel_l2;
}
// A gradient: as within(), but the relative error counts only where the reference is not zero up to
// rounding (‖ref‖₂ > max_abs). With one visible key per row (N = 1) dS = P ∘ (dP - delta) is exactly
// zero, so dQ and dK are too, and their fp64 reference is rounding noise of 1e-17: any kernel's
// relative error to it is huge while its absolute error is 1e-7.
inline bool within_gradient(const ErrorStats& e, const Tolerance& t) {
  return e.nonfinite == 0 && e.max_abs <= t.max_abs && (e.ref_l2() <= t.max_abs || e.rel_l2 <= t.rel_l2);
}
inline bool within_naive_budget(const ErrorStats& kernel, const ErrorStats& naive) {
  return kernel.nonfinite == 0 && kernel.max_abs <= kNaiveErrorFactor * naive.max_abs + kNaiveErrorFloor;
}

}  // namespace fs
