// Stage 04 v2: v1's tile shape; the causal work split inside the kernel.
#include "flash_fwd.h"
#include "launch.cuh"
#include "v2_causal_split.cuh"

fs::Status fs::launch_flash_fwd_v2(const AttentionParams& p, cudaStream_t stream) {
  return flash::launch_version<flash::v2::Config>(p, stream, [](auto shape) {
    return flash::v2::flash_fwd_v2_kernel<typename decltype(shape)::Elem, decltype(shape)::kHeadDim>;
  });
}
