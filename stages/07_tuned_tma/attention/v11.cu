// Stage 07 attention v11: the launch of v11_persistent.cuh's kernel — at most one block per SM, over a
// tile counter zeroed on the launch's stream just before it — its descriptor and its C entry.
#include <algorithm>
#include <climits>

#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v11_persistent.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace flash_tma {

namespace {

// v11 with `blocks` persistent blocks (at most one per tile) on its tile configuration for the problem's
// head_dim (v7's, with v11's second Q buffer where it fits, its barriers and its slots). The counter is a stream-ordered 4-byte workspace,
// zeroed before the kernel and freed after it on the same stream.
Status run_v11_blocks(const AttentionProblem& pr, int64_t blocks, cudaStream_t stream) {
  return with_dtype_and_dim(pr, [&](auto t, auto d) {
    using T = typename decltype(t)::type;
    using C = v11::Config<decltype(d)::value>;
    CUtensorMap tq, tk, tv;
    FS_RETURN_IF_ERROR(encode_maps<C>(pr, &tq, &tk, &tv));
    const attn::Args<T> a = attn::make_args<T>(pr, C::kBr);
    const int64_t tiles = pr.p.batch * pr.p.heads * a.q_tiles;  // attn::locate's, as every version's grid
    if (tiles > INT_MAX) return Status::InvalidSize;  // the tile slot holds a tile index in an int32
    const dim3 grid(unsigned(std::min(blocks, tiles)));
    return with_workspace(sizeof(unsigned int), stream, [&](void* ws) {
      unsigned int* counter = static_cast<unsigned int*>(ws);
      FS_RETURN_IF_CUDA_ERROR(cudaMemsetAsync(counter, 0, sizeof(unsigned int), stream));
      return launch_config<C>(v11::flash_tma_v11_kernel<T, C>, grid, stream, tq, tk, tv, a, counter, int(tiles));
    });
  });
}

// One block per SM: the block's shared memory (177 to 217 KiB) leaves room for no second one.
Status run_v11(const AttentionProblem& pr, cudaStream_t stream) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  return run_v11_blocks(pr, dev.sms, stream);
}

// The LSE, and the tile counter.
std::size_t v11_extra_bytes(const AttentionParams& p) { return lse_extra_bytes(p) + sizeof(unsigned int); }

}  // namespace

}  // namespace flash_tma

const KernelDesc kFlashTmaV11 = flash_tma::descriptor(
    {"fs_flash_fwd_tma_v11", "stage07/attention", "v11",
     "v7 on persistent blocks, one per SM, drawing tiles from a counter: the next tile's loads under this one's end"},
    flash_tma::max_smem_bytes<flash_tma::v11::Config>(), flash_tma::run_v11, flash_tma::v11_extra_bytes);

Status launch_flash_tma_v11_blocks(const AttentionParams& p, int64_t blocks, cudaStream_t stream) {
  return flash_tma::launch_forced(kFlashTmaV11, p, blocks < 1, [&](const AttentionProblem& pr) {
    return flash_tma::run_v11_blocks(pr, blocks, stream);
  });
}

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v11, fs::kFlashTmaV11)
