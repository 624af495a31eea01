// GPU test cases: without a GPU they are reported as skipped (exit code 77, which CTest shows as
// "Skipped"), never as passed; with FLASHSTAGES_REQUIRE_GPU=1 a missing GPU fails them. A kernel the
// GPU at hand cannot run (FS_ERR_UNSUPPORTED_DEVICE: no code for its architecture, too little shared
// memory) is skipped the same way, with the reason, and so is a kernel that FLASHSTAGES_ONLY leaves
// out (a comma-separated list of versions, `stage05/v4,stage07/gemm`: a quick check of the version
// at hand on a GPU; the cases still run the baselines they compare against).
//
//   FS_GPU_TEST_CASE("stage01 matches fp64 at odd sizes") {
//     FS_SKIP_WITHOUT_GPU();
//     for (const KernelDesc* k : kernels) {
//       if (!testing::runs_here(*k)) continue;
//       ...
//     }
//   }
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/lib/device.h"
#include "common/lib/kernel.h"

namespace fs::testing {

// Null when a usable GPU is present, otherwise why not (the runtime's answer).
const char* missing_gpu();
bool gpu_required();  // FLASHSTAGES_REQUIRE_GPU=1
void record_skip();

// Whether `qualified` ("stage05/v4") is one of the comma-separated `only` or lies under one of them
// ("stage07/gemm" takes "stage07/gemm/v2"); an empty or null list takes every kernel.
bool only_selects(const char* only, const std::string& qualified);

// Whether the current GPU can run `kernel` and FLASHSTAGES_ONLY selects it; if not, the case reports
// it skipped, with the reason.
bool runs_here(const KernelDesc& kernel);
// Of `kernels`, those runs_here takes (each one it leaves out reported skipped), in their order: the
// cases over many shapes build one problem per shape and check each of these on it.
std::vector<const KernelDesc*> runnable_here(const std::vector<const KernelDesc*>& kernels);
// Of `kernels`, those that take head_dim d: in their list, or up to their bound where they list none.
std::vector<const KernelDesc*> taking_head_dim(const std::vector<const KernelDesc*>& kernels, int64_t d);
// Every head_dim in one of the kernels' lists, in increasing order.
std::vector<int64_t> listed_head_dims(const std::vector<const KernelDesc*>& kernels);

// FLASHSTAGES_SANITIZER=1 (set by scripts/gpu_check.sh around compute-sanitizer): the tests pick
// their smaller sizes, which still cover every code path (several tiles, tails in every direction)
// but let racecheck and initcheck, which are slow per access, finish in minutes.
bool sanitizer_sizes();
// A GPU that is not there, for the CPU cases of the device check (device_supports): compute capability
// `cc`, `smem_kib` KiB of shared memory per block, 132 SMs.
DeviceProps made_up_gpu(int cc, std::size_t smem_kib);

// `full` normally, `small` under the sanitizer.
inline int64_t size_for_run(int64_t full, int64_t small) { return sanitizer_sizes() ? small : full; }
// Every one of `all` normally, `one` of them alone under the sanitizer (a head_dim, a dtype: each choice
// a case loops over multiplies its time under racecheck).
template <class T>
std::vector<T> choices_for_run(const std::vector<T>& all, T one) {
  return sanitizer_sizes() ? std::vector<T>{one} : all;
}

}  // namespace fs::testing

#define FS_GPU_TEST_CASE(name) TEST_CASE(name * doctest::test_suite("gpu"))
#define FS_CPU_TEST_CASE(name) TEST_CASE(name * doctest::test_suite("cpu"))

#define FS_SKIP_WITHOUT_GPU()                                                                 \
  do {                                                                                        \
    if (const char* fs_why_ = ::fs::testing::missing_gpu()) {                                 \
      if (::fs::testing::gpu_required())                                                      \
        FAIL("FLASHSTAGES_REQUIRE_GPU=1 but no usable CUDA GPU: " << std::string(fs_why_));   \
      ::fs::testing::record_skip();                                                           \
      MESSAGE("SKIPPED (no CUDA GPU: " << std::string(fs_why_) << ")");                       \
      return;                                                                                 \
    }                                                                                         \
  } while (0)
