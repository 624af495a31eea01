#include "common/tools/device_info.h"

#include <cuda_runtime.h>

#include <cstdio>

namespace fs {

namespace {

int attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  return cudaDeviceGetAttribute(&value, attr, device) == cudaSuccess ? value : 0;
}

struct PerSmRates {
  int fp32_fma;      // FFMA lanes per SM per clock
  int fp16_flops;    // dense fp16 tensor FLOPs per SM per clock
  int int8_ops;      // dense int8 tensor ops per SM per clock
};

// Per-SM throughput by architecture, from NVIDIA's architecture whitepapers.
PerSmRates rates_for(int cc) {
  if (cc >= 90) return {128, 4096, 8192};  // Hopper: 4th-gen tensor cores
  if (cc == 89) return {128, 1024, 2048};  // Ada (GeForce figures; fp32 accumulate halves some SKUs)
  if (cc == 86 || cc == 87) return {128, 1024, 2048};
  if (cc >= 80) return {64, 2048, 4096};   // A100
  return {64, 1024, 2048};                 // Turing/Volta and older: rough
}

}  // namespace

std::string cuda_version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string DeviceInfo::summary() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s (sm_%d%d, %d SMs, %d MHz, %.0f GiB, L2 %.0f MiB, smem/block %zu KiB opt-in)\n"
                "CUDA runtime %s, driver %s; peaks: FP32 %.1f TFLOPS, FP16 tensor %.0f TFLOPS, "
                "INT8 tensor %.0f TOPS, DRAM %.0f GB/s",
                name.c_str(), cc_major, cc_minor, sms, sm_clock_mhz, global_mem / double(1 << 30),
                l2_bytes / double(1 << 20), smem_per_block_optin / 1024,
                cuda_version_string(runtime_version).c_str(), cuda_version_string(driver_version).c_str(),
                peak_fp32_tflops, peak_fp16_tflops, peak_int8_tops, peak_dram_gbps);
  return buf;
}

std::optional<DeviceInfo> query_device(int device, std::string* why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    // Without a driver the runtime answers "driver version is insufficient", which would send a
    // newcomer to upgrade a driver they do not have: say what is missing instead.
    int driver = 0, runtime = 0;
    cudaDriverGetVersion(&driver);
    cudaRuntimeGetVersion(&runtime);
    if (why) {
      if (driver == 0)
        *why = "no NVIDIA GPU or driver was found";
      else if (err == cudaErrorInsufficientDriver)
        *why = "the NVIDIA driver supports CUDA " + cuda_version_string(driver) + ", older than this build's CUDA " +
               cuda_version_string(runtime) + ": update the driver or build with an older CUDA Toolkit";
      else
        *why = std::string("no usable NVIDIA GPU was found (") +
               (err != cudaSuccess ? cudaGetErrorString(err) : "no CUDA device") + ")";
    }
    cudaGetLastError();  // not sticky: clear it so later calls start clean
    return std::nullopt;
  }
  if (count <= device) {
    if (why) *why = "there is no CUDA device " + std::to_string(device) + " (" + std::to_string(count) + " found)";
    return std::nullopt;
  }
  cudaDeviceProp prop{};
  if ((err = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) {
    if (why) *why = cudaGetErrorString(err);
    return std::nullopt;
  }
  DeviceInfo d;
  d.device = device;
  d.name = prop.name;
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sms = prop.multiProcessorCount;
  d.smem_per_block = prop.sharedMemPerBlock;
  d.smem_per_block_optin = prop.sharedMemPerBlockOptin;
  d.smem_per_sm = prop.sharedMemPerMultiprocessor;
  d.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
  d.global_mem = prop.totalGlobalMem;
  d.sm_clock_mhz = attribute(cudaDevAttrClockRate, device) / 1000;
  d.mem_clock_mhz = attribute(cudaDevAttrMemoryClockRate, device) / 1000;
  d.mem_bus_bits = attribute(cudaDevAttrGlobalMemoryBusWidth, device);
  cudaRuntimeGetVersion(&d.runtime_version);
  cudaDriverGetVersion(&d.driver_version);
  const int cc = d.cc();
  const PerSmRates r = rates_for(cc);
  const double sm_ghz_total = d.sms * d.sm_clock_mhz * 1e-3;  // SMs × GHz
  d.peak_fp32_tflops = sm_ghz_total * r.fp32_fma * 2 * 1e-3;
  d.peak_fp16_tflops = sm_ghz_total * r.fp16_flops * 1e-3;
  d.peak_int8_tops = sm_ghz_total * r.int8_ops * 1e-3;
  d.peak_fp8_tflops = cc >= 89 ? d.peak_int8_tops : 0.0;  // fp8 tensor cores: Ada and Hopper on, at int8's rate
  d.peak_dram_gbps = 2.0 * d.mem_clock_mhz * 1e6 * (d.mem_bus_bits / 8.0) * 1e-9;
  return d;
}

DeviceProps props_of(const DeviceInfo& dev) {
  DeviceProps p;
  p.device = dev.device;
  p.cc = dev.cc();
  p.smem_per_block_optin = dev.smem_per_block_optin;
  p.sms = dev.sms;
  p.l2_bytes = dev.l2_bytes;
  return p;
}

}  // namespace fs
