// What a launcher needs to know of the GPU it is about to use, and the decision whether a kernel can
// run there. The decision is a pure function of the device's properties, so it is tested on the CPU
// with made-up devices (an sm_86 with 99 KiB of shared memory per block, say).
#pragma once

#include <cstddef>
#include <string>

#include "common/lib/flashstages.h"
#include "common/lib/status.h"

namespace fs {

struct DeviceProps {
  int device = 0;
  int cc = 0;                            // compute capability, major·10 + minor
  std::size_t smem_per_block_optin = 0;  // after cudaFuncSetAttribute(MaxDynamicSharedMemorySize)
  int sms = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_mem = 0;  // bytes of device memory: no tensor of a launch can be larger
};

// The current device's properties, read once per device and thread; CudaError without a device.
Status current_device(DeviceProps* props);

// Success when `kernel` runs on `dev`: its compute capability is one the kernel has machine code for
// (an exact set: sm_90a code runs on 9.0 alone) or at least its PTX's (ptx_arch, compiled by the driver
// at the first launch), and a block's shared memory fits. UnsupportedDevice otherwise.
Status device_supports(const fs_kernel_info& kernel, const DeviceProps& dev);
// The reason in words ("sm_86 is not among sm_90", "needs 165 KiB of shared memory per block, the
// GPU allows 99 KiB"), empty when it runs.
std::string unsupported_reason(const fs_kernel_info& kernel, const DeviceProps& dev);

// Both at once, for the current device: Success, UnsupportedDevice, or CudaError without a device.
// `tensor_bytes` is the largest tensor of the launch: larger than the device's memory, no pointer can
// really hold it (a size that only looks valid), and that is InvalidSize.
Status check_current_device(const fs_kernel_info& kernel, double tensor_bytes);

}  // namespace fs
