// TMA tensor maps: what a Hopper kernel's cp.async.bulk.tensor loads (and stores) are described by. A CUtensorMap
// holds one tensor's base address, extents and row stride, the box one load copies, the shared-memory
// swizzle and what fills the box outside the tensor. It is made on the host by the driver's
// cuTensorMapEncodeTiled and passed to the kernel by value (a __grid_constant__ parameter).
//
// The driver entry is found at run time (cudaGetDriverEntryPointByVersion, CUDA 12.5 and newer), not
// linked: the library then loads on machines without a driver (CI), and only a launch needs one.
// A map is encoded on every launch (a few microseconds of host time). A cache keyed by every field
// (base, extents, stride, box, type) could save that later; measured launches will say whether it pays.
#pragma once

#include <cuda.h>  // CUtensorMap and its enums: types only, no driver symbol is referenced

#include <cstdint>

#include "common/lib/dtype.h"
#include "common/lib/status.h"

namespace fs {

// One 2D row-major tensor and the box a TMA load copies out of it (or a store into it), in elements. TMA's dimension 0 is
// the contiguous one (cols), dimension 1 the rows.
struct TensorMap2d {
  const void* base = nullptr;  // element (0, 0)
  DType dtype = DType::FP16;
  int64_t cols = 0;  // used elements per row
  int64_t rows = 0;
  int64_t ld = 0;  // elements from one row to the next (>= cols)
  int box_cols = 0;  // a box is box_rows × box_cols; box_cols · element size <= 128, the swizzle span
  int box_rows = 0;
  // The 128-byte swizzle (what wgmma's descriptors read), or none: the box lands row after row as it is,
  // box_cols up to 256 (the attention backward's rows of LSE and delta, read by plain loads).
  bool swizzle = true;
};

// A stack of such 2D tensors, planes indexed by two coordinates with a stride each: TMA's dimensions 2
// and 3. The stage 07 attention maps: a tensor [B, H, N, D] as its strides lay it out
// (fs_attention_params), one plane of [N][D] per (head, batch entry): heads along dimension 2, batch
// entries along dimension 3. Strides in any order (the [B, N, H, D] layout has the head stride, D,
// below the row stride, H·D): TMA only adds coordinate times stride. A box is box_rows × box_cols of
// one plane, and is zero-filled past that plane's last row rather than running into the next plane (a
// key tile past the end of a sequence reads zeros).
struct TensorMap4d {
  TensorMap2d plane;  // one plane: base (plane (0, 0)'s first element), dtype, cols, rows, ld, the box
  int64_t heads = 0;
  int64_t head_ld = 0;  // elements from one head's plane to the next
  int64_t batches = 0;
  int64_t batch_ld = 0;  // elements from one batch entry's plane to the next
};

// The limits TMA puts on a tensor, checked before any encode, with the code each breach returns:
//   MisalignedPointer  the base is not 16-byte aligned
//   InvalidLeadingDim  the row stride ld · element size is not a multiple of 16 bytes, or is 2^40 or more
//   InvalidSize        an extent is not 1 .. 2^31 - 1 (TMA allows 2^32; the kernels' box coordinates
//                      are signed 32-bit)
// GEMM validation (GemmSupport::operand_align) refuses the first two before any launch; this check
// repeats them for any other caller and adds the extents.
Status check_tensor_map(const TensorMap2d& t);
// The same for every plane, and: heads and batches 1 .. 2^31 - 1 (InvalidSize); head_ld and batch_ld
// multiples of 16 bytes under 2^40 bytes (InvalidLeadingDim). They may be smaller than a plane: whether
// planes overlap is the caller's to check (attention: validate's strides rules).
Status check_tensor_map(const TensorMap4d& t);

// check_tensor_map, then cuTensorMapEncodeTiled: rank 2, the 128-byte swizzle unless t.swizzle is
// false (16-byte chunk c of shared row r lands at chunk c ^ (r % 8), the layout wgmma's descriptors
// read), zeros for elements outside the tensor, L2 fetches of 256 bytes. CudaError (with
// last_cuda_error() saying why) when the driver entry cannot be found or the driver refuses the map.
Status encode_tensor_map(const TensorMap2d& t, CUtensorMap* map);
// Rank 4, otherwise the same: for sm90::tma_load_4d.
Status encode_tensor_map(const TensorMap4d& t, CUtensorMap* map);

}  // namespace fs
