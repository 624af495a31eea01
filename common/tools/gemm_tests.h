// Checks every GEMM stage's tests share (stages 06 and 07): a kernel against the fp64 reference on one
// case, bad inputs that must return their codes and write nothing, and the CUDA-error path. They use
// doctest's CHECK, so they report each failing case and carry on with the next.
#pragma once

#include <cstdint>
#include <functional>

#include "common/tools/gemm_check.h"
#include "common/tools/gpu_test.h"

namespace fs::testing {

struct Mnk {
  int64_t m, n, k;
};

// `g` with the sizes of `mnk` and the transposes of `transposes` (bit 1: A, bit 0: B).
GemmCase sized(GemmCase g, const Mnk& mnk, int transposes);

// A leading dimension for a stored row of `row` elements: a multiple of 16 elements and at least 16
// more than needed, so that the widest copy paths run and the row padding (NaN) is there to be misread.
int64_t padded_ld(int64_t row);

// Runs the kernel on the case (drawn from `seed`) and compares C with the fp64 reference in
// `check_rows` evenly spaced rows (0: all): the launch succeeds, C is finite, C's padding untouched,
// and C exact for integer inputs (and int8), within sgemm_tolerance(K) otherwise.
void check_gemm(const KernelDesc& kernel, const GemmCase& g, uint64_t seed, int64_t check_rows = 0);

// A bad input built from a valid case `ok` by `make_bad` returns `expected` and leaves C as it was.
void check_gemm_rejected(const KernelDesc& kernel, const GemmCase& ok, const std::function<void(GemmParams&)>& make_bad,
                         Status expected);

// Every bad input validation knows, each from `ok` (a case the kernel takes, its leading dimensions as
// the kernel wants them; 17×17×17 untransposed): null pointers, sizes that are not positive, that wrap
// 64 bits or exceed the GPU's memory, leading dimensions smaller than their rows, dtypes the kernel
// does not take, and C (and, but for int8, B) off its element alignment.
void check_gemm_rejects_bad_inputs(const KernelDesc& kernel, const GemmCase& ok);

// FS_ERR_CUDA: the launcher is called on the legacy default stream while another stream is being
// captured in global mode (an implicit dependency the runtime refuses); it must report it, not crash,
// and leave no sticky error behind.
void check_gemm_reports_cuda_error(const KernelDesc& kernel, const GemmCase& ok);

}  // namespace fs::testing
