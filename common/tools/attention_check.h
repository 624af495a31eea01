// Runs an attention kernel, forward or backward, on fresh random inputs and compares it with the fp64
// reference: the check behind every attention stage's executable and GPU tests.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/lib/kernel.h"
#include "common/tools/compare.h"

namespace fs {

// `kernel` with another run: a hook into a tuned version (a forced tile shape, split count or plan)
// checked or timed as a version of its own, with the version's descriptor (what it takes, where it
// runs) unchanged.
inline KernelDesc kernel_with_run(const KernelDesc& kernel, AttentionRun run) {
  KernelDesc k = kernel;
  k.run_attention = run;
  return k;
}

// A problem's shape as the C params hold it (its pointers left null): B, H, Nq, Nk, D, dtype, mask, scale.
AttentionParams attention_shape(int64_t batch, int64_t heads, int64_t seq_q, int64_t seq_k, int64_t head_dim,
                                DType dtype, bool causal = false, float scale = 0.0f);
// The shape, pointing at these tensors (lse may be null).
AttentionParams attention_on(const AttentionParams& shape, const void* q, const void* k, const void* v, void* o,
                             float* lse);

// ---- Strided layouts (fs_attention_params' strides) ---------------------------------------------
// Where a test puts the tensors of a problem: each in a device buffer of the layout, from an element
// offset on, addressed through the strides of Q, K, V and O (the gradients take theirs: dQ Q's, dK K's,
// dV V's, dO O's). Several tensors may share a buffer (Q, K, V slices of one packed QKV tensor).
enum LayoutTensor { kLayoutQ, kLayoutK, kLayoutV, kLayoutO, kLayoutDO, kLayoutDQ, kLayoutDK, kLayoutDV };
struct TensorSpot {
  int buffer = -1;      // index into StridedLayout::buffer_elems
  int64_t offset = 0;   // elements from the buffer's start to the tensor's element (0, 0, 0, 0)
};
struct StridedLayout {
  const char* name = "";
  TensorStrides q{}, k{}, v{}, o{};      // {batch, head, row}, as fs_attention_params' q_strides ...
  TensorSpot spot[8];                    // by LayoutTensor
  std::vector<int64_t> buffer_elems;     // each buffer's size, in elements of the tensors placed in it
};
// [B, N, H, D] (FlashAttention's and most models' layout): every tensor in a buffer of its own, the rows
// of all heads of one position side by side.
StridedLayout bnhd_layout(const AttentionParams& shape);
// Q, K, V as slices of one [B, N, H + 2·KVH, D] tensor (a fused QKV projection's output), and dQ, dK,
// dV of a second one; O and dO [B, N, H, D] with every row padded by 16 bytes.
StridedLayout packed_qkv_layout(const AttentionParams& shape);
// The shape with the layout's strides in its q_strides ... o_strides.
AttentionParams with_strides(const AttentionParams& shape, const StridedLayout& layout);
// A contiguous [B, heads, N, D] tensor's bytes (elements of `element` bytes) written into a strided
// buffer's bytes from element `offset` on (scatter), or read back out of it (gather).
void scatter_strided(const unsigned char* bhnd, unsigned char* buffer, const int64_t (&dims)[4], std::size_t element,
                     int64_t offset, const TensorStrides& strides);
void gather_strided(const unsigned char* buffer, unsigned char* bhnd, const int64_t (&dims)[4], std::size_t element,
                    int64_t offset, const TensorStrides& strides);

struct AttentionCheck {
  Status status = Status::Success;
  ErrorStats o, lse;
  int heads_checked = 0;
  bool outside_written = false;  // run_strided: a byte of a buffer outside the outputs' views changed
  bool passed(const Tolerance& o_tol, const Tolerance& lse_tol) const {
    return status == Status::Success && within(o, o_tol) && within(lse, lse_tol) && !outside_written;
  }
};

// One problem: random Q, K, V drawn from `seed` (uniform in [-1, 1]), uploaded once, and the fp64
// reference for a subset of heads (all of them when B·H <= max_heads or max_heads = 0; none, for
// timing only, when max_heads < 0). fp8 inputs stand for such values, each tensor stored with a scale of
// its own, which shape() and params() carry as q_descale, k_descale, v_descale; O is then bf16.
class AttentionFixture {
 public:
  AttentionFixture(const AttentionParams& shape, uint64_t seed, int max_heads = 0);
  ~AttentionFixture();

  const AttentionParams& shape() const { return shape_; }
  // The shape, pointing at this fixture's device tensors.
  AttentionParams params() const;
  // Fills O and LSE with NaN bytes, so that an element a kernel never writes fails the comparison.
  void poison_outputs();
  // Downloads O and LSE (after the caller has synchronized) and compares every checked head.
  AttentionCheck compare() const;
  // Poisons, launches on `stream`, waits, compares.
  AttentionCheck run(const KernelDesc& kernel, cudaStream_t stream = nullptr);
  // The same problem laid out by `layout`: Q, K, V copied into its buffers (every other byte poisoned),
  // launched with its strides, O gathered back out of its view and compared as run() compares; every
  // byte outside O's view (the inputs, the padding, the other slices) must be as it was.
  AttentionCheck run_strided(const KernelDesc& kernel, const StridedLayout& layout, cudaStream_t stream = nullptr);
  // Poisons O and LSE, calls the launcher with `bad` params (this fixture's pointers unless `bad`
  // replaces them), waits, and reports whether O and LSE still hold the poison.
  bool untouched_after(const KernelDesc& kernel, const AttentionParams& bad, Status* returned);

 private:
  struct Impl;
  AttentionParams shape_;
  std::unique_ptr<Impl> impl_;
};

struct AttentionBwdCheck {
  Status status = Status::Success;
  ErrorStats dq, dk, dv, delta;  // delta: empty (count 0) when the launch did not ask for it
  bool delta_written = false;    // the launch did not ask for delta, yet its buffer changed
  bool outside_written = false;  // run_strided: a byte outside the gradients' views changed
  int heads_checked = 0;
  bool passed(const Tolerance& t) const {
    return status == Status::Success && within_gradient(dq, t) && within_gradient(dk, t) &&
           within_gradient(dv, t) && (delta.count == 0 || within_gradient(delta, t)) && !delta_written &&
           !outside_written;
  }
};

// The LSE a head gets when the backward fixture does not check it (and the benchmarks' LSE): |scale|·D,
// at least every score of a row, since the inputs lie in [-1, 1] and so |q·k| <= D; then
// P = exp(scale·q·k - LSE) <= 1, as in a real backward pass.
double standin_lse(const AttentionParams& shape);

// One backward problem: random Q, K, V and dO drawn from `seed` (uniform in [-1, 1]); the forward's O
// and LSE from the fp64 reference (O rounded to the dtype, LSE to fp32), uploaded as the kernel's
// inputs; the fp64 reference dQ, dK, dV and delta for a subset of K/V heads, picked as AttentionFixture
// picks heads (max_heads counts K/V heads), each with every query head of its group (grouped-query
// attention: dK and dV are the sums over the group, ref::attention_backward_group). Heads that are not
// checked get stand-ins instead of the fp64 forward, which at the executables' sizes would take the
// host minutes per head: O random, LSE = standin_lse(). The kernels' time does not depend on the values.
class AttentionBwdFixture {
 public:
  AttentionBwdFixture(const AttentionParams& shape, uint64_t seed, int max_heads = 0);
  ~AttentionBwdFixture();

  const AttentionParams& shape() const { return shape_; }
  // The problem, pointing at this fixture's device tensors: delta asked for, deterministic = 0.
  AttentionBwdParams params() const;
  // Fills dQ, dK, dV and delta with NaN bytes, so that an element a kernel never writes fails the check.
  void poison_outputs();
  // Downloads the outputs (after the caller has synchronized) and compares every checked head; delta
  // when `with_delta`, and otherwise checks that its buffer still holds the poison.
  AttentionBwdCheck compare(bool with_delta = true) const;
  // Poisons, launches `p` (params() or a variant of it: delta null, deterministic) on `stream`, waits,
  // compares.
  AttentionBwdCheck run(const KernelDesc& kernel, const AttentionBwdParams& p, cudaStream_t stream = nullptr);
  AttentionBwdCheck run(const KernelDesc& kernel) { return run(kernel, params()); }
  // The same problem laid out by `layout` (p: params() or a variant of it, whose flags and delta are
  // kept and whose tensors are replaced by the layout's): Q, K, V, O, dO copied into its buffers (every
  // other byte poisoned), dQ, dK, dV gathered back out of their views and compared as run() compares;
  // every byte outside their views must be as it was.
  AttentionBwdCheck run_strided(const KernelDesc& kernel, const AttentionBwdParams& p, const StridedLayout& layout,
                                cudaStream_t stream = nullptr);
  // Poisons the outputs, calls the launcher with `bad` params, waits, and reports whether dQ, dK, dV and
  // delta still hold the poison.
  bool untouched_after(const KernelDesc& kernel, const AttentionBwdParams& bad, Status* returned);
  // dQ's, dK's and dV's bytes as the last launch left them (after the caller has synchronized).
  std::vector<unsigned char> dq_bytes() const;
  std::vector<unsigned char> dk_bytes() const;
  std::vector<unsigned char> dv_bytes() const;

 private:
  struct Impl;
  AttentionParams shape_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fs
