// The doctest main shared by every stage's tests. It turns skipped GPU test cases into exit code 77.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "common/lib/device.h"
#include "common/tools/device_info.h"
#include "common/tools/gpu_test.h"

namespace fs::testing {

namespace {
int g_skipped = 0;

bool env_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}
}  // namespace

const char* missing_gpu() {
  static const std::optional<std::string> why = []() -> std::optional<std::string> {
    std::string reason;
    if (query_device(0, &reason)) return std::nullopt;
    return reason;
  }();
  return why ? why->c_str() : nullptr;
}

bool gpu_required() { return env_set("FLASHSTAGES_REQUIRE_GPU"); }

bool sanitizer_sizes() { return env_set("FLASHSTAGES_SANITIZER"); }

void record_skip() { ++g_skipped; }

bool runs_here(const KernelDesc& kernel) {
  DeviceProps dev;
  if (current_device(&dev) != Status::Success) return false;
  const std::string why = unsupported_reason(kernel.info, dev);
  if (why.empty()) return true;
  record_skip();
  MESSAGE("SKIPPED " << kernel.qualified() << ": " << why);
  return false;
}

}  // namespace fs::testing

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int failed = context.run();
  if (context.shouldExit() || failed) return failed;
  if (fs::testing::g_skipped) {
    const char* why = fs::testing::missing_gpu();
    std::printf("SKIPPED: %d test case(s) did not run fully: %s\n", fs::testing::g_skipped,
                why ? why : "a kernel this GPU cannot run (see the messages above)");
    return 77;  // CTest's SKIP_RETURN_CODE
  }
  return 0;
}
