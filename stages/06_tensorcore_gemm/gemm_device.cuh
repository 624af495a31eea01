// Device helpers the stage 06 kernels share, each introduced by the version named beside it: the
// alpha/beta epilogue (v1), guarded 128-bit loads (v3), shared tiles in their stored orientation,
// element copies and the staged store of C (v6), cp.async tile streams (the sm80 wrappers of
// common/device/sm80.cuh) and the grouped tile order (v7), the int8 panel tile (v8). Kept here once
// so that each vN_*.cuh shows only its own idea.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/sm80.cuh"

namespace fs::gemm {

// ---- v1: the epilogue, C = alpha·acc + beta·C for one element -----------------------------------
// beta = 0 must not read C: C may hold NaN (the tests poison it), and 0·NaN is NaN.
__device__ __forceinline__ void epilogue(float* c, float acc, float alpha, float beta) {
  *c = beta == 0.0f ? alpha * acc : alpha * acc + beta * *c;
}
// fp16 output: the fp32 value is rounded once, at the store.
__device__ __forceinline__ void epilogue(__half* c, float acc, float alpha, float beta) {
  *c = __float2half_rn(beta == 0.0f ? alpha * acc : alpha * acc + beta * __half2float(*c));
}
// int32 output: evaluated in fp64 and rounded to nearest (saturating at the int32 range), so it is
// exact whenever alpha and beta are integers and the result fits in int32.
__device__ __forceinline__ void epilogue(int32_t* c, int32_t acc, float alpha, float beta) {
  const double v = double(alpha) * double(acc) + (beta == 0.0f ? 0.0 : double(beta) * double(*c));
  *c = __double2int_rn(v);
}

// ---- v3: 128-bit loads and stores -----------------------------------------------------------------
// Four floats of shared memory into four registers with one LDS.128 (s 16-byte aligned).
__device__ __forceinline__ void lds128(float* r, const float* s) {
  const float4 v = *reinterpret_cast<const float4*>(s);
  r[0] = v.x;
  r[1] = v.y;
  r[2] = v.z;
  r[3] = v.w;
}

// This thread's float4s of one operand's k-tiles, for a k-major shared tile s[BK][BX] (the SIMT
// versions' sA[k][m], sB[k][n]). The operand is stored (X, K), k contiguous (A untransposed, B
// transposed), or (K, X), x contiguous (A transposed, B untransposed); vectors run along the stored
// rows. A thread's vectors share one column and sit kRowStep stored rows apart, so one pointer, one
// pair of bounds and one stride describe them all, worked out once and moved one k-tile per step: the
// main loop keeps few 64-bit values alive and does almost no address arithmetic. (An early v5 that
// recomputed every address from x0, k0 and ld each step, with branches around each vector, ran 15%
// slower than the same loop without any bounds handling: a development measurement, not committed.)
template <bool kKContig, int kBX, int kBK, int kThreads>
struct TileStream {
  static constexpr int kRows = kKContig ? kBX : kBK, kCols = kKContig ? kBK : kBX;  // stored tile
  static constexpr int kPerRow = kCols / 4, kRowStep = kThreads / kPerRow, kVecs = kRows / kRowStep;
  static_assert(kThreads % kPerRow == 0 && kRows % kRowStep == 0, "whole vectors per thread");
  const float* p;      // this thread's first vector in the current tile
  int64_t row_stride;  // kRowStep stored rows, in elements
  int64_t k_left;      // k from the first vector to the matrix edge (its column if k-contiguous, else row)
  int x_left;          // the same along x (fixed; clamped to the int range, only compared with small values)

  __device__ TileStream(const float* x, int64_t ld, int64_t x0, int64_t X, int64_t K, int tid)
      : row_stride(kRowStep * ld) {
    const int r = tid / kPerRow, c = tid % kPerRow * 4;
    const int64_t xi = x0 + (kKContig ? r : c), ki = kKContig ? c : r;  // at k0 = 0
    p = x + (kKContig ? xi * ld + ki : ki * ld + xi);
    k_left = K - ki;
    x_left = X - xi > INT32_MAX ? INT32_MAX : int(X - xi);
  }
  // Loads every vector of this k-tile; elements outside the matrix read as zero, so tile tails add
  // nothing. When all of them are whole and `vec_ok` (base 16-byte aligned, ld a multiple of 4)
  // keeps them aligned, that is kVecs plain LDG.128; otherwise each is checked, element by element
  // where it must be.
  __device__ void load(float4 (&v)[kVecs], bool vec_ok) const {
    const int64_t rows_left = kKContig ? x_left : k_left, cols_left = kKContig ? k_left : x_left;
    if (vec_ok && rows_left > (kVecs - 1) * kRowStep && cols_left >= 4) {
#pragma unroll
      for (int i = 0; i < kVecs; ++i) v[i] = *reinterpret_cast<const float4*>(p + i * row_stride);
      return;
    }
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      const float* q = p + i * row_stride;
      const bool row_in = rows_left > i * kRowStep;
      v[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (row_in && vec_ok && cols_left >= 4) v[i] = *reinterpret_cast<const float4*>(q);
      else if (row_in) {
        if (cols_left > 0) v[i].x = q[0];
        if (cols_left > 1) v[i].y = q[1];
        if (cols_left > 2) v[i].z = q[2];
        if (cols_left > 3) v[i].w = q[3];
      }
    }
  }
  // Stores them into s[BK][BX + pad]. A k-contiguous vector holds 4 values of k for one x: it is
  // transposed into 4 scalar stores (a row stride of BX + 4 floats keeps a warp's stores on distinct
  // banks); an x-contiguous one is one 128-bit store.
  template <int kLd>
  __device__ static void store(float (*s)[kLd], const float4 (&v)[kVecs], int tid) {
    const int r = tid / kPerRow, c = tid % kPerRow * 4;
#pragma unroll
    for (int i = 0; i < kVecs; ++i) {
      const int row = r + i * kRowStep;
      if (kKContig) {
        s[c + 0][row] = v[i].x;
        s[c + 1][row] = v[i].y;
        s[c + 2][row] = v[i].z;
        s[c + 3][row] = v[i].w;
      } else {
        *reinterpret_cast<float4*>(&s[row][c]) = v[i];
      }
    }
  }
  __device__ void advance() {  // to the next k-tile
    static_assert(kKContig || kBK % kRowStep == 0, "a k-tile is whole vector rows");
    p += kKContig ? kBK : kBK / kRowStep * row_stride;
    k_left -= kBK;
  }
};

// ---- v6: shared tiles that keep the operand's stored orientation ---------------------------------
// An operand tile covers kBX values of x (m for A, n for B) and kBK of k. Stored (X, K), k contiguous
// (A untransposed, B transposed), it is kBX rows of kBK; stored (K, X), it is kBK rows of kBX. Shared
// memory keeps the same orientation, each row padded by kPad elements, and the WMMA fragment layout
// says which way to read it (row_major/col_major), so no transpose happens on the way in.
template <bool kIsKContig, int kBX, int kDepth, int kPad>
struct PaddedTile {
  static constexpr bool kKContig = kIsKContig;
  static constexpr int kBK = kDepth;
  static constexpr int kRows = kKContig ? kBX : kBK;
  static constexpr int kCols = kKContig ? kBK : kBX;
  static constexpr int kLd = kCols + kPad;  // also WMMA's ldm
  static constexpr int kElems = kRows * kLd;
  __device__ static int at(int r, int c) { return r * kLd + c; }  // stored row r, column c
  // Where the 16×16 fragment whose first element is op(X)[x][k] starts.
  __device__ static int frag(int x, int k) { return kKContig ? at(x, k) : at(k, x); }
};

// Copies the tile whose stored origin is (row0, col0) of a rows × cols matrix (leading dimension ld)
// into shared memory one element per thread-step; elements outside the matrix are stored as zero.
// Works for any alignment: v6's only path, and v7/v8's path when 16-byte copies would be misaligned.
template <class Tile, int kThreads, class T>
__device__ __forceinline__ void copy_tile_elements(T* s, const T* __restrict__ g, int64_t ld, int64_t row0,
                                                   int64_t col0, int64_t rows, int64_t cols, int tid) {
  for (int e = tid; e < Tile::kRows * Tile::kCols; e += kThreads) {
    const int r = e / Tile::kCols, c = e % Tile::kCols;  // consecutive threads, consecutive columns
    const bool inside = row0 + r < rows && col0 + c < cols;
    s[Tile::at(r, c)] = inside ? g[(row0 + r) * ld + col0 + c] : T(0);
  }
}

// Writes a rows × cols accumulator tile staged in shared memory (row stride ld) to C at (m0, n0)
// through the epilogue. `count` threads, this one being `index`, stride over the elements so that
// neighbouring threads store neighbouring columns (coalesced).
template <class TOut, class TAcc>
__device__ __forceinline__ void store_staged(TOut* C, int64_t ldc, int64_t M, int64_t N, int64_t m0, int64_t n0,
                                             const TAcc* s, int ld, int rows, int cols, float alpha, float beta,
                                             int index, int count) {
  for (int e = index; e < rows * cols; e += count) {
    const int r = e / cols, c = e % cols;
    if (m0 + r < M && n0 + c < N) epilogue(C + (m0 + r) * ldc + n0 + c, s[r * ld + c], alpha, beta);
  }
}

// The tile copies of v7 and v8: one cp.async of 16 bytes per chunk of 16 / sizeof(T) elements along
// the stored rows, into a Tile (PaddedTile or PanelTile) of one pipeline stage. As TileStream does for
// v3–v5, a thread's chunks share one column and sit kRowStep stored rows apart, so one source pointer
// and one pair of bounds, moved one k-tile per step, describe them all. (Recomputing each 64-bit
// address and byte count every step made v7 issue 7.7 instructions per HMMA in an early version, an
// ncu development measurement, not committed; today's v7 issues 3.4 per HMMA,
// results/nvidia-h100-80gb-hbm3/logs/ncu_stage06_v7_limits.csv.) Needs 16-byte aligned base and ld.
template <class Tile, int kThreads, class T>
struct AsyncTileStream {
  static constexpr int kChunk = 16 / sizeof(T);
  static constexpr int kPerRow = Tile::kCols / kChunk, kRowStep = kThreads / kPerRow;
  static constexpr int kCopies = Tile::kRows / kRowStep;
  static_assert(Tile::kCols % kChunk == 0 && kThreads % kPerRow == 0 && Tile::kRows % kRowStep == 0,
                "whole chunks per thread");
  const T* p;          // this thread's first chunk in the current k-tile
  int64_t row_stride;  // kRowStep stored rows, in elements
  int64_t step;        // elements from one k-tile to the next
  int64_t rows_left;   // stored rows from the first chunk's row to the matrix edge
  int64_t cols_left;   // stored columns from the chunks' first element to the edge
  int r, c;            // the first chunk's place in the stored tile

  // x0: the tile's first m (A) or n (B), X that extent of the matrix.
  __device__ AsyncTileStream(const T* x, int64_t ld, int64_t x0, int64_t X, int64_t K, int tid)
      : row_stride(kRowStep * ld), step(Tile::kKContig ? Tile::kBK : Tile::kBK * ld), r(tid / kPerRow),
        c(tid % kPerRow * kChunk) {
    const int64_t row = Tile::kKContig ? x0 + r : r, col = Tile::kKContig ? c : x0 + c;  // at k0 = 0
    p = x + row * ld + col;
    rows_left = (Tile::kKContig ? X : K) - row;
    cols_left = (Tile::kKContig ? K : X) - col;
  }
  // Issues this thread's copies of the current k-tile into `s` (one stage's Tile). Inside the matrix
  // every chunk is whole: one pointer increment and one cp.async each.
  __device__ void copy(T* s) const {
    if (rows_left > (kCopies - 1) * kRowStep && cols_left >= kChunk) {
      const T* q = p;
#pragma unroll
      for (int i = 0; i < kCopies; ++i, q += row_stride)
        sm80::cp_async_cg_16(s + Tile::at(r + i * kRowStep, c), q);
      return;
    }
    // At an edge, a chunk partly or wholly outside the matrix takes its valid elements one by one and
    // zeros after them. (cp.async can zero-fill a partial chunk itself, given fewer source bytes, but
    // compute-sanitizer counts that as a 16-byte read and reports the bytes past the allocation.)
    const int valid = cols_left >= kChunk ? kChunk : cols_left > 0 ? int(cols_left) : 0;
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      T* dst = s + Tile::at(r + i * kRowStep, c);
      const T* q = p + i * row_stride;
      const int n = rows_left > i * kRowStep ? valid : 0;  // valid elements in this chunk
      if (n == kChunk) {
        sm80::cp_async_cg_16(dst, q);
      } else {
#pragma unroll
        for (int j = 0; j < kChunk; ++j) dst[j] = j < n ? q[j] : T(0);
      }
    }
  }
  __device__ void advance() {  // to the next k-tile
    p += step;
    if (Tile::kKContig) cols_left -= Tile::kBK;
    else rows_left -= Tile::kBK;
  }
};

// ---- v7: grouped tile order -----------------------------------------------------------------------
// Block b of a 1D grid takes tile (tile_m, tile_n). Consecutive blocks walk down kGroup tile rows
// before moving right, so the blocks resident at one time share kGroup rows of A and a narrow band of
// columns of B, and re-read them from L2 instead of DRAM.
template <int kGroup>
__device__ __forceinline__ void grouped_tile(int64_t b, int64_t tiles_m, int64_t tiles_n, int64_t& tile_m,
                                             int64_t& tile_n) {
  const int64_t per_group = int64_t(kGroup) * tiles_n;
  const int64_t first_m = b / per_group * kGroup;
  const int64_t rows = tiles_m - first_m < kGroup ? tiles_m - first_m : kGroup;
  tile_m = first_m + (b % per_group) % rows;
  tile_n = (b % per_group) / rows;
}

// ---- v8: the int8 panel tile ---------------------------------------------------------------------
// WMMA wants every fragment's first element 32-byte aligned. A padded int8 tile cannot give that: a
// fragment at k = 16 starts 16 bytes into a row. So the tile is cut along its contiguous dimension
// into panels 16 elements wide, each a dense [rows][16] block: a 16×16 fragment is then 256 contiguous
// bytes (ldm 16) and 8 of its rows are 128 contiguous bytes, conflict-free. Panels sit 32 bytes
// further apart than their size, so the threads that write one row's chunks (one per panel) start on
// different banks.
//
//   stored (rows, cols), cols = 16·P:   panel 0          panel 1               panel P-1
//                                       [rows][16]  +32  [rows][16]  +32  ...  [rows][16]
template <bool kIsKContig, int kBX, int kDepth>
struct PanelTile {
  static constexpr bool kKContig = kIsKContig;
  static constexpr int kBK = kDepth;
  static constexpr int kRows = kKContig ? kBX : kBK;
  static constexpr int kCols = kKContig ? kBK : kBX;
  static constexpr int kPanelStride = kRows * 16 + 32;
  static constexpr int kElems = kCols / 16 * kPanelStride;
  static constexpr int kLd = 16;  // WMMA's ldm inside a panel
  __device__ static int at(int r, int c) { return c / 16 * kPanelStride + r * 16 + c % 16; }
  __device__ static int frag(int x, int k) { return kKContig ? at(x, k) : at(k, x); }
};

}  // namespace fs::gemm
