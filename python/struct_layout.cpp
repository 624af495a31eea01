// Prints the layout of the C interface's structs (common/lib/flashstages.h) as the compiler lays them
// out: "<struct> <sizeof>", then "<struct>.<field> <offset> <size>" for every field. python/test_ctypes.py
// --layout holds the ctypes mirrors of python/flashstages/_capi.py to it, so a field added to, moved in
// or retyped in the header without its mirror fails a CPU test instead of corrupting a call.
#include <cstddef>
#include <cstdio>

#include "common/lib/flashstages.h"

#define STRUCT(T) std::printf("%s %zu\n", #T, sizeof(T))
#define FIELD(T, f) std::printf("%s.%s %zu %zu\n", #T, #f, offsetof(T, f), sizeof(static_cast<T*>(nullptr)->f))

int main() {
  STRUCT(fs_attention_params);
  FIELD(fs_attention_params, batch);
  FIELD(fs_attention_params, heads);
  FIELD(fs_attention_params, seq_q);
  FIELD(fs_attention_params, seq_k);
  FIELD(fs_attention_params, head_dim);
  FIELD(fs_attention_params, scale);
  FIELD(fs_attention_params, causal);
  FIELD(fs_attention_params, dtype);
  FIELD(fs_attention_params, q);
  FIELD(fs_attention_params, k);
  FIELD(fs_attention_params, v);
  FIELD(fs_attention_params, o);
  FIELD(fs_attention_params, lse);
  FIELD(fs_attention_params, seq_lens);
  FIELD(fs_attention_params, cu_seqlens_q);
  FIELD(fs_attention_params, cu_seqlens_k);
  FIELD(fs_attention_params, max_seq_q);
  FIELD(fs_attention_params, kv_heads);
  FIELD(fs_attention_params, max_seq_k);
  FIELD(fs_attention_params, q_descale);
  FIELD(fs_attention_params, k_descale);
  FIELD(fs_attention_params, v_descale);
  FIELD(fs_attention_params, q_strides);
  FIELD(fs_attention_params, k_strides);
  FIELD(fs_attention_params, v_strides);
  FIELD(fs_attention_params, o_strides);

  STRUCT(fs_attention_bwd_params);
  FIELD(fs_attention_bwd_params, fwd);
  FIELD(fs_attention_bwd_params, d_o);
  FIELD(fs_attention_bwd_params, dq);
  FIELD(fs_attention_bwd_params, dk);
  FIELD(fs_attention_bwd_params, dv);
  FIELD(fs_attention_bwd_params, delta);
  FIELD(fs_attention_bwd_params, deterministic);

  STRUCT(fs_gemm_params);
  FIELD(fs_gemm_params, m);
  FIELD(fs_gemm_params, n);
  FIELD(fs_gemm_params, k);
  FIELD(fs_gemm_params, trans_a);
  FIELD(fs_gemm_params, trans_b);
  FIELD(fs_gemm_params, ab_dtype);
  FIELD(fs_gemm_params, c_dtype);
  FIELD(fs_gemm_params, alpha);
  FIELD(fs_gemm_params, beta);
  FIELD(fs_gemm_params, a);
  FIELD(fs_gemm_params, lda);
  FIELD(fs_gemm_params, b);
  FIELD(fs_gemm_params, ldb);
  FIELD(fs_gemm_params, c);
  FIELD(fs_gemm_params, ldc);

  STRUCT(fs_kernel_info);
  FIELD(fs_kernel_info, entry);
  FIELD(fs_kernel_info, stage);
  FIELD(fs_kernel_info, version);
  FIELD(fs_kernel_info, technique);
  FIELD(fs_kernel_info, problem);
  FIELD(fs_kernel_info, in_dtypes);
  FIELD(fs_kernel_info, out_dtypes);
  FIELD(fs_kernel_info, num_head_dims);
  FIELD(fs_kernel_info, head_dims);
  FIELD(fs_kernel_info, max_head_dim);
  FIELD(fs_kernel_info, num_archs);
  FIELD(fs_kernel_info, archs);
  FIELD(fs_kernel_info, smem_bytes);
  FIELD(fs_kernel_info, strided);
  FIELD(fs_kernel_info, ptx_arch);
  FIELD(fs_kernel_info, keeps_scores);

  STRUCT(fs_pick);
  FIELD(fs_pick, kernel);
  FIELD(fs_pick, why);
  return 0;
}
