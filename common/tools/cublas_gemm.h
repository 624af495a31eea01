// The cuBLAS and cuBLASLt baselines ("kernel 0") for a row-major GemmParams.
//
// cuBLAS is column-major. A row-major M×N matrix C, read column-major, is the N×M matrix Cᵀ, and
// C = op(A)·op(B) is Cᵀ = op(B)ᵀ·op(A)ᵀ: the same call with A and B swapped, M and N swapped, and each
// operand keeping its own transpose flag (a row-major A read column-major is already Aᵀ).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <memory>

#include "common/lib/gemm.h"
#include "common/tools/runner.h"

namespace fs {

// cuBLAS and cuBLASLt scratch: 32 MiB, what PyTorch gives cuBLAS on Hopper and what NVIDIA's cuBLAS
// documentation recommends there (its split-K and stream-K kernels need it at the benchmark sizes).
// Also what stage06_cublaslt_algos gives every algorithm it times.
inline constexpr std::size_t kCublasWorkspaceBytes = 32u << 20;

class CublasGemm : public GemmPeer {
 public:
  // fp32 -> fp32: cublasSgemm, plain FP32 math (no TF32). fp16 or bf16 -> the same type or fp32:
  // cublasGemmEx with fp32 compute. int8 -> int32: cublasLtMatmul with int32 compute and int32 alpha,
  // beta (rounded); its fastest layout is A untransposed, B transposed (both K-contiguous).
  // Throws fs::CudaError when cuBLAS has no kernel for the combination.
  explicit CublasGemm(const GemmParams& p);
  ~CublasGemm() override;
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  // Enqueues C = alpha·op(A)·op(B) + beta·C for `p`, which must have the shape and types given at
  // construction (pointers may differ).
  void run(const GemmParams& p, cudaStream_t stream = nullptr) override;
  const char* name() const override;  // "cublas" or "cublaslt": the benchmark-name prefix

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fs
