// Runs an attention kernel on fresh random inputs and compares it with the fp64 reference: the check
// behind every stage's executable and GPU tests.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "attention_kernel.h"
#include "compare.h"
#include "device_buffer.h"

namespace fs {

struct AttentionShape {
  int64_t batch = 1, heads = 1, seq_q = 1, seq_k = 1, head_dim = 64;
  bool causal = false;
  float scale = 0.0f;  // 0: 1/sqrt(D)
  DType dtype = DType::FP32;
};

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
class AttentionProblem {
 public:
  AttentionProblem(const AttentionShape& shape, uint64_t seed, int max_heads = 0);
  ~AttentionProblem();

  const AttentionShape& shape() const { return shape_; }
  // Params pointing at this problem's device tensors.
  AttentionParams params() const;
  // Poisons O and LSE, launches, waits, compares every checked head with the reference.
  AttentionCheck run(const AttentionKernel& kernel);
  // Poisons O and LSE, calls the launcher with `bad` params (this problem's pointers unless `bad`
  // replaces them), waits, and reports whether O and LSE still hold the poison.
  bool untouched_after(const AttentionKernel& kernel, const AttentionParams& bad, Status* returned);

 private:
  struct Impl;
  AttentionShape shape_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fs
