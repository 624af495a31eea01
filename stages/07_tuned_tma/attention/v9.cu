// Stage 07 attention v9: the launch of v9_fp8.cuh's kernels — Q's and K's tensor maps, the workspace for
// Vᵀ and its map, the transpose, then the attention kernel, both on `stream` — its descriptor and its C
// entry.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v9_fp8.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace flash_tma {

namespace {

// fp8 Q, K, V at D = 128 (one 128-byte swizzle row), dense batches, any layout with D contiguous (the
// maps and the pre-pass take the strides; every stride a multiple of 16 bytes).
constexpr AttentionSupport kFp8Support =
    attention_support<Dtypes<DType::FP8_E4M3>, HeadDims<128>>(16, /*varlen=*/false, /*strided=*/true);

constexpr int kD = 128;
using C = v9::Config<kD>;

// Vᵀ in the workspace as TMA sees it: B × KVH planes of [D][padded Nk], contiguous, named by (K/V head,
// batch entry) as the K map's planes are; boxes of Bc keys × D rows.
TensorMap4d vt_map(const void* base, int64_t batch, int64_t kv_heads, int64_t nk_pad) {
  TensorMap4d m;
  m.plane.base = base;
  m.plane.dtype = DType::FP8_E4M3;
  m.plane.cols = nk_pad;
  m.plane.rows = kD;
  m.plane.ld = nk_pad;
  m.plane.box_cols = C::kBc;
  m.plane.box_rows = kD;
  m.heads = kv_heads;
  m.head_ld = kD * nk_pad;
  m.batches = batch;
  m.batch_ld = kv_heads * kD * nk_pad;
  return m;
}

// v9's workspace: Vᵀ in fp8, [B·KVH][D][Nk rounded up to 32] (v9_fp8.cuh). For validated params.
std::size_t v9_workspace_bytes(const AttentionParams& p) {
  return std::size_t(p.batch * kv_head_count(p)) * std::size_t(p.head_dim) * std::size_t(v9::padded_keys(p.seq_k));
}

Status run_v9(const AttentionProblem& pr, cudaStream_t stream) {
  const AttentionParams& p = pr.p;
  const int64_t planes = map_entries(p) * kv_head_count(p), nk_pad = v9::padded_keys(p.seq_k);
  CUtensorMap tq, tk, tvt;
  FS_RETURN_IF_ERROR(encode_tensor_map(head_map(p, Tensor::Q, C::kBr), &tq));
  FS_RETURN_IF_ERROR(encode_tensor_map(head_map(p, Tensor::K, C::kBc), &tk));
  v9::Fp8Args a{attn::make_args<__nv_fp8_e4m3>(pr, C::kBr), static_cast<__nv_bfloat16*>(p.o), descale(p.v_descale)};
  a.in.o = nullptr;  // O is bf16: a.o
  a.in.scale_log2 *= descale(p.q_descale) * descale(p.k_descale);
  const int64_t blocks = p.batch * p.heads * a.in.q_tiles;
  const int64_t key_tiles = (nk_pad + v9::kTransposeKeys - 1) / v9::kTransposeKeys;
  if (blocks > INT_MAX || planes * key_tiles > INT_MAX) return Status::InvalidSize;  // gridDim.x limit
  return with_workspace(v9_workspace_bytes(p), stream, [&](void* vt) {
    FS_RETURN_IF_ERROR(encode_tensor_map(vt_map(vt, map_entries(p), kv_head_count(p), nk_pad), &tvt));
    v9::transpose_v_kernel<kD><<<unsigned(planes * key_tiles), v9::kTransposeThreads, 0, stream>>>(
        static_cast<const uint8_t*>(p.v), a.in.v_strides, kv_head_count(p), static_cast<uint8_t*>(vt), p.seq_k,
        key_tiles);
    FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
    return launch_config<C>(v9::flash_tma_v9_kernel<C>, dim3(unsigned(blocks)), stream, tq, tk, tvt, a);
  });
}

// The LSE and Vᵀ's workspace (none for params it would refuse); O in bf16, not the fp8 it reads.
std::size_t v9_extra_bytes(const AttentionParams& p) {
  return lse_extra_bytes(p) + (validate(p, kFp8Support) == Status::Success ? v9_workspace_bytes(p) : 0);
}
constexpr KernelDesc writes_bf16(KernelDesc k) {
  k.info.out_dtypes = dtype_bit(DType::BF16);
  return k;
}

}  // namespace

}  // namespace flash_tma

const KernelDesc kFlashTmaV9 = flash_tma::writes_bf16(attention_kernel(
    {"fs_flash_fwd_tma_v9", "stage07/attention", "v9",
     "v3 on fp8 (e4m3) Q, K, V with per-tensor scales: wgmma k32 at twice the fp16 rate, V transposed by a pre-pass, P in fp8, O in bf16"},
    flash_tma::kFp8Support, kStageArchs, flash_tma::v9::Config<128>::kSmemBytes, flash_tma::run_v9,
    flash_tma::v9_extra_bytes));

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v9, fs::kFlashTmaV9)
