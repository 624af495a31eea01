// Stage 06: the list of its versions, in order, as the registry shows them (the descriptors live beside
// their launches: simt.cu, wmma.cu, mma.cu, mma_int8.cu, v11_autotune.cu, whole_tiles.cu,
// shifted_edges_int8.cu).
#include "gemm.h"

namespace fs {

KernelList stage06_kernels() {
  static const KernelDesc* const versions[] = {&kGemmV1, &kGemmV2,  &kGemmV3,  &kGemmV4,  &kGemmV5,
                                               &kGemmV6, &kGemmV7,  &kGemmV8,  &kGemmV9,  &kGemmV10,
                                               &kGemmV11, &kGemmV12, &kGemmV13, &kGemmV14, &kGemmV15, &kGemmV16};
  return kernel_list(versions);
}

}  // namespace fs
