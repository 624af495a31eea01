#include "common/tools/cublas_gemm.h"

#include <cublasLt.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "common/tools/check.h"
#include "common/tools/device_buffer.h"

namespace fs {

namespace {

cudaDataType_t cuda_type(int32_t dtype) {
  switch (dtype) {
    case FS_FP32: return CUDA_R_32F;
    case FS_FP16: return CUDA_R_16F;
    case FS_BF16: return CUDA_R_16BF;
    case FS_INT8: return CUDA_R_8I;
    case FS_INT32: return CUDA_R_32I;
    default: throw CudaError(std::string("cuBLAS baseline: no CUDA type for dtype ") + dtype_name(DType(dtype)));
  }
}

}  // namespace

struct CublasGemm::Impl {
  bool lt = false;
  cublasHandle_t handle = nullptr;
  cublasLtHandle_t lt_handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout_b = nullptr, layout_a = nullptr, layout_c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  DeviceBuffer<unsigned char> workspace;
};

CublasGemm::CublasGemm(const GemmParams& p) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  // Column-major view: the first operand is our B, the second our A; both keep their own transpose.
  const cublasOperation_t op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (p.ab_dtype != FS_INT8) {
    // Set up as PyTorch sets up its handle for torch.matmul: default math (no TF32 for fp32; for fp16
    // and bf16, reduced-precision reductions allowed, PyTorch's default) and a workspace of its own on
    // the handle, kCublasWorkspaceBytes, the size PyTorch gives cuBLAS on this GPU (plots/matmul_bench.py
    // reads PyTorch's size back and records it beside its timings).
    FS_CUBLAS_CHECK(cublasCreate(&m.handle));
    FS_CUBLAS_CHECK(cublasSetMathMode(m.handle, CUBLAS_DEFAULT_MATH));
    m.workspace = DeviceBuffer<unsigned char>(kCublasWorkspaceBytes);
    return;
  }
  m.lt = true;
  if (p.c_dtype != FS_INT32) throw CudaError("cuBLASLt int8 baseline: C must be int32");
  FS_CUBLAS_CHECK(cublasLtCreate(&m.lt_handle));
  FS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&m.desc, CUBLAS_COMPUTE_32I, CUDA_R_32I));
  FS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof op_b));
  FS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof op_a));
  // Each matrix as stored, read column-major: a row-major R×C block with leading dimension ld is a
  // column-major C×R one.
  const uint64_t b_rows = p.trans_b ? p.k : p.n, b_cols = p.trans_b ? p.n : p.k;
  const uint64_t a_rows = p.trans_a ? p.m : p.k, a_cols = p.trans_a ? p.k : p.m;
  FS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&m.layout_b, CUDA_R_8I, b_rows, b_cols, p.ldb));
  FS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&m.layout_a, CUDA_R_8I, a_rows, a_cols, p.lda));
  FS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&m.layout_c, CUDA_R_32I, p.n, p.m, p.ldc));

  cublasLtMatmulPreference_t pref = nullptr;
  FS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const std::size_t ws = kCublasWorkspaceBytes;
  FS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(m.lt_handle, m.desc, m.layout_b, m.layout_a, m.layout_c,
                                                           m.layout_c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0)
    throw CudaError("cuBLASLt has no int8 kernel for this layout (its int8 path wants A untransposed, B transposed)");
  m.algo = result.algo;
  m.workspace = DeviceBuffer<unsigned char>(kCublasWorkspaceBytes);
}

CublasGemm::~CublasGemm() {
  Impl& m = *impl_;
  if (m.layout_c) cublasLtMatrixLayoutDestroy(m.layout_c);
  if (m.layout_a) cublasLtMatrixLayoutDestroy(m.layout_a);
  if (m.layout_b) cublasLtMatrixLayoutDestroy(m.layout_b);
  if (m.desc) cublasLtMatmulDescDestroy(m.desc);
  if (m.lt_handle) cublasLtDestroy(m.lt_handle);
  if (m.handle) cublasDestroy(m.handle);
}

const char* CublasGemm::name() const { return impl_->lt ? "cublaslt" : "cublas"; }

void CublasGemm::run(const GemmParams& p, cudaStream_t stream) {
  Impl& m = *impl_;
  const cublasOperation_t op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (m.lt) {
    const int32_t alpha = static_cast<int32_t>(std::lround(p.alpha)), beta = static_cast<int32_t>(std::lround(p.beta));
    FS_CUBLAS_CHECK(cublasLtMatmul(m.lt_handle, m.desc, &alpha, p.b, m.layout_b, p.a, m.layout_a, &beta, p.c,
                                   m.layout_c, p.c, m.layout_c, &m.algo, m.workspace.get(), m.workspace.bytes(),
                                   stream));
    return;
  }
  // cublasSetStream puts the handle back on cuBLAS's default workspace pool: set ours again after it.
  FS_CUBLAS_CHECK(cublasSetStream(m.handle, stream));
  FS_CUBLAS_CHECK(cublasSetWorkspace(m.handle, m.workspace.get(), m.workspace.bytes()));
  // Cᵀ (N×M) = op(B)ᵀ (N×K) · op(A)ᵀ (K×M), all column-major.
  if (p.ab_dtype == FS_FP32 && p.c_dtype == FS_FP32) {
    FS_CUBLAS_CHECK(cublasSgemm(m.handle, op_b, op_a, int(p.n), int(p.m), int(p.k), &p.alpha,
                                static_cast<const float*>(p.b), int(p.ldb), static_cast<const float*>(p.a),
                                int(p.lda), &p.beta, static_cast<float*>(p.c), int(p.ldc)));
    return;
  }
  FS_CUBLAS_CHECK(cublasGemmEx(m.handle, op_b, op_a, int(p.n), int(p.m), int(p.k), &p.alpha, p.b,
                               cuda_type(p.ab_dtype), int(p.ldb), p.a, cuda_type(p.ab_dtype), int(p.lda), &p.beta,
                               p.c, cuda_type(p.c_dtype), int(p.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace fs
