// The Google Benchmark main shared by every stage: it names the GPU in the JSON context and lets the
// stage register its benchmarks once the device is known.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>

#include "bench.h"
#include "device_check.h"
#include "device_info.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  std::string why;
  const auto dev = fs::query_device(0, &why);
  if (!dev) {
    std::printf("no CUDA GPU available (%s): no benchmarks run\n", why.c_str());
    return 0;
  }
  if (const std::string reason = fs::unsupported_device_reason(*dev); !reason.empty()) {
    std::printf("unsupported GPU: %s\n", reason.c_str());
    return 2;
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
  fs::bench::register_benchmarks(*dev);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
