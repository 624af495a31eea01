#include "common/lib/device.h"

#include <algorithm>

#include "common/lib/cuda_check.h"

namespace fs {

namespace {

// Machine code for the GPU's compute capability, or PTX of that capability or older for the driver to
// compile at the first launch.
bool cc_runs(const fs_kernel_info& k, int cc) {
  return std::find(k.archs, k.archs + k.num_archs, cc) != k.archs + k.num_archs || (k.ptx_arch > 0 && cc >= k.ptx_arch);
}

std::string arch_list(const fs_kernel_info& k) {
  std::string s;
  for (int i = 0; i < k.num_archs; ++i) s += (i ? ", sm_" : "sm_") + std::to_string(k.archs[i]);
  if (k.ptx_arch > 0)
    s += (s.empty() ? "" : "; ") + std::string("from its PTX, sm_") + std::to_string(k.ptx_arch) + " and newer";
  return s.empty() ? "no GPU (built for none)" : s;
}

}  // namespace

Status current_device(DeviceProps* props) {
  int device = 0;
  FS_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device));
  // A handful of devices per process at most: each thread keeps what it read.
  thread_local DeviceProps known[16];
  thread_local bool read[16] = {};
  if (device >= 0 && device < 16 && read[device]) {
    *props = known[device];
    return Status::Success;
  }
  cudaDeviceProp prop{};
  FS_RETURN_IF_CUDA_ERROR(cudaGetDeviceProperties(&prop, device));
  DeviceProps d;
  d.device = device;
  d.cc = prop.major * 10 + prop.minor;
  d.smem_per_block_optin = prop.sharedMemPerBlockOptin;
  d.sms = prop.multiProcessorCount;
  d.l2_bytes = std::size_t(prop.l2CacheSize);
  d.global_mem = prop.totalGlobalMem;
  if (device >= 0 && device < 16) known[device] = d, read[device] = true;
  *props = d;
  return Status::Success;
}

Status device_supports(const fs_kernel_info& kernel, const DeviceProps& dev) {
  if (!cc_runs(kernel, dev.cc) || kernel.smem_bytes > dev.smem_per_block_optin) return Status::UnsupportedDevice;
  return Status::Success;
}

std::string unsupported_reason(const fs_kernel_info& kernel, const DeviceProps& dev) {
  if (!cc_runs(kernel, dev.cc))
    return "sm_" + std::to_string(dev.cc) + " is not among the GPUs this build runs it on (" + arch_list(kernel) + ")";
  if (kernel.smem_bytes > dev.smem_per_block_optin)
    return "a block needs " + std::to_string(kernel.smem_bytes / 1024) + " KiB of shared memory, the GPU allows " +
           std::to_string(dev.smem_per_block_optin / 1024) + " KiB";
  return {};
}

Status check_current_device(const fs_kernel_info& kernel, double tensor_bytes) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  FS_RETURN_IF_ERROR(device_supports(kernel, dev));
  if (tensor_bytes > double(dev.global_mem)) return Status::InvalidSize;
  return Status::Success;
}

}  // namespace fs
