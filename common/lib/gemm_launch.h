// What every GEMM launch (stages 06 and 07) does around its kernel: pick the instance compiled for the
// transposes, launch, and turn a CUDA error into Status::CudaError; and the facts about the operands
// a launcher picks an instance by (copy widths, C's pair stores). Host code, header-only: each stage's
// object library instantiates it for its own kernels.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/lib/cuda_check.h"
#include "common/lib/dispatch.h"
#include "common/lib/gemm.h"

namespace fs::gemm {

// `Version` has a static member template run<kTransA, kTransB>(params, stream, extra...) that enqueues
// the kernel and returns the first error of its own setup calls (cudaSuccess when there are none).
// `extra` is whatever the launcher prepared for every instance (stage 07: the operands' tensor maps).
template <class Version, class... Extra>
Status launch_transposes(const GemmParams& p, cudaStream_t stream, const Extra&... extra) {
  return dispatch_bool(p.trans_a, [&](auto ta) {
    return dispatch_bool(p.trans_b, [&](auto tb) {
      FS_RETURN_IF_CUDA_ERROR((Version::template run<decltype(ta)::value, decltype(tb)::value>(p, stream, extra...)));
      FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());  // a refused launch shows up here
      return Status::Success;
    });
  });
}

// The dynamic shared memory of the largest of the four transpose instances of Config<kTransA, kTransB>.
template <template <bool, bool> class Config>
constexpr std::size_t max_smem_bytes() {
  const std::size_t s[] = {Config<false, false>::kSmemBytes, Config<false, true>::kSmemBytes,
                           Config<true, false>::kSmemBytes, Config<true, true>::kSmemBytes};
  std::size_t m = 0;
  for (std::size_t x : s) m = x > m ? x : m;
  return m;
}

// Blocks of a 1D grid with one block per bm×bn tile of C (the kernels derive the tile from blockIdx.x,
// whose limit, 2^31 - 1, no real matrix reaches).
inline unsigned tile_count(const GemmParams& p, int bm, int bn) {
  return static_cast<unsigned>(((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn));
}

// Whether 16-byte vector copies of a matrix stay aligned: the base is, and so is every row start.
inline bool rows_16b_aligned(const void* ptr, int64_t ld, std::size_t elem_bytes) {
  return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0 && (ld * int64_t(elem_bytes)) % 16 == 0;
}

// The widest copy, 16, 8 or 4 bytes, that keeps every row of a matrix aligned (the base and the row
// stride ld·elem_bytes both divisible by it); elem_bytes when none does (v9, v10).
inline int copy_bytes(const void* ptr, int64_t ld, std::size_t elem_bytes) {
  for (int w : {16, 8, 4})
    if (reinterpret_cast<std::uintptr_t>(ptr) % w == 0 && (ld * int64_t(elem_bytes)) % w == 0) return w;
  return int(elem_bytes);
}

// Whether pairs of C elements at even columns stay aligned: the base is 2-element aligned, ldc even.
inline bool pairs_aligned(const void* ptr, int64_t ld, std::size_t elem_bytes) {
  return reinterpret_cast<std::uintptr_t>(ptr) % (2 * elem_bytes) == 0 && ld % 2 == 0;
}

// The copy width both operands allow (gemm::copy_bytes), as a template argument: f(integral_constant<W>)
// for W = 16, 8, 4, or kElem (element copies).
template <int kElem, class F>
cudaError_t dispatch_copy_bytes(int w, F&& f) {
  switch (w) {
    case 16: return f(std::integral_constant<int, 16>{});
    case 8: return f(std::integral_constant<int, 8>{});
    case 4: return f(std::integral_constant<int, 4>{});
    default: return f(std::integral_constant<int, kElem>{});
  }
}

inline int operand_copy_bytes(const GemmParams& p, std::size_t elem_bytes) {
  return std::min(gemm::copy_bytes(p.a, p.lda, elem_bytes), gemm::copy_bytes(p.b, p.ldb, elem_bytes));
}

// Kernels that need more than the default 48 KB of shared memory (stage 06 v9 and v10, stage 07) opt
// in before each launch.
template <class Kernel>
cudaError_t allow_smem(Kernel kernel, std::size_t smem) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
}

}  // namespace fs::gemm
