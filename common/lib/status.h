// The status type every launcher returns: a C++ view of the C codes in flashstages.h.
#pragma once

#include "common/lib/flashstages.h"

namespace fs {

enum class Status : int {
  Success = FS_SUCCESS,
  NullPointer = FS_ERR_NULL_POINTER,
  InvalidSize = FS_ERR_INVALID_SIZE,
  UnsupportedHeadDim = FS_ERR_UNSUPPORTED_HEAD_DIM,
  UnsupportedDtype = FS_ERR_UNSUPPORTED_DTYPE,
  MisalignedPointer = FS_ERR_MISALIGNED_POINTER,
  UnsupportedMask = FS_ERR_UNSUPPORTED_MASK,
  InvalidScale = FS_ERR_INVALID_SCALE,
  OutOfMemory = FS_ERR_OUT_OF_MEMORY,
  CudaError = FS_ERR_CUDA,
  InvalidSeqLens = FS_ERR_INVALID_SEQLENS,
  InvalidLeadingDim = FS_ERR_INVALID_LEADING_DIM,
  UnsupportedDevice = FS_ERR_UNSUPPORTED_DEVICE,
  InvalidKvHeads = FS_ERR_INVALID_KV_HEADS,
  UnsupportedLayout = FS_ERR_UNSUPPORTED_LAYOUT,
  InvalidStrides = FS_ERR_INVALID_STRIDES,
};

inline const char* status_name(Status s) { return fs_status_name(static_cast<int>(s)); }
inline const char* status_message(Status s) { return fs_status_message(static_cast<int>(s)); }

}  // namespace fs

// Returns the status of `expr` from the enclosing function unless it is Success.
#define FS_RETURN_IF_ERROR(expr)                                                       \
  do {                                                                                 \
    if (const ::fs::Status fs_status_ = (expr); fs_status_ != ::fs::Status::Success) \
      return fs_status_;                                                               \
  } while (0)
