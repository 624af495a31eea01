// GPU test cases: without a GPU they are reported as skipped (exit code 77, which CTest shows as
// "Skipped"), never as passed; with FLASHSTAGES_REQUIRE_GPU=1 a missing GPU fails them.
//
//   FS_GPU_TEST_CASE("stage01 matches fp64 at odd sizes") {
//     FS_SKIP_WITHOUT_GPU();
//     ...
//   }
#pragma once

#include <doctest/doctest.h>

#include <string>

namespace fs::testing {

// Null when a usable GPU is present, otherwise why not (the runtime's answer).
const char* missing_gpu();
bool gpu_required();  // FLASHSTAGES_REQUIRE_GPU=1
void record_skip();

}  // namespace fs::testing

#define FS_GPU_TEST_CASE(name) TEST_CASE(name * doctest::test_suite("gpu"))
#define FS_CPU_TEST_CASE(name) TEST_CASE(name * doctest::test_suite("cpu"))

#define FS_SKIP_WITHOUT_GPU()                                                                 \
  do {                                                                                        \
    if (const char* fs_why_ = ::fs::testing::missing_gpu()) {                                 \
      if (::fs::testing::gpu_required())                                                      \
        FAIL("FLASHSTAGES_REQUIRE_GPU=1 but no usable CUDA GPU: " << std::string(fs_why_));               \
      ::fs::testing::record_skip();                                                           \
      MESSAGE("SKIPPED (no CUDA GPU: " << std::string(fs_why_) << ")");                                   \
      return;                                                                                 \
    }                                                                                         \
  } while (0)
