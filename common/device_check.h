// The runtime architecture check: a clear message instead of "no kernel image is available".
#pragma once

#include <optional>
#include <string>

#include "device_info.h"

namespace fs {

// The oldest compute capability this build carries kernels for (FLASHSTAGES_MIN_CUDA_ARCH, set by
// CMake from CMAKE_CUDA_ARCHITECTURES).
int min_built_arch();

// Empty when the device can run this build's kernels, otherwise a sentence saying why not.
std::string unsupported_device_reason(const DeviceInfo& dev, int needed_cc = 0);

// Device 0 when there is one and this build has kernels for it; otherwise nullopt, and `why` says
// which: "no CUDA GPU available (<the runtime's answer>)" or "unsupported GPU: <reason>".
std::optional<DeviceInfo> usable_device(std::string* why);

}  // namespace fs
