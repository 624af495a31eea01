#include "device_check.h"

#ifndef FLASHSTAGES_MIN_CUDA_ARCH
#error "CMake defines FLASHSTAGES_MIN_CUDA_ARCH from CMAKE_CUDA_ARCHITECTURES"
#endif

namespace fs {

int min_built_arch() { return FLASHSTAGES_MIN_CUDA_ARCH; }

std::string unsupported_device_reason(const DeviceInfo& dev, int needed_cc) {
  const int need = needed_cc > min_built_arch() ? needed_cc : min_built_arch();
  if (dev.cc() >= need) return {};
  return dev.name + " is sm_" + std::to_string(dev.cc()) + ", but this needs sm_" + std::to_string(need) +
         " or newer (rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(dev.cc()) +
         " if the kernels allow it)";
}

std::optional<DeviceInfo> usable_device(std::string* why) {
  std::string reason;
  auto dev = query_device(0, &reason);
  if (!dev) {
    *why = "no CUDA GPU available (" + reason + ")";
    return std::nullopt;
  }
  if (reason = unsupported_device_reason(*dev); !reason.empty()) {
    *why = "unsupported GPU: " + reason;
    return std::nullopt;
  }
  return dev;
}

}  // namespace fs
