#include <algorithm>
#include <cstdint>

#include "common/lib/cuda_check.h"
#include "common/lib/random.h"

namespace fs {

namespace {

constexpr unsigned kFillBlocks = 1024, kFillThreads = 256;

template <class T>
__global__ void fill_uniform_kernel(T* out, std::size_t n, uint64_t seed, float lo, float hi) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = from_float<T>(lo + (hi - lo) * uniform01(seed, i));
}

template <class T>
__global__ void fill_ints_kernel(T* out, std::size_t n, uint64_t seed, int lo, int hi) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = from_float<T>(static_cast<float>(uniform_int(seed, i, lo, hi)));
}

}  // namespace

template <class T>
Status fill_uniform_device(T* ptr, std::size_t n, uint64_t seed, float lo, float hi, cudaStream_t stream) {
  fill_uniform_kernel<<<kFillBlocks, kFillThreads, 0, stream>>>(ptr, n, seed, lo, hi);
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status::Success;
}

template <class T>
Status fill_ints_device(T* ptr, std::size_t n, uint64_t seed, int lo, int hi, cudaStream_t stream) {
  fill_ints_kernel<<<kFillBlocks, kFillThreads, 0, stream>>>(ptr, n, seed, lo, hi);
  FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
  return Status::Success;
}

#define FS_INSTANTIATE_FILL(T)                                                                  \
  template Status fill_uniform_device<T>(T*, std::size_t, uint64_t, float, float, cudaStream_t); \
  template Status fill_ints_device<T>(T*, std::size_t, uint64_t, int, int, cudaStream_t);
FS_INSTANTIATE_FILL(float)
FS_INSTANTIATE_FILL(__half)
FS_INSTANTIATE_FILL(__nv_bfloat16)
FS_INSTANTIATE_FILL(int8_t)
FS_INSTANTIATE_FILL(int32_t)
FS_INSTANTIATE_FILL(__nv_fp8_e4m3)
#undef FS_INSTANTIATE_FILL

Status fill_random_device(void* ptr, std::size_t n, DType dtype, uint64_t seed, float lo, float hi,
                          cudaStream_t stream) {
  switch (dtype) {
    case DType::FP32: return fill_uniform_device(static_cast<float*>(ptr), n, seed, lo, hi, stream);
    case DType::FP16: return fill_uniform_device(static_cast<__half*>(ptr), n, seed, lo, hi, stream);
    case DType::BF16: return fill_uniform_device(static_cast<__nv_bfloat16*>(ptr), n, seed, lo, hi, stream);
    case DType::INT8:
      return fill_ints_device(static_cast<int8_t*>(ptr), n, seed, std::max(int(lo), -128), std::min(int(hi), 127),
                              stream);
    case DType::INT32: return fill_ints_device(static_cast<int32_t*>(ptr), n, seed, int(lo), int(hi), stream);
    case DType::FP8_E4M3: return fill_uniform_device(static_cast<__nv_fp8_e4m3*>(ptr), n, seed, lo, hi, stream);
  }
  return Status::UnsupportedDtype;
}

}  // namespace fs
