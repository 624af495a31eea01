// Device helpers the stage 06 kernels share, each introduced by the version named beside it: guarded
// 128-bit loads (v3), shared tiles in their stored orientation, element copies and the staged store
// of C (v6), cp.async tile streams (the sm80 wrappers of common/device/sm80.cuh) and the grouped tile
// order (v7), the int8 panel tile (v8), the swizzled tile with its copy stream of any width and
// ldmatrix addressing (v9), the int8 byte transpose (v10), the copy of whole tiles (v12, v15). Kept here
// once so that each vN_*.cuh shows only its own idea. The alpha/beta epilogue (v1) and its pair store
// (v9), which stage 07 shares, are common/device/gemm_epilogue.cuh.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/device/gemm_epilogue.cuh"
#include "common/device/sm80.cuh"

namespace fs::gemm {

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

// ---- v9: the swizzled tile ---------------------------------------------------------------------
// A tile kept in its stored orientation, as PaddedTile, but dense: no padding. Its rows are cut into
// 16-byte chunks (8 halves, 16 int8), and within every 128-byte line of shared memory the chunk index
// is XORed with a key that changes from row to row, so the 8 rows one ldmatrix phase reads, same
// logical chunk, land on 8 different chunk slots (8 × 4 banks: every bank once):
//   rows of >= 128 bytes: key = row % 8         rows of 64 bytes (two per line): key = (row / 2) % 8
//   physical byte = logical byte ^ (key << 4)  (bits 4..6, the chunk within the line, are flipped)
// For 64-byte rows (a k-contiguous tile 32 halves or 64 int8 deep), rows 0..7 at logical chunk 0:
//   row      0   1   2   3   4   5   6   7          line = 128 bytes = slots 0..7 of 16 bytes
//   line     0   0   1   1   2   2   3   3          (rows 2j and 2j+1 share line j)
//   slot     0   4   0   4   0   4   0   4    before: slots 0 and 4 only, a 4-way bank conflict
//   key      0   0   1   1   2   2   3   3
//   slot^key 0   4   1   5   2   6   3   7    after: every slot once, no conflict
// The XOR stays inside one 128-byte line, so the tile keeps its size and every chunk stays whole.
template <bool kIsKContig, int kBX, int kDepth, class T>
struct SwizzledTile {
  static constexpr bool kKContig = kIsKContig;
  static constexpr int kBK = kDepth;
  static constexpr int kRows = kKContig ? kBX : kBK;
  static constexpr int kCols = kKContig ? kBK : kBX;
  static constexpr int kRowBytes = kCols * int(sizeof(T));
  static constexpr int kBytes = kRows * kRowBytes;
  static constexpr int kLineShift = kRowBytes <= 128 ? 7 : kRowBytes == 256 ? 8 : kRowBytes == 512 ? 9 : 10;
  static_assert(kRowBytes >= 64 && kRowBytes <= 1024 && (kRowBytes & (kRowBytes - 1)) == 0,
                "rows of 64 to 1024 bytes, a power of two");
  // The byte offset of stored row `row`, byte `col` (the key is the line index for 64-byte rows, the
  // row index for longer ones: (offset >> kLineShift) is both).
  __device__ static uint32_t offset(int row, int col) {
    const uint32_t off = uint32_t(row * kRowBytes + col);
    return off ^ (((off >> kLineShift) & 7u) << 4);
  }
};

// This lane's row address for an ldmatrix .x4 that loads a 16(x) × 16(k) block of 16-bit values (or
// 16 × 32 int8, the same 512 bytes) at (x0, k = 0) of a SwizzledTile. Lanes 8i .. 8i+7 address the
// rows of 8×8 tile i; the tiles come in the order the mma fragment registers want them:
//   A (x = m): tile 0 (m 0-7, k 0-7), 1 (m 8-15, k 0-7), 2 (m 0-7, k 8-15), 3 (m 8-15, k 8-15)
//   B (x = n): tile 0 (n 0-7, k 0-7), 1 (n 0-7, k 8-15), 2 (n 8-15, k 0-7), 3 (n 8-15, k 8-15)
// so that A's .x4 is a[0..3] of one m16n8k16 fragment, B's is b[0..1] of two n8 tiles (k in 16-bit
// units; for int8 read "k 0-15, k 16-31"). A k-contiguous tile has x rows: each lane points at row x,
// chunk k/8, and plain ldmatrix hands lane 4g+t row g. An x-contiguous tile (16-bit only) has k rows:
// each lane points at row k, chunk x/8, and ldmatrix .trans hands lane 4g+t column g.
template <class Tile, bool kOperandB>
__device__ __forceinline__ uint32_t ldmatrix_lane_offset(int lane, int x0) {
  const int i = lane / 8, r = lane % 8;
  const int dx = kOperandB ? (i >> 1) * 8 : (i & 1) * 8;  // x of the tile's first row or column
  const int dk = kOperandB ? (i & 1) : (i >> 1);          // 16-byte chunk of k (8 halves, 16 int8)
  if constexpr (Tile::kKContig) return Tile::offset(x0 + dx + r, dk * 16);
  else return Tile::offset(dk * 8 + r, (x0 + dx) * 2);
}

// The offset of block (x0 + 16·i, 32 bytes of k times s) from the lane's offset of block (x0, 0), by a
// compile-time XOR and add (no swizzle worked out in the loop). K-contiguous rows: 32·s bytes along the
// row flips bit 5 only (the key is unchanged), 16·i rows keep the key (it repeats every 8 rows, or 16
// for 64-byte rows): XOR 32·s, add 16·i rows. X-contiguous rows (x0 a multiple of 64 halves, one
// 128-byte line): 32·i bytes along the row flips bits 5..6, 16·s rows keep the key: XOR 32·i, add 16·s rows.
template <class Tile>
__device__ __forceinline__ uint32_t ldmatrix_block_offset(uint32_t lane_offset, int s, int i) {
  if constexpr (Tile::kKContig) return (lane_offset ^ uint32_t(32 * s)) + uint32_t(16 * i * Tile::kRowBytes);
  else return (lane_offset ^ uint32_t(32 * i)) + uint32_t(16 * s * Tile::kRowBytes);
}

// The tile copies of v9 and v10: AsyncTileStream's walk (one pointer, one pair of bounds, moved one
// k-tile per step) into a SwizzledTile, with copies kCopyBytes wide. 16 is cp.async.cg; 8 and 4,
// for leading dimensions and bases that are not 16-byte aligned, are cp.async.ca (the same pipeline,
// 2 or 4 times the instructions); kCopyBytes = sizeof(T) (below 4) is an element-by-element copy
// through registers, the path for rows not even 4-byte aligned (its loads stall the warp: the
// pipeline no longer hides them). T is the raw storage type (uint16_t for fp16/bf16, int8_t).
template <class Tile, int kThreads, int kCopyBytes, class T>
struct SwizzledTileStream {
  static constexpr int kElems = kCopyBytes / int(sizeof(T));  // elements per copy
  static constexpr int kPerRow = Tile::kRowBytes / kCopyBytes, kRowStep = kThreads / kPerRow;
  static constexpr int kCopies = Tile::kRows / kRowStep;
  // Copy loops unrolled fully for 16 and 8 bytes, by 4 for 4 bytes (8 to 16 copies per operand: fully
  // unrolled, their shared offsets held across the main loop made ptxas spill), not for elements.
  static constexpr int kUnroll = kCopyBytes >= 8 ? kCopies : kCopyBytes == 4 ? 4 : 1;
  static_assert(kCopyBytes >= int(sizeof(T)) && Tile::kRowBytes % kCopyBytes == 0 && kThreads % kPerRow == 0 &&
                    Tile::kRows % kRowStep == 0,
                "whole copies per thread");
  const T* p;          // this thread's first copy in the current k-tile
  int64_t row_stride;  // kRowStep stored rows, in elements
  int64_t rows_left;   // stored rows from the first copy's row to the matrix edge
  int64_t cols_left;   // stored columns from the copies' first element to the edge
  int r, c;            // the first copy's place in the stored tile (row, element)

  // x0: the tile's first m (A) or n (B), X that extent of the matrix.
  __device__ SwizzledTileStream(const T* x, int64_t ld, int64_t x0, int64_t X, int64_t K, int tid)
      : row_stride(kRowStep * ld), r(tid / kPerRow), c(tid % kPerRow * kElems) {
    const int64_t row = Tile::kKContig ? x0 + r : r, col = Tile::kKContig ? c : x0 + c;  // at k0 = 0
    p = x + row * ld + col;
    rows_left = (Tile::kKContig ? X : K) - row;
    cols_left = (Tile::kKContig ? K : X) - col;
  }
  // One copy of kCopyBytes; `valid` false reads nothing and writes zeros.
  __device__ static void copy_one(unsigned char* dst, const T* src, bool valid, const T* base) {
    if constexpr (kCopyBytes == 16) sm80::cp_async_cg_16_zfill(dst, valid ? src : base, valid ? 16 : 0);
    else if constexpr (kCopyBytes >= 4) sm80::cp_async_ca_zfill<kCopyBytes>(dst, valid ? src : base, valid ? kCopyBytes : 0);
    else *reinterpret_cast<T*>(dst) = valid ? *src : T(0);  // one element, through a register
  }
  // Issues this thread's copies of the current k-tile into `s` (one stage's Tile). Inside the matrix
  // every copy is whole: one pointer increment and one cp.async each. `base`, the matrix (a kernel
  // argument, not held in registers), is the address given to copies that read nothing. The element
  // path (kCopyBytes < 4) keeps its loops rolled: it is slow anyway, and unrolled it spills (kUnroll).
  __device__ void copy(unsigned char* s, const T* base) const {
    if (rows_left > (kCopies - 1) * kRowStep && cols_left >= kElems) {
      const T* q = p;
#pragma unroll(kUnroll)
      for (int i = 0; i < kCopies; ++i, q += row_stride)
        copy_one(s + Tile::offset(r + i * kRowStep, c * int(sizeof(T))), q, true, base);
      return;
    }
    // At an edge: a copy wholly outside the matrix zero-fills (reading nothing); one partly outside
    // takes its valid elements one by one and zeros after them (a partial cp.async source size would
    // be counted by compute-sanitizer as a full-width read past the allocation).
    const int valid = cols_left >= kElems ? kElems : cols_left > 0 ? int(cols_left) : 0;
#pragma unroll(kUnroll)
    for (int i = 0; i < kCopies; ++i) {
      unsigned char* dst = s + Tile::offset(r + i * kRowStep, c * int(sizeof(T)));
      const T* q = p + i * row_stride;
      const int n = rows_left > i * kRowStep ? valid : 0;  // valid elements in this copy
      if (n == kElems || n == 0) {
        copy_one(dst, q, n != 0, base);
      } else {
#pragma unroll
        for (int j = 0; j < kElems; ++j) reinterpret_cast<T*>(dst)[j] = j < n ? q[j] : T(0);
      }
    }
  }
  __device__ void advance() {  // to the next k-tile: kBK columns, or kBK = kCopies·kRowStep rows
    if (Tile::kKContig) p += Tile::kBK;
    else p += kCopies * row_stride;
    if (Tile::kKContig) cols_left -= Tile::kBK;
    else rows_left -= Tile::kBK;
  }
};

// ---- v10: the int8 byte transpose ----------------------------------------------------------------
// ldmatrix moves 16-bit values: .trans cannot turn an x-contiguous int8 tile into k-contiguous
// fragments. v10 copies such an operand in its stored orientation (Src, k rows) and rewrites it into a
// k-contiguous SwizzledTile (Dst, x rows) before the fragment loads. Each thread step takes a 4 k × 4 x
// block: four 32-bit loads (one per k row), a 4×4 byte transpose in registers (__byte_perm, PRMT),
// four 32-bit stores (one per x row). Consecutive threads walk k first, so a warp's stores cover
// whole 64-byte rows of Dst.
template <class Src, class Dst, int kThreads>
__device__ __forceinline__ void transpose_s8(unsigned char* dst, const unsigned char* src, int tid) {
  static_assert(!Src::kKContig && Dst::kKContig && Src::kBK == Dst::kBK && Src::kCols == Dst::kRows, "one tile");
  constexpr int kKBlocks = Src::kBK / 4, kBlocks = kKBlocks * (Src::kCols / 4);
  static_assert(kBlocks % kThreads == 0, "whole blocks per thread");
#pragma unroll
  for (int b = tid; b < kBlocks; b += kThreads) {
    const int k = b % kKBlocks * 4, x = b / kKBlocks * 4;
    uint32_t w[4];  // w[i]: bytes x..x+3 of k row k+i
#pragma unroll
    for (int i = 0; i < 4; ++i) w[i] = *reinterpret_cast<const uint32_t*>(src + Src::offset(k + i, x));
    // Byte j of w[i] is (k+i, x+j); out[j] gathers byte j of w[0..3]: (x+j, k..k+3).
    const uint32_t lo01 = __byte_perm(w[0], w[1], 0x5140), hi01 = __byte_perm(w[0], w[1], 0x7362);
    const uint32_t lo23 = __byte_perm(w[2], w[3], 0x5140), hi23 = __byte_perm(w[2], w[3], 0x7362);
    const uint32_t out[4] = {__byte_perm(lo01, lo23, 0x5410), __byte_perm(lo01, lo23, 0x7632),
                             __byte_perm(hi01, hi23, 0x5410), __byte_perm(hi01, hi23, 0x7632)};
#pragma unroll
    for (int j = 0; j < 4; ++j) *reinterpret_cast<uint32_t*>(dst + Dst::offset(x + j, k)) = out[j];
  }
}

// ---- v12: whole tiles, copied without bounds ------------------------------------------------------
// SwizzledTileStream decides in every k-tile whether its copies lie inside the matrix: 64-bit compares
// of two bounds, a branch around each path, the bounds walked along with the pointer. In v9's SASS
// the copies of a k-tile take 72 instructions per warp, their 6 cp.async among them, beside 64 MMAs
// and 16 ldmatrix (ncu's source page at 4096³). Yet in most blocks every k-tile lies wholly inside.
// WholeTileStream is the copy for those blocks, with SwizzledTileStream's interface and no bounds: its
// kCopies copies sit kRowStep stored rows apart in the matrix and, the swizzle key repeating every 8
// rows (or 8 lines of two rows), exactly kRowStep·kRowBytes bytes apart in shared memory: per copy one
// 64-bit add and one cp.async whose shared address is the thread's offset plus a constant. Copies are
// 16 bytes (v12-v14) or, for rows only 8-byte aligned, 8 (v15: twice the copies, the same walk).
template <class Tile, int kThreads, class T, int kCopyBytes = 16>
struct WholeTileStream {
  using Checked = SwizzledTileStream<Tile, kThreads, kCopyBytes, T>;  // the same copies, the same threads
  static constexpr int kRowStep = Checked::kRowStep, kCopies = Checked::kCopies;
  static constexpr int kDstStep = kRowStep * Tile::kRowBytes;  // bytes between a thread's copies in shared memory
  static_assert(kCopyBytes == 16 || kCopyBytes == 8, "16- or 8-byte copies");
  static_assert((kDstStep >> Tile::kLineShift) % 8 == 0, "kRowStep rows on, the same swizzle key");
  const T* p;          // this thread's first copy in the current k-tile
  int64_t row_stride;  // kRowStep stored rows, in elements
  uint32_t dst;        // the first copy's byte offset in the (swizzled) tile

  // As SwizzledTileStream's; X and K are not needed: every k-tile lies inside the matrix. The first
  // k-tile starts at k = k0 (v14, v15: after K's tail; a multiple of the copy's elements where k runs
  // along the stored rows).
  __device__ WholeTileStream(const T* x, int64_t ld, int64_t x0, int64_t /*X*/, int64_t /*K*/, int tid,
                             int64_t k0 = 0)
      : row_stride(kRowStep * ld) {
    const int r = tid / Checked::kPerRow, c = tid % Checked::kPerRow * Checked::kElems;
    p = x + (Tile::kKContig ? (x0 + r) * ld + k0 + c : (k0 + r) * ld + x0 + c);
    dst = Tile::offset(r, c * int(sizeof(T)));
  }
  // Issues this thread's copies of the current k-tile into `s` (one stage's Tile).
  __device__ void copy(unsigned char* s, const T* /*base*/) const {
#pragma unroll
    for (int i = 0; i < kCopies; ++i) {
      if constexpr (kCopyBytes == 16) sm80::cp_async_cg_16(s + dst + i * kDstStep, p + i * row_stride);
      else sm80::cp_async_ca<kCopyBytes>(s + dst + i * kDstStep, p + i * row_stride);
    }
  }
  __device__ void advance() {  // to the next k-tile, as SwizzledTileStream
    if (Tile::kKContig) p += Tile::kBK;
    else p += kCopies * row_stride;
  }
};

}  // namespace fs::gemm
