// Runs a GEMM version on seeded inputs and compares it with the fp64 reference (fs::ref::gemm): the
// check behind stage 06's executable and GPU tests.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "compare.h"
#include "gemm.h"

namespace fs {

struct GemmShape {
  int64_t m = 1, n = 1, k = 1;
  bool trans_a = false, trans_b = false;
  int32_t ab_dtype = FS_FP32, c_dtype = FS_FP32;
  float alpha = 1.0f, beta = 0.0f;
  int64_t pad_a = 0, pad_b = 0, pad_c = 0;  // leading dimension beyond the least one, in elements
  int64_t shift = 0;  // A, B and C start this many elements into their buffers (misaligns them)
  // Small integers (int8: the whole int8 range; otherwise [-2, 2]) instead of uniform [-1, 1]: every
  // product and sum is then exact, so the result must equal the reference rounded to C's type.
  bool integers = false;
};

std::string describe(const GemmShape& s);  // "M=17 N=1000 K=1 A^T fp16->fp32 alpha=1 beta=0 lda+3"

struct GemmCheck {
  Status status = Status::Success;
  ErrorStats c;                   // checked rows of C against the reference rounded to C's type
  bool outside_untouched = true;  // every byte of C's buffer outside the M×N result kept its value
  int64_t rows_checked = 0;
};

// The rule a result must meet: exact (no mismatch) for integer inputs, sgemm_tolerance(K) otherwise;
// always finite, always with C's padding untouched.
bool gemm_passed(const GemmShape& s, const GemmCheck& c);

// One problem: A, B (and C, when beta ≠ 0) drawn from `seed`, uploaded once, and the fp64 reference
// for `check_rows` evenly spaced rows of C (all rows when 0 or >= M; none, for timing only, when < 0).
// Buffers are exactly as long as the matrices span, and row padding holds NaN (0x7F bytes for
// integers): a kernel that reads past a row or past the end is caught by the check or by memcheck.
class GemmProblem {
 public:
  GemmProblem(const GemmShape& shape, uint64_t seed, int64_t check_rows = 0);
  ~GemmProblem();

  const GemmShape& shape() const { return shape_; }
  GemmParams params() const;  // pointers into this problem's device buffers
  // Restores C (poison when beta = 0, the drawn C otherwise), calls `launch` on the default stream,
  // waits, and compares.
  GemmCheck run(const std::function<Status(const GemmParams&)>& launch);
  GemmCheck run(const GemmKernel& kernel);
  // Restores C, calls the launcher with `bad` params, waits, and reports whether C kept every byte.
  bool untouched_after(const GemmKernel& kernel, const GemmParams& bad, Status* returned);
  // Restores C (for timing runs with beta ≠ 0 this keeps every run on the same inputs).
  void reset_c();

 private:
  struct Impl;
  GemmShape shape_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fs
