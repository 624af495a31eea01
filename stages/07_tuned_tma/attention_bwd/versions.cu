// Stage 07 attention backward: the registry — its versions in order (each one's descriptor and C entry
// are in its vN.cu).
#include "stages/07_tuned_tma/attention_bwd/versions.h"

namespace fs {

KernelList stage07_attention_bwd_kernels() {
  static const KernelDesc* const versions[] = {
      &kFlashBwdTmaV1,
      &kFlashBwdTmaV2,
      &kFlashBwdTmaV3,
      &kFlashBwdTmaV4,
      &kFlashBwdTmaV5,
      &kFlashBwdTmaV6,
      &kFlashBwdTmaV7,
      &kFlashBwdTmaV8,
      &kFlashBwdTmaV9,
      &kFlashBwdTmaV10,
      &kFlashBwdTmaV11,
      &kFlashBwdTmaV12,
  };
  return kernel_list(versions);
}

}  // namespace fs
