// Stage 03 — fused attention with an online softmax. Its version, as the registry lists it
// (fs_online_softmax_v1 in C).
#pragma once

#include "common/lib/kernel.h"

namespace fs {

extern const KernelDesc kOnlineSoftmaxV1;

}  // namespace fs
