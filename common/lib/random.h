// Seeded random data. One counter-based generator serves the host and the device, so element i of a
// tensor drawn with seed s is the same value wherever it was drawn, and every draw is reproducible.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "common/lib/dtype.h"
#include "common/lib/numeric.h"
#include "common/lib/status.h"

namespace fs {

FS_HD inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) with 24 random bits, from (seed, index) alone.
FS_HD inline float uniform01(uint64_t seed, uint64_t index) {
  return static_cast<float>(splitmix64(splitmix64(seed) ^ index) >> 40) * (1.0f / 16777216.0f);
}

// Uniform reals in [lo, hi), rounded to T.
template <class T>
std::vector<T> random_uniform(std::size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = from_float<T>(lo + (hi - lo) * uniform01(seed, i));
  return out;
}

// Uniform integers in [lo, hi], stored as T: every product and short sum of them is exact in fp16,
// so a GEMM on them must match the reference bit for bit.
FS_HD inline int uniform_int(uint64_t seed, uint64_t index, int lo, int hi) {
  const int value = lo + static_cast<int>(uniform01(seed, index) * static_cast<float>(hi - lo + 1));
  return value > hi ? hi : value;
}

template <class T>
std::vector<T> random_ints(std::size_t n, uint64_t seed, int lo, int hi) {
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = from_float<T>(static_cast<float>(uniform_int(seed, i, lo, hi)));
  return out;
}

// The same draws, written on the device (on `stream`): for benchmark-sized tensors and the tuner's
// problems. Uniform reals for float, __half and __nv_bfloat16; integers for any element type.
template <class T>
Status fill_uniform_device(T* ptr, std::size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f,
                           cudaStream_t stream = nullptr);
template <class T>
Status fill_ints_device(T* ptr, std::size_t n, uint64_t seed, int lo, int hi, cudaStream_t stream = nullptr);

// A tensor of run-time dtype: uniform reals in [lo, hi) for fp32/fp16/bf16, for int8 and int32 the
// integers in [lo, hi] (int8 clamped to its range).
Status fill_random_device(void* ptr, std::size_t n, DType dtype, uint64_t seed, float lo = -1.0f,
                          float hi = 1.0f, cudaStream_t stream = nullptr);

}  // namespace fs
