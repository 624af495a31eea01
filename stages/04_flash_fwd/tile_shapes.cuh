// flashstages · stage 04 — the tile shape of the ldmatrix kernels (v4's, and v6's split kernel) as a
// type, TileConfig, and the shapes v5's tuner (and v6's) chooses among per head_dim, TileShapes. Host
// and device code include it; the lists are the one place these shapes are written.
#pragma once

#include <cstddef>

namespace fs::flash {

// kWarps warps of kMT 16-row tiles each (Br = 16·kMT·kWarps query rows), Bc = kBc keys per block, Q
// kept in registers or read from shared memory at every key block, and kMinBlocks blocks per SM
// promised to the compiler (__launch_bounds__), which caps registers at 64K / (kMinBlocks·threads).
template <int D, int kWarps_, int kMT_, int kBc_, bool kQInRegs_, int kMinBlocks_ = 1>
struct TileConfig {
  static constexpr int kHeadDim = D;
  static constexpr int kWarps = kWarps_;
  static constexpr int kMT = kMT_;
  static constexpr int kBr = kWarps * 16 * kMT;
  static constexpr int kBc = kBc_;
  static constexpr bool kQInRegs = kQInRegs_;
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr int kThreads = kWarps * 32;
  // sQ [Br][D] + sK, sV [2][Bc][D], 2-byte elements, no padding.
  static constexpr std::size_t kSmemBytes = std::size_t(kBr + 4 * kBc) * D * 2;
};

template <class... Cs>
struct ShapeList {};

// The shapes per head_dim, v4's first (v4::Config; v5_autotune.cuh checks that they agree); the
// others won somewhere in a wider sweep on an H100 (the stage README lists what the tuner picks).
// Registers bound them: 32 rows per warp (kMT = 2) at D = 128 would need 128 registers for rO, 64 for
// S and 64 for Q, so those shapes re-read Q from shared memory (FlashAttention-2's own choice for
// D = 128: Br = 128, Bc = 64, four warps); the last D = 128 and D = 64 shapes instead cap registers so
// that three blocks share an SM. Every head_dim of HeadDimList needs its list: a missing one does not
// compile.
template <int D>
struct TileShapes;
template <>
struct TileShapes<32> {
  using type = ShapeList<TileConfig<32, 4, 1, 64, true>, TileConfig<32, 4, 2, 64, true>,
                         TileConfig<32, 4, 1, 128, true>>;
};
template <>
struct TileShapes<64> {
  using type = ShapeList<TileConfig<64, 4, 1, 64, true>, TileConfig<64, 4, 2, 64, true>,
                         TileConfig<64, 4, 1, 128, true>, TileConfig<64, 4, 1, 64, true, 3>>;
};
template <>
struct TileShapes<128> {
  using type = ShapeList<TileConfig<128, 4, 1, 64, true>, TileConfig<128, 4, 2, 64, false>,
                         TileConfig<128, 4, 2, 32, false>, TileConfig<128, 4, 1, 32, true, 3>>;
};
template <>
struct TileShapes<256> {
  using type = ShapeList<TileConfig<256, 4, 1, 32, false>, TileConfig<256, 8, 1, 64, false>,
                         TileConfig<256, 8, 1, 32, false>>;
};

// The first shape of a head_dim's list, v4's: what v5 runs untuned, the one every GPU this build runs
// on can take (v5's and v6's descriptors give its shared memory).
template <class List>
struct FirstOf;
template <class C, class... Cs>
struct FirstOf<ShapeList<C, Cs...>> {
  using type = C;
};
template <int D>
using FirstShape = typename FirstOf<typename TileShapes<D>::type>::type;

}  // namespace fs::flash
