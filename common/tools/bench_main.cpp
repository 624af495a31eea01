// The Google Benchmark main shared by every stage: it names the GPU in the JSON context and lets the
// stage register its benchmarks once the device is known. Without a GPU it follows the tests' rule:
// it says so and exits 77 (skipped), or 1 when FLASHSTAGES_REQUIRE_GPU=1.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/tools/bench.h"
#include "common/tools/device_info.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  std::string why;
  const auto dev = fs::query_device(0, &why);
  if (!dev) {
    const char* required = std::getenv("FLASHSTAGES_REQUIRE_GPU");
    if (required && *required && std::strcmp(required, "0") != 0) {
      std::fprintf(stderr, "FLASHSTAGES_REQUIRE_GPU=1 but %s: no benchmarks run\n", why.c_str());
      return 1;
    }
    std::printf("SKIPPED: %s: no benchmarks run, no JSON written\n", why.c_str());
    return 77;
  }
  benchmark::AddCustomContext("gpu_name", dev->name);
  benchmark::AddCustomContext("compute_capability", dev->cc_string());
  benchmark::AddCustomContext("num_sms", std::to_string(dev->sms));
  benchmark::AddCustomContext("sm_clock_mhz", std::to_string(dev->sm_clock_mhz));
  benchmark::AddCustomContext("mem_clock_mhz", std::to_string(dev->mem_clock_mhz));
  benchmark::AddCustomContext("cuda_runtime", fs::cuda_version_string(dev->runtime_version));
  benchmark::AddCustomContext("cuda_driver", fs::cuda_version_string(dev->driver_version));
  benchmark::AddCustomContext("peak_fp32_tflops", std::to_string(dev->peak_fp32_tflops));
  benchmark::AddCustomContext("peak_fp16_tflops", std::to_string(dev->peak_fp16_tflops));
  benchmark::AddCustomContext("peak_int8_tops", std::to_string(dev->peak_int8_tops));
  benchmark::AddCustomContext("peak_dram_gbps", std::to_string(dev->peak_dram_gbps));
  fs::bench::register_benchmarks(*dev);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
