// Stage 02: its versions, in order, as the registry lists them.
#include "stages/02_tiled/versions.h"

namespace fs {

KernelList stage02_kernels() {
  static const KernelDesc* const versions[] = {&kTiledV1};
  return kernel_list(versions);
}

}  // namespace fs
