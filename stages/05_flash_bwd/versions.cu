// Stage 05: the list of its versions, in order, as the registry shows them (each descriptor lives
// beside its launch, in vN.cu).
#include "stages/05_flash_bwd/versions.h"

namespace fs {

KernelList stage05_kernels() {
  static const KernelDesc* const versions[] = {&kFlashBwdV0, &kFlashBwdV1, &kFlashBwdV2, &kFlashBwdV3,
                                               &kFlashBwdV4, &kFlashBwdV5, &kFlashBwdV6, &kFlashBwdV7,
                                               &kFlashBwdV8, &kFlashBwdV9, &kFlashBwdV10};
  return kernel_list(versions);
}

}  // namespace fs
