#include <cstdint>

#include "cuda_check.h"
#include "random.h"

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
void fill_uniform_device(T* ptr, std::size_t n, uint64_t seed, float lo, float hi, cudaStream_t stream) {
  fill_uniform_kernel<<<kFillBlocks, kFillThreads, 0, stream>>>(ptr, n, seed, lo, hi);
  FS_CUDA_CHECK_LAUNCH();
}

template <class T>
void fill_ints_device(T* ptr, std::size_t n, uint64_t seed, int lo, int hi, cudaStream_t stream) {
  fill_ints_kernel<<<kFillBlocks, kFillThreads, 0, stream>>>(ptr, n, seed, lo, hi);
  FS_CUDA_CHECK_LAUNCH();
}

#define FS_INSTANTIATE_FILL(T)                                                                \
  template void fill_uniform_device<T>(T*, std::size_t, uint64_t, float, float, cudaStream_t); \
  template void fill_ints_device<T>(T*, std::size_t, uint64_t, int, int, cudaStream_t);
FS_INSTANTIATE_FILL(float)
FS_INSTANTIATE_FILL(__half)
FS_INSTANTIATE_FILL(__nv_bfloat16)
FS_INSTANTIATE_FILL(int8_t)
#undef FS_INSTANTIATE_FILL

void fill_uniform_device(void* ptr, std::size_t n, DType dtype, uint64_t seed, float lo, float hi,
                         cudaStream_t stream) {
  switch (dtype) {
    case DType::FP32: return fill_uniform_device(static_cast<float*>(ptr), n, seed, lo, hi, stream);
    case DType::FP16: return fill_uniform_device(static_cast<__half*>(ptr), n, seed, lo, hi, stream);
    case DType::BF16: return fill_uniform_device(static_cast<__nv_bfloat16*>(ptr), n, seed, lo, hi, stream);
  }
}

}  // namespace fs
