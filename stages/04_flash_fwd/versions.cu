// Stage 04: the registry — its versions in ladder order. Each version's descriptor, launch and C
// entry are in its vN.cu.
#include "versions.h"

namespace fs {

KernelList stage04_kernels() {
  static const KernelDesc* const versions[] = {
      &kFlashFwdV1,  // mma.sync m16n8k16, warps over query rows, P in registers
      &kFlashFwdV2,  // + causal stage splitting
      &kFlashFwdV3,  // + K/V double-buffered with cp.async
      &kFlashFwdV4,  // + ldmatrix from XOR-swizzled tiles
      &kFlashFwdV5,  // v4's kernel at the tile shape timed fastest on this GPU
      &kFlashFwdV6,  // + split-KV where the grid underfills the GPU
  };
  return kernel_list(versions);
}

}  // namespace fs
