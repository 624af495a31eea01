// Stage 03: its versions, in order, as the registry lists them.
#include "stages/03_online_softmax/versions.h"

namespace fs {

KernelList stage03_kernels() {
  static const KernelDesc* const versions[] = {&kOnlineSoftmaxV1};
  return kernel_list(versions);
}

}  // namespace fs
