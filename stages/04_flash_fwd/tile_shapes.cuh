// Stage 04: the tile shapes v5's tuner (and v6's) chooses among, per head_dim, as types: each one is
// an instance of v4's kernel (v4::TileConfig). Host and device code include it; the lists are the
// one place these shapes are written.
#pragma once

#include "v4_ldmatrix_swizzle.cuh"

namespace fs::flash {

template <class... Cs>
struct ShapeList {};

// The shapes per head_dim, v4's first; the others won somewhere in a wider sweep on an H100 (the
// stage README lists what the tuner picks). Registers bound them: 32 rows per warp (kMT = 2) at D = 128 would need 128
// registers for rO, 64 for S and 64 for Q, so those shapes re-read Q from shared memory
// (FlashAttention-2's own choice for D = 128: Br = 128, Bc = 64, four warps); the last D = 128 and
// D = 64 shapes instead cap registers so that three blocks share an SM. Every head_dim of
// HeadDimList needs its list: a missing one does not compile.
template <int D>
struct TileShapes;
template <>
struct TileShapes<32> {
  using type = ShapeList<v4::Config<32>, v4::TileConfig<32, 4, 2, 64, true>, v4::TileConfig<32, 4, 1, 128, true>>;
};
template <>
struct TileShapes<64> {
  using type = ShapeList<v4::Config<64>, v4::TileConfig<64, 4, 2, 64, true>, v4::TileConfig<64, 4, 1, 128, true>,
                         v4::TileConfig<64, 4, 1, 64, true, 3>>;
};
template <>
struct TileShapes<128> {
  using type = ShapeList<v4::Config<128>, v4::TileConfig<128, 4, 2, 64, false>, v4::TileConfig<128, 4, 2, 32, false>,
                         v4::TileConfig<128, 4, 1, 32, true, 3>>;
};
template <>
struct TileShapes<256> {
  using type =
      ShapeList<v4::Config<256>, v4::TileConfig<256, 8, 1, 64, false>, v4::TileConfig<256, 8, 1, 32, false>>;
};

}  // namespace fs::flash
