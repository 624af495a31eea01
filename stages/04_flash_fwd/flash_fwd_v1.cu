// Stage 04 v1: one tile shape (Br = Bc = 64, four warps), every key block visited and masked.
#include "flash_fwd.h"
#include "launch.cuh"
#include "v1_mma.cuh"

fs::Status fs::launch_flash_fwd_v1(const AttentionParams& p, cudaStream_t stream) {
  return flash::launch_version<flash::v1::Config>(p, stream, [](auto shape) {
    return flash::v1::flash_fwd_v1_kernel<typename decltype(shape)::Elem, decltype(shape)::kHeadDim>;
  });
}
