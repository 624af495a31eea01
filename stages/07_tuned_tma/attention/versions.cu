// Stage 07 attention: the registry — its versions in order (each one's descriptor and C entry are in
// its vN.cu).
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

KernelList stage07_attention_kernels() {
  static const KernelDesc* const versions[] = {
      &kFlashTmaV1,
      &kFlashTmaV2,
      &kFlashTmaV3,
      &kFlashTmaV4,
      &kFlashTmaV5,
      &kFlashTmaV6,
      &kFlashTmaV7,
      &kFlashTmaV8,
      &kFlashTmaV9,
      &kFlashTmaV10,
      &kFlashTmaV11,
  };
  return kernel_list(versions);
}

}  // namespace fs
