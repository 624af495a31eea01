// Stage 06: the shared-memory tiles and the copies that fill them from global memory, as several
// versions share them unchanged; each piece is introduced by the version named in its section.
//   v3–v5    TileStream: an fp32 operand's float4s, through registers into a k-major shared tile
//   v6–v8    PaddedTile (v6, v7): a tile in its stored orientation, rows padded; copy_tile_elements
//   v7, v8   AsyncTileStream: 16-byte cp.async copies into a padded or panel tile
//   v9–v16   SwizzledTile, and SwizzledTileStream: copies of any width into it, bounds checked
//   v12–v16  WholeTileStream: the same copies for k-tiles that lie inside the matrix, unchecked
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "common/device/sm80.cuh"

namespace fs::gemm {

// ---- v3: an fp32 operand's k-tiles as float4s ---------------------------------------------------
// This thread's float4s of one operand's k-tiles, for a k-major shared tile s[BK][BX] (the SIMT
// versions' sA[k][m], sB[k][n]). The operand is stored (X, K), k contiguous (A untransposed, B
// transposed), or (K, X), x contiguous (A transposed, B untransposed); vectors run along the stored
// rows. A thread's vectors share one column and sit kRowStep stored rows apart, so one pointer, one
// pair of bounds and one stride describe them all, worked out once and moved one k-tile per step: the
// main loop keeps few 64-bit values alive and does almost no address arithmetic.
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

// ---- v7: 16-byte cp.async copies -----------------------------------------------------------------
// The tile copies of v7 and v8: one cp.async of 16 bytes per chunk of 16 / sizeof(T) elements along
// the stored rows, into a Tile (PaddedTile or PanelTile) of one pipeline stage. As TileStream does for
// v3–v5, a thread's chunks share one column and sit kRowStep stored rows apart, so one source pointer
// and one pair of bounds, moved one k-tile per step, describe them all (NOTES.md, v7: what recomputing
// each address every step cost). Needs 16-byte aligned base and ld.
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

// ---- v9: copies of any width into a swizzled tile -----------------------------------------------
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

// ---- v12: whole tiles, copied without bounds ------------------------------------------------------
// SwizzledTileStream decides in every k-tile whether its copies lie inside the matrix: 64-bit compares
// of two bounds, a branch around each path, the bounds walked along with the pointer (NOTES.md, v12:
// what that costs in v9). Yet in most blocks every k-tile lies wholly inside.
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
