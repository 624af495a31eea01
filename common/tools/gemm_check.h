// Runs a GEMM kernel on seeded inputs and compares it with the fp64 reference (fs::ref::gemm): the
// check behind the GEMM stages' executables and GPU tests.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/lib/kernel.h"
#include "common/tools/compare.h"

namespace fs {

// One test problem: its shape as the C params hold it (pointers left null; a leading dimension of 0
// means the tight one, the stored row's length), and how its buffers are made.
struct GemmCase {
  GemmParams shape{};
  int64_t shift = 0;  // A, B and C start this many elements into their buffers (misaligns them)
  // Small integers (int8: the whole int8 range; otherwise [-2, 2]) instead of uniform [-1, 1]: every
  // product and sum is then exact, so the result must equal the reference rounded to C's type.
  bool integers = false;
};

// C = alpha·op(A)·op(B) + beta·C of the given sizes and types, tight leading dimensions.
GemmCase gemm_case(int64_t m, int64_t n, int64_t k, DType ab, DType c, bool trans_a = false, bool trans_b = false);

std::string describe(const GemmCase& c);  // describe(shape) plus the leading dimensions, shift, inputs

struct GemmCheck {
  Status status = Status::Success;
  ErrorStats c;                   // checked rows of C against the reference rounded to C's type
  bool outside_untouched = true;  // every byte of C's buffer outside the M×N result kept its value
  int64_t rows_checked = 0;
};

// The rule a result must meet: exact (no mismatch) for integer inputs, sgemm_tolerance(K) otherwise;
// always finite, always with C's padding untouched.
bool gemm_passed(const GemmCase& c, const GemmCheck& check);

// One problem: A, B (and C, when beta ≠ 0) drawn from `seed`, uploaded once, and the fp64 reference
// for `check_rows` evenly spaced rows of C (all rows when 0 or >= M; none, for timing only, when < 0).
// Buffers are exactly as long as the matrices span, and row padding holds NaN (0x7F bytes for
// integers): a kernel that reads past a row or past the end is caught by the check or by memcheck.
class GemmFixture {
 public:
  GemmFixture(const GemmCase& c, uint64_t seed, int64_t check_rows = 0);
  ~GemmFixture();

  const GemmCase& gemm_case() const { return case_; }
  GemmParams params() const;  // the shape, pointing into this fixture's device buffers
  // Restores C (poison when beta = 0, the drawn C otherwise).
  void reset_c();
  // Downloads C (after the caller has synchronized) and compares it.
  GemmCheck compare() const;
  // Restores C, calls `launch` on the default stream, waits, and compares.
  GemmCheck run(const std::function<Status(const GemmParams&)>& launch);
  GemmCheck run(const KernelDesc& kernel);
  // Restores C, calls the launcher with `bad` params, waits, and reports whether C kept every byte.
  bool untouched_after(const KernelDesc& kernel, const GemmParams& bad, Status* returned);

 private:
  struct Impl;
  GemmCase case_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fs
