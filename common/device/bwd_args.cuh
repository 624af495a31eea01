// flashstages — the backward's launch arguments: what the kernels of stage 05 (every version from v1
// on; v1: T = float, v2 on: __half, __nv_bfloat16) and of stage 07's backward rung take, and how a
// launch fills them in from the validated problem. Shared by both backward stages (and by the delta
// preprocess, bwd_preprocess.cuh).
#pragma once

#include <cstdint>

#include "common/device/attention.cuh"
#include "common/lib/attention.h"

namespace fs::bwd {

// Tensors: Q, dO, dQ [B·H, Nq, D], K, V, dK, dV [B·KVH, Nk, D], LSE and delta [B·H, Nq] for dense and
// padded batches; [H, total, D] and [KVH, total, D] for packed ones (seq_q, seq_k the totals), as the
// forward takes them (fs_attention_params). The kernels that take strides (v10's K/V kernel, the
// deterministic pair, the preprocess and the dQ conversion) address Q, K, V, O and the gradients
// through them (q_strides ...: dQ has Q's, dK K's, dV V's, dO O's); LSE, delta and dq_accum are
// always contiguous, addressed by the row index (attn::Sequence::q_row0). Grouped-query attention: flat query head bh reads K/V head
// bh / group (common/lib/attention.h), so K/V head kvh serves query heads kvh·group .. kvh·group +
// group - 1, and dK, dV of kvh sum theirs. The fields from `heads` on are the ones attn::sequence_of
// and attn::key_block_of read (common/device/attention.cuh): where an entry's rows are, and its lengths.
template <class T>
struct Args {
  const T* __restrict__ q;
  const T* __restrict__ k;
  const T* __restrict__ v;
  const T* __restrict__ d_o;
  const float* __restrict__ lse;    // natural log, from the forward
  const float* __restrict__ delta;  // rowsum(dO ∘ O), from the preprocess; null where the kernel recomputes it
  const T* __restrict__ o;          // the forward's output: read by the kernel only where it recomputes delta
  float* __restrict__ dq_accum;     // v2's atomic path: [B·H, Nq, D] fp32, zeroed, Σ_j dS_ij K_j; else null
  T* __restrict__ dq;               // v1's atomic path adds into it (zeroed first)
  T* __restrict__ dk;
  T* __restrict__ dv;
  int64_t seq_q, seq_k;
  int64_t group;     // G = H / KVH query heads per K/V head (1: multi-head attention)
  float scale;       // dQ = scale · dS K, dK = scale · dSᵀ Q; may be negative
  float scale_log2;  // scale · log2(e): P = exp2(scale_log2 · S - LSE · log2(e))
  bool causal;       // query i sees keys j <= i + (Nk - Nq), per entry
  int64_t heads;
  int64_t max_seq_q, max_seq_k;  // the most query and key rows of one entry: they size the grids
  const int32_t* __restrict__ seq_lens;      // [B] or null
  const int32_t* __restrict__ cu_seqlens_q;  // [B+1] or null (then cu_seqlens_k is null too)
  const int32_t* __restrict__ cu_seqlens_k;
  TensorStrides q_strides, k_strides, v_strides, o_strides;  // element strides {batch, head, row} (strides_of)
  bool contiguous;  // every tensor in the contiguous layout: a dense row's offset is its row index times D
};

// The arguments of a validated problem, delta where the launch keeps it, no dQ workspace yet.
template <class T>
Args<T> make_args(const AttentionBwdProblem& pr, const float* delta) {
  const AttentionParams& p = pr.fwd.p;
  Args<T> a;
  a.q = static_cast<const T*>(p.q);
  a.k = static_cast<const T*>(p.k);
  a.v = static_cast<const T*>(p.v);
  a.d_o = static_cast<const T*>(pr.p.d_o);
  a.lse = p.lse;
  a.delta = delta;
  a.o = static_cast<const T*>(p.o);
  a.dq_accum = nullptr;
  a.dq = static_cast<T*>(pr.p.dq);
  a.dk = static_cast<T*>(pr.p.dk);
  a.dv = static_cast<T*>(pr.p.dv);
  a.seq_q = p.seq_q;
  a.seq_k = p.seq_k;
  a.group = group_size(p);
  a.scale = pr.fwd.scale;
  a.scale_log2 = pr.fwd.scale * attn::kLog2e;
  a.causal = p.causal != 0;
  a.heads = p.heads;
  a.max_seq_q = pr.fwd.max_seq_q;
  a.max_seq_k = pr.fwd.max_seq_k;
  a.seq_lens = p.seq_lens;
  a.cu_seqlens_q = p.cu_seqlens_q;
  a.cu_seqlens_k = p.cu_seqlens_k;
  a.q_strides = strides_of(p, Tensor::Q);
  a.k_strides = strides_of(p, Tensor::K);
  a.v_strides = strides_of(p, Tensor::V);
  a.o_strides = strides_of(p, Tensor::O);
  a.contiguous = is_contiguous(p);
  return a;
}

}  // namespace fs::bwd
