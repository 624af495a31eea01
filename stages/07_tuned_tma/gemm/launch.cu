// Stage 07 gemm: the host code of the launch that is no template (launch.cuh holds the rest).
#include <algorithm>
#include <cstdint>

#include "stages/07_tuned_tma/gemm/versions.h"

namespace fs {

Status gemm_tma::cluster_grid(int64_t cluster_tiles, int max_active_clusters, int cluster_size, unsigned* blocks) {
  if (max_active_clusters < 1) return Status::UnsupportedDevice;
  *blocks = unsigned(cluster_size * std::min(cluster_tiles, int64_t(max_active_clusters)));
  return Status::Success;
}

}  // namespace fs
