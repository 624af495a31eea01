// Stage 07 attention backward, role header: the order of a dQ tile in the accumulator's order, v6 on.
// A step's dQ tile (Br query rows × D columns, fp32) is stored as (Br / 64) × (D / 64) blocks of 64 × 64,
// row-block-major, 4096 floats each: one block per consumer, its m64n64 wgmma accumulator as the
// consumer's threads hold it. Thread w of the consumer (warp w / 32, lane l = w % 32) holds, in n-block
// n = 0 … 7, the four values e = 0 … 3 at block row 16·(w / 32) + l / 4 + 8·(e / 2) and block column
// 8n + 2·(l % 4) + e % 2, and stores them as one float4 at float (n·128 + w)·4 (v6_dq_accumulator_order.cuh):
// a warp's store is 512 contiguous bytes. The workspace keeps the same order, tile by tile, and the
// conversion (bwd::dq_convert_kernel, at launch.cuh's TileOrderDq) reads a row back through
// dq_tile_offset.
#pragma once

#include <cstdint>

namespace fs::flash_bwd_tma {

// The float of a tile of D columns at row r, column j (r, j from 0): the inverse of the stores above.
// Columns j and j + 1 (j even) are neighbours, so a row can be read two columns at a time.
__host__ __device__ constexpr int dq_tile_offset(int r, int j, int D) {
  const int block = (r / 64) * (D / 64) + j / 64;  // row-block-major
  const int br = r % 64, bj = j % 64;
  const int w = 32 * (br / 16) + 4 * (br % 8) + (bj % 8) / 2;  // the consumer thread that held it
  const int e = 2 * ((br % 16) / 8) + bj % 2;                  // its value of the n-block
  return block * 4096 + ((bj / 8) * 128 + w) * 4 + e;
}

}  // namespace fs::flash_bwd_tma
