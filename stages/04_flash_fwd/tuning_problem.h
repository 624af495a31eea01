// Stage 04: the problem a tuner times its candidates on (v5's tile shapes, v6's split counts): Q, K, V
// and O of the given sizes in stream-ordered workspace, Q, K, V uniform random in [-1, 1] (timing on
// zeros can flatter a kernel), validated and prepared as a call would be, freed when it goes. Host code.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/lib/attention.h"
#include "common/lib/random.h"
#include "common/lib/workspace.h"
#include "launch.cuh"

namespace fs::flash {

class TuningProblem {
 public:
  explicit TuningProblem(cudaStream_t stream) : stream_(stream), buffers_(stream) {}

  // `p` holds the sizes, dtype, mask and scale (its pointers are set here); Q, K, V are drawn from
  // seeds seed, seed + 1, seed + 2.
  Status make(AttentionParams p, uint64_t seed, AttentionProblem* out) {
    const DType dtype = dtype_of(p);
    const int64_t elems[4] = {q_elems(p), kv_elems(p), kv_elems(p), q_elems(p)};
    void* tensors[4] = {};
    for (int i = 0; i < 4; ++i)
      FS_RETURN_IF_ERROR(buffers_.alloc(&tensors[i], std::size_t(elems[i]) * dtype_size(dtype)));
    for (int i = 0; i < 3; ++i)
      FS_RETURN_IF_ERROR(fill_random_device(tensors[i], elems[i], dtype, seed + i, -1.0f, 1.0f, stream_));
    p.q = tensors[0];
    p.k = tensors[1];
    p.v = tensors[2];
    p.o = tensors[3];
    FS_RETURN_IF_ERROR(validate(p, kSupport));
    *out = prepare(p);
    return Status::Success;
  }

 private:
  cudaStream_t stream_;
  WorkspaceSet buffers_;  // freed on the stream when the problem goes
};

}  // namespace fs::flash
