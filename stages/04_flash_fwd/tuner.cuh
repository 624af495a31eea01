// Stage 04: what v5's tuner (tile shapes) and v6's (tile shapes and split counts) share, host code:
// the table of a head_dim's tile shapes (tile_shapes.cuh) in the form a tuner keeps them, whether a
// shape fits the current GPU, and the problem a tuner times its candidates on. The timing and the
// memory of choices are common/lib/tuner.h's.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/lib/attention.h"
#include "common/lib/device.h"
#include "common/lib/random.h"
#include "common/lib/workspace.h"
#include "launch.cuh"
#include "tile_shapes.cuh"

namespace fs::flash {

// The table a tuner keeps for a head_dim, built once from its tile shapes: make(TileShapes<D>'s
// ShapeList) for the head_dim D; empty for a head_dim the stage does not take.
template <class Entry, class Make>
const std::vector<Entry>& shape_table(int64_t head_dim, Make make) {
  static const std::vector<Entry> none;
  const std::vector<Entry>* found = &none;
  HeadDimList::dispatch(head_dim, [&](auto d) {
    static const std::vector<Entry> list = make(typename TileShapes<decltype(d)::value>::type{});
    found = &list;
    return Status::Success;
  });
  return *found;
}

// Whether a block that asks for `smem_bytes` of shared memory runs on the current GPU.
inline bool fits_here(std::size_t smem_bytes) {
  DeviceProps dev;
  return current_device(&dev) == Status::Success && smem_bytes <= dev.smem_per_block_optin;
}

// The problem a tuner times its candidates on: Q, K, V and O of the given sizes in stream-ordered
// workspace, Q, K, V uniform random in [-1, 1] (timing on zeros can flatter a kernel), validated and
// prepared as a call would be, freed when it goes.
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
