// Stage 01: its versions, in order, as the registry lists them.
#include "stages/01_naive/versions.h"

namespace fs {

KernelList stage01_kernels() {
  static const KernelDesc* const versions[] = {&kNaiveV1};
  return kernel_list(versions);
}

}  // namespace fs
