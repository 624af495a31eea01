// Stage 07 gemm, the schedulers the versions share: which tile of C a block takes, one tile per block
// (v1 to v3, block_tile) or many in turn from a persistent grid (v4 on, TileSchedule).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fs::gemm_tma {

// This block's tile of C, row-major over the grid of kBM × kBN tiles (1D grid). m0, n0 < 2^31: the
// tensor maps refuse larger extents.
template <int kBM, int kBN>
__device__ __forceinline__ void block_tile(int64_t N, int32_t& m0, int32_t& n0) {
  const int64_t tiles_n = (N + kBN - 1) / kBN;
  m0 = int32_t(blockIdx.x / tiles_n * kBM);
  n0 = int32_t(blockIdx.x % tiles_n * kBN);
}

// The order in which a persistent grid takes C's tiles (v4 and v6; from v5 on, over cluster tiles). Tiles of
// kTileM × kTileN are numbered t = 0 .. tiles − 1, and worker w of W (a block, or a cluster) takes
// t = w, w + W, …, so at any moment the grid works on about W consecutive t. The numbering walks C in
// groups of kGroupM tile-rows, column by column inside a group (here kGroupM = 4, tiles_m = 6,
// tiles_n = 3; the last group is shorter):
//
//             n-tile 0  1  2
//   m-tile 0       0  4  8      group 0: t = 0 .. 11
//          1       1  5  9
//          2       2  6 10
//          3       3  7 11
//          4      12 14 16      group 1: 2 tile-rows, t = 12 .. 17
//          5      13 15 17
//
// so W consecutive tiles cover about kGroupM tile-rows × W / kGroupM tile-columns of C instead of
// W / tiles_n whole tile-rows: fewer rows of A and columns of B in flight at once (each version says
// why its kGroupM). Fewer than kGroupM tile-rows in C: one group, the order is column-major.
template <int kTileM, int kTileN, int kGroupM>
struct TileSchedule {
  int64_t tiles_m, tiles_n;  // C in kTileM × kTileN tiles

  __device__ TileSchedule(int64_t M, int64_t N)
      : tiles_m((M + kTileM - 1) / kTileM), tiles_n((N + kTileN - 1) / kTileN) {}

  __device__ int64_t tiles() const { return tiles_m * tiles_n; }

  // The first row m0 and column n0 of tile t: multiples of the tile below M and N, so m0 ≤ M − 1 and
  // n0 ≤ N − 1, below 2^31 (the tensor maps refuse larger extents).
  __device__ void tile(int64_t t, int32_t& m0, int32_t& n0) const {
    const int64_t group_tiles = kGroupM * tiles_n;  // tiles in one full group
    const int64_t first_m = t / group_tiles * kGroupM;
    const int64_t rows = min(int64_t(kGroupM), tiles_m - first_m);  // tile-rows in t's group
    const int64_t in_group = t % group_tiles;
    m0 = int32_t((first_m + in_group % rows) * kTileM);
    n0 = int32_t(in_group / rows * kTileN);
  }
};

}  // namespace fs::gemm_tma
