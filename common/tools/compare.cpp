#include "common/tools/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fs {

void ErrorStats::add(double out, double ref) {
  ++count;
  if (!std::isfinite(out)) {
    ++nonfinite;
    ++mismatches;
    return;
  }
  const double err = std::fabs(out - ref);
  if (out != ref) ++mismatches;
  max_abs = std::max(max_abs, err);
  sq_err_ += err * err;
  sq_ref_ += ref * ref;
  rel_l2 = sq_ref_ > 0.0 ? std::sqrt(sq_err_ / sq_ref_) : std::sqrt(sq_err_);
}

void ErrorStats::merge(const ErrorStats& other) {
  count += other.count;
  nonfinite += other.nonfinite;
  mismatches += other.mismatches;
  max_abs = std::max(max_abs, other.max_abs);
  sq_err_ += other.sq_err_;
  sq_ref_ += other.sq_ref_;
  rel_l2 = sq_ref_ > 0.0 ? std::sqrt(sq_err_ / sq_ref_) : std::sqrt(sq_err_);
}

std::string ErrorStats::str() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "max_abs=%.3g rel_l2=%.3g%s", max_abs, rel_l2,
                nonfinite ? " NONFINITE" : "");
  std::string s = buf;
  if (nonfinite) s += "(" + std::to_string(nonfinite) + " of " + std::to_string(count) + ")";
  return s;
}

double ErrorStats::ref_l2() const { return std::sqrt(sq_ref_); }

Tolerance sgemm_tolerance(int64_t k) {
  // Each output is a K-term fp32 dot product of values in [-1, 1]. Rounding errors of random sign
  // grow like √K·2^-24·|partial sums|, and the partial sums grow like √K, so the error grows like
  // K·2^-24; a factor of 16 leaves room for unlucky orders while a wrong tile is still far above it.
  return {16.0 * static_cast<double>(std::max<int64_t>(k, 1)) * 0x1p-24, 1e-5};
}

}  // namespace fs
