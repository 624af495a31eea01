// Stage 04 v3: one tile shape per head_dim (v3::Config).
#include "flash_fwd.h"
#include "launch.cuh"
#include "v3_cp_async_ldmatrix.cuh"

fs::Status fs::launch_flash_fwd_v3(const AttentionParams& p, cudaStream_t stream) {
  return flash::launch_version<flash::v3::Config>(p, stream, [](auto shape) {
    return flash::v3::flash_fwd_v3_kernel<typename decltype(shape)::Elem, decltype(shape)::kHeadDim>;
  });
}
