// Runs an attention kernel on fresh random inputs and compares it with the fp64 reference: the check
// behind every attention stage's executable and GPU tests.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>

#include "common/lib/kernel.h"
#include "common/tools/compare.h"

namespace fs {

// A problem's shape as the C params hold it (its pointers left null): B, H, Nq, Nk, D, dtype, mask, scale.
AttentionParams attention_shape(int64_t batch, int64_t heads, int64_t seq_q, int64_t seq_k, int64_t head_dim,
                                DType dtype, bool causal = false, float scale = 0.0f);

struct AttentionCheck {
  Status status = Status::Success;
  ErrorStats o, lse;
  int heads_checked = 0;
  bool passed(const Tolerance& o_tol, const Tolerance& lse_tol) const {
    return status == Status::Success && within(o, o_tol) && within(lse, lse_tol);
  }
};

// One problem: random Q, K, V drawn from `seed` (uniform in [-1, 1]), uploaded once, and the fp64
// reference for a subset of heads (all of them when B·H <= max_heads or max_heads = 0; none, for
// timing only, when max_heads < 0).
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
  // Poisons O and LSE, calls the launcher with `bad` params (this fixture's pointers unless `bad`
  // replaces them), waits, and reports whether O and LSE still hold the poison.
  bool untouched_after(const KernelDesc& kernel, const AttentionParams& bad, Status* returned);

 private:
  struct Impl;
  AttentionParams shape_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fs
