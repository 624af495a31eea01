// Stage 07 attention v9: the launch of v9_fp8.cuh's kernels — Q's and K's tensor maps, the workspace for
// Vᵀ and its map, the transpose, then the attention kernel, both on `stream`. (Its descriptor and C entry
// are in versions.cu.)
#include <cuda_runtime.h>

#include <climits>

#include "common/lib/workspace.h"
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v9_fp8.cuh"

namespace fs::flash_tma {

namespace {

constexpr int kD = 128;
using C = v9::Config<kD>;

// Vᵀ in the workspace as TMA sees it: B·KVH planes of [D][padded Nk], boxes of Bc keys × D rows.
TensorMap3d vt_map(const void* base, int64_t planes, int64_t nk_pad) {
  TensorMap3d m;
  m.plane.base = base;
  m.plane.dtype = DType::FP8_E4M3;
  m.plane.cols = nk_pad;
  m.plane.rows = kD;
  m.plane.ld = nk_pad;
  m.plane.box_cols = C::kBc;
  m.plane.box_rows = kD;
  m.planes = planes;
  m.plane_ld = kD * nk_pad;
  return m;
}

}  // namespace

std::size_t v9_workspace_bytes(const AttentionParams& p) {
  return std::size_t(p.batch * kv_head_count(p)) * std::size_t(p.head_dim) * std::size_t(v9::padded_keys(p.seq_k));
}

Status run_v9(const AttentionProblem& pr, cudaStream_t stream) {
  const AttentionParams& p = pr.p;
  const int64_t planes = map_entries(p) * kv_head_count(p), nk_pad = v9::padded_keys(p.seq_k);
  CUtensorMap tq, tk, tvt;
  FS_RETURN_IF_ERROR(
      encode_tensor_map(head_map(p.q, DType::FP8_E4M3, map_entries(p) * p.heads, p.seq_q, kD, C::kBr), &tq));
  FS_RETURN_IF_ERROR(encode_tensor_map(head_map(p.k, DType::FP8_E4M3, planes, p.seq_k, kD, C::kBc), &tk));
  v9::Fp8Args a{attn::make_args<__nv_fp8_e4m3>(pr, C::kBr), static_cast<__nv_bfloat16*>(p.o), descale(p.v_descale)};
  a.in.o = nullptr;  // O is bf16: a.o
  a.in.scale_log2 *= descale(p.q_descale) * descale(p.k_descale);
  const int64_t blocks = p.batch * p.heads * a.in.q_tiles;
  const int64_t key_tiles = (nk_pad + v9::kTransposeKeys - 1) / v9::kTransposeKeys;
  if (blocks > INT_MAX || planes * key_tiles > INT_MAX) return Status::InvalidSize;  // gridDim.x limit
  return with_workspace(v9_workspace_bytes(p), stream, [&](void* vt) {
    FS_RETURN_IF_ERROR(encode_tensor_map(vt_map(vt, planes, nk_pad), &tvt));
    v9::transpose_v_kernel<kD><<<unsigned(planes * key_tiles), v9::kTransposeThreads, 0, stream>>>(
        static_cast<const uint8_t*>(p.v), static_cast<uint8_t*>(vt), p.seq_k, key_tiles);
    FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
    return launch_config<C>(v9::flash_tma_v9_kernel<C>, dim3(unsigned(blocks)), stream, tq, tk, tvt, a);
  });
}

}  // namespace fs::flash_tma
