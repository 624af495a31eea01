// The doctest main shared by every stage's tests. It turns skipped GPU test cases into exit code 77.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
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

bool only_selects(const char* only, const std::string& qualified) {
  if (!only || !*only) return true;
  const std::string list = only;
  for (size_t begin = 0; begin <= list.size();) {
    const size_t end = std::min(list.find(',', begin), list.size());
    const std::string item = list.substr(begin, end - begin);
    if (!item.empty() && qualified.compare(0, item.size(), item) == 0 &&
        (qualified.size() == item.size() || qualified[item.size()] == '/'))
      return true;
    begin = end + 1;
  }
  return false;
}

DeviceProps made_up_gpu(int cc, std::size_t smem_kib) {
  DeviceProps d;
  d.cc = cc;
  d.smem_per_block_optin = smem_kib * 1024;
  d.sms = 132;
  return d;
}

bool runs_here(const KernelDesc& kernel) {
  const char* only = std::getenv("FLASHSTAGES_ONLY");
  if (!only_selects(only, kernel.qualified())) {
    record_skip();
    MESSAGE("SKIPPED " << kernel.qualified() << ": not in FLASHSTAGES_ONLY=" << std::string(only));
    return false;
  }
  DeviceProps dev;
  if (current_device(&dev) != Status::Success) return false;
  const std::string why = unsupported_reason(kernel.info, dev);
  if (why.empty()) return true;
  record_skip();
  MESSAGE("SKIPPED " << kernel.qualified() << ": " << why);
  return false;
}

std::vector<const KernelDesc*> runnable_here(const std::vector<const KernelDesc*>& kernels) {
  std::vector<const KernelDesc*> here;
  for (const KernelDesc* k : kernels)
    if (runs_here(*k)) here.push_back(k);
  return here;
}

std::vector<const KernelDesc*> taking_head_dim(const std::vector<const KernelDesc*>& kernels, int64_t d) {
  std::vector<const KernelDesc*> out;
  for (const KernelDesc* k : kernels) {
    const fs_kernel_info& info = k->info;
    const bool listed = std::find(info.head_dims, info.head_dims + info.num_head_dims, d) !=
                        info.head_dims + info.num_head_dims;
    if (listed || (info.num_head_dims == 0 && d >= 1 && d <= info.max_head_dim)) out.push_back(k);
  }
  return out;
}

std::vector<int64_t> listed_head_dims(const std::vector<const KernelDesc*>& kernels) {
  std::vector<int64_t> out;
  for (const KernelDesc* k : kernels)
    out.insert(out.end(), k->info.head_dims, k->info.head_dims + k->info.num_head_dims);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Counts the test cases that started. CTest runs each case by name (--test-case=NAME); a name that
// the filter cannot match (a ';' splits it into two CTest entries) would run nothing and pass, so
// main() refuses a run in which no test case started.
struct StartedCases : doctest::IReporter {
  static inline int started = 0;
  explicit StartedCases(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { ++started; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("started_cases", 1, StartedCases);

}  // namespace fs::testing

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int failed = context.run();
  if (context.shouldExit() || failed) return failed;
  if (fs::testing::StartedCases::started == 0) {
    std::printf("FAILED: no test case matches the filters (a CTest name cut at a ';' selects nothing)\n");
    return 1;
  }
  if (fs::testing::g_skipped) {
    const char* why = fs::testing::missing_gpu();
    std::printf("SKIPPED: %d test case(s) did not run fully: %s\n", fs::testing::g_skipped,
                why ? why : "a kernel this GPU cannot run or FLASHSTAGES_ONLY left out (see the messages above)");
    return 77;  // CTest's SKIP_RETURN_CODE
  }
  return 0;
}
