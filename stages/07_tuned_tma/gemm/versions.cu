// Stage 07 gemm: the list of its versions, in order, as the registry shows them (the descriptors live
// beside their launches: vN.cu).
#include "stages/07_tuned_tma/gemm/versions.h"

namespace fs {

KernelList stage07_gemm_kernels() {
  static const KernelDesc* const versions[] = {&kGemmTmaV1, &kGemmTmaV2, &kGemmTmaV3, &kGemmTmaV4,
                                               &kGemmTmaV5, &kGemmTmaV6, &kGemmTmaV7, &kGemmTmaV8,
                                               &kGemmTmaV9, &kGemmTmaV10, &kGemmTmaV11, &kGemmTmaV12};
  return kernel_list(versions);
}

}  // namespace fs
