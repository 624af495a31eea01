// Stage 02 — tiled attention (S still in DRAM). Its version, as the registry lists it (fs_tiled_v1).
#pragma once

#include "common/lib/kernel.h"

namespace fs {

extern const KernelDesc kTiledV1;

}  // namespace fs
