// Stage 01 — naive attention. Its version, as the registry lists it (fs_naive_v1 in C).
#pragma once

#include "common/lib/kernel.h"

namespace fs {

extern const KernelDesc kNaiveV1;

}  // namespace fs
