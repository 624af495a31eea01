// Stage 06: the list of its versions, in order, as the registry shows them (each descriptor lives
// beside its launch, in vN.cu).
#include "stages/06_tensorcore_gemm/versions.h"

namespace fs {

KernelList stage06_kernels() {
  static const KernelDesc* const versions[] = {&kGemmV1, &kGemmV2,  &kGemmV3,  &kGemmV4,  &kGemmV5,
                                               &kGemmV6, &kGemmV7,  &kGemmV8,  &kGemmV9,  &kGemmV10,
                                               &kGemmV11, &kGemmV12, &kGemmV13, &kGemmV14, &kGemmV15, &kGemmV16};
  return kernel_list(versions);
}

}  // namespace fs
