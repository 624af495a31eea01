// The doctest main shared by every stage's tests. It turns skipped GPU test cases into exit code 77.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "device_check.h"
#include "device_info.h"
#include "gpu_test.h"

namespace fs::testing {

namespace {
int g_skipped = 0;
}

const char* missing_gpu() {
  static const std::optional<std::string> why = []() -> std::optional<std::string> {
    std::string reason;
    if (usable_device(&reason)) return std::nullopt;
    return reason;
  }();
  return why ? why->c_str() : nullptr;
}

bool gpu_required() {
  const char* v = std::getenv("FLASHSTAGES_REQUIRE_GPU");
  return v && std::strcmp(v, "0") != 0 && *v;
}

void record_skip() { ++g_skipped; }

}  // namespace fs::testing

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int failed = context.run();
  if (context.shouldExit() || failed) return failed;
  if (fs::testing::g_skipped) {
    std::printf("SKIPPED: %d GPU test case(s) did not run: %s\n", fs::testing::g_skipped,
                fs::testing::missing_gpu());
    return 77;  // CTest's SKIP_RETURN_CODE
  }
  return 0;
}
