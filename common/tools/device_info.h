// What the current GPU is and can do, read once from the runtime. Peak figures are datasheet-style
// products (units per SM × SMs × the reported SM clock); they are the "% of peak" denominators.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "common/lib/device.h"

namespace fs {

struct DeviceInfo {
  int device = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sms = 0;
  std::size_t smem_per_block = 0;        // default limit without opt-in
  std::size_t smem_per_block_optin = 0;  // after cudaFuncSetAttribute(MaxDynamicSharedMemorySize)
  std::size_t smem_per_sm = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_mem = 0;
  int sm_clock_mhz = 0;   // maximum (boost) SM clock the runtime reports
  int mem_clock_mhz = 0;
  int mem_bus_bits = 0;
  int runtime_version = 0, driver_version = 0;  // e.g. 13000
  double peak_fp32_tflops = 0;   // FFMA
  double peak_fp16_tflops = 0;   // dense tensor cores, fp16/bf16 in, fp32 accumulate
  double peak_int8_tops = 0;     // dense tensor cores, int8
  double peak_fp8_tflops = 0;    // dense tensor cores, fp8 (e4m3/e5m2) in: the int8 rate where there is one (sm_89 on)
  double peak_dram_gbps = 0;     // 2 (DDR) × memory clock × bus width

  int cc() const { return cc_major * 10 + cc_minor; }
  std::string cc_string() const { return std::to_string(cc_major) + "." + std::to_string(cc_minor); }
  std::string summary() const;
};

// Without a usable device: nullopt, and `why` (if given) says so plainly: "no NVIDIA GPU or driver was
// found (the CUDA runtime says: ...)".
std::optional<DeviceInfo> query_device(int device = 0, std::string* why = nullptr);

// The properties the library's device check reads (common/lib/device.h), from a DeviceInfo.
DeviceProps props_of(const DeviceInfo& dev);

std::string cuda_version_string(int version);  // 13000 -> "13.0"

}  // namespace fs
