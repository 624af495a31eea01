#include "common/lib/tensor_map.h"

#include <cuda_runtime.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000: the entry's signature

#include <atomic>
#include <limits>
#include <string>

#include "common/lib/cuda_check.h"

namespace fs {

namespace {

using EncodeTiled = PFN_cuTensorMapEncodeTiled_v12000;

// The driver's cuTensorMapEncodeTiled, in its CUDA 12.0 form, looked up once per process (a failed
// lookup is not remembered: a later call tries again).
Status encode_tiled_entry(EncodeTiled* out) {
  static std::atomic<EncodeTiled> cached{nullptr};
  EncodeTiled fn = cached.load(std::memory_order_acquire);
  if (!fn) {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    FS_RETURN_IF_CUDA_ERROR(
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !entry)
      return record_driver_error("the driver has no cuTensorMapEncodeTiled (a CUDA 12.0 or newer driver is needed)");
    fn = reinterpret_cast<EncodeTiled>(entry);
    cached.store(fn, std::memory_order_release);
  }
  *out = fn;
  return Status::Success;
}

bool tma_type(DType t, CUtensorMapDataType* out) {
  switch (t) {
    case DType::FP16: *out = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; return true;
    case DType::BF16: *out = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; return true;
    case DType::FP32: *out = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; return true;
    case DType::INT8: *out = CU_TENSOR_MAP_DATA_TYPE_UINT8; return true;  // TMA moves bits: signedness is wgmma's
    case DType::INT32: *out = CU_TENSOR_MAP_DATA_TYPE_INT32; return true;
    case DType::FP8_E4M3: *out = CU_TENSOR_MAP_DATA_TYPE_UINT8; return true;  // bits again: the format is wgmma's
  }
  return false;
}

constexpr int64_t kMaxExtent = std::numeric_limits<int32_t>::max();

// A row (or plane) stride of `ld` elements of `size` bytes over `least` elements: at least `least`, a
// multiple of 16 bytes, under 2^40 bytes (ld < 2^40 / size first, so that ld · size cannot wrap).
bool stride_ok(int64_t ld, int64_t least, int64_t size) {
  return ld >= least && ld < (int64_t(1) << 40) / size && (ld * size) % 16 == 0;
}

// cuTensorMapEncodeTiled for checked extents: the 128-byte swizzle (or none), zeros outside the tensor,
// L2 fetches of 256 bytes, every element of the box (no striding).
Status encode(const void* base, DType dtype, int rank, const cuuint64_t* dims, const cuuint64_t* strides,
              const cuuint32_t* box, bool swizzle, CUtensorMap* map) {
  CUtensorMapDataType type;
  if (!tma_type(dtype, &type)) return Status::UnsupportedDtype;
  EncodeTiled encode_tiled = nullptr;
  FS_RETURN_IF_ERROR(encode_tiled_entry(&encode_tiled));
  const cuuint32_t steps[5] = {1, 1, 1, 1, 1};  // one per dimension, rank 5 at most
  const CUresult r = encode_tiled(map, type, cuuint32_t(rank), const_cast<void*>(base), dims, strides, box, steps,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE,
                                  swizzle ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return record_driver_error("cuTensorMapEncodeTiled refused the map (CUresult " + std::to_string(int(r)) + ")");
  return Status::Success;
}

}  // namespace

Status check_tensor_map(const TensorMap2d& t) {
  if (reinterpret_cast<std::uintptr_t>(t.base) % 16 != 0) return Status::MisalignedPointer;
  const int64_t size = int64_t(dtype_size(t.dtype));
  if (t.cols < 1 || t.rows < 1 || t.cols > kMaxExtent || t.rows > kMaxExtent) return Status::InvalidSize;
  if (!stride_ok(t.ld, t.cols, size)) return Status::InvalidLeadingDim;
  return Status::Success;
}

Status check_tensor_map(const TensorMap4d& t) {
  FS_RETURN_IF_ERROR(check_tensor_map(t.plane));
  if (t.heads < 1 || t.heads > kMaxExtent || t.batches < 1 || t.batches > kMaxExtent) return Status::InvalidSize;
  const int64_t size = int64_t(dtype_size(t.plane.dtype));
  if (!stride_ok(t.head_ld, 1, size) || !stride_ok(t.batch_ld, 1, size)) return Status::InvalidLeadingDim;
  return Status::Success;
}

Status encode_tensor_map(const TensorMap2d& t, CUtensorMap* map) {
  FS_RETURN_IF_ERROR(check_tensor_map(t));
  const cuuint64_t dims[2] = {cuuint64_t(t.cols), cuuint64_t(t.rows)};
  const cuuint64_t strides[1] = {cuuint64_t(t.ld) * dtype_size(t.dtype)};  // bytes; dimension 0's is implied
  const cuuint32_t box[2] = {cuuint32_t(t.box_cols), cuuint32_t(t.box_rows)};
  return encode(t.base, t.dtype, 2, dims, strides, box, t.swizzle, map);
}

Status encode_tensor_map(const TensorMap4d& t, CUtensorMap* map) {
  FS_RETURN_IF_ERROR(check_tensor_map(t));
  const TensorMap2d& p = t.plane;
  const std::size_t size = dtype_size(p.dtype);
  const cuuint64_t dims[4] = {cuuint64_t(p.cols), cuuint64_t(p.rows), cuuint64_t(t.heads), cuuint64_t(t.batches)};
  const cuuint64_t strides[3] = {cuuint64_t(p.ld) * size, cuuint64_t(t.head_ld) * size, cuuint64_t(t.batch_ld) * size};
  const cuuint32_t box[4] = {cuuint32_t(p.box_cols), cuuint32_t(p.box_rows), 1, 1};
  return encode(p.base, p.dtype, 4, dims, strides, box, p.swizzle, map);
}

}  // namespace fs
