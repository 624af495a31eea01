// Stage 07 attention v5: the launch of v5_split_kv.cuh's kernels — the split count, the workspace, the
// split kernel and the merge; one split is v4's launch — its descriptor and its C entry.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v5_split_kv.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace flash_tma {

namespace {

// The split kernel for element type T and tile configuration C over `splits` slices, then the merge,
// around one workspace allocation. Both on `stream`: the merge starts after every slice is written.
template <class T, class C>
Status launch_split(const AttentionProblem& pr, int splits, cudaStream_t stream) {
  constexpr int D = C::kD;
  CUtensorMap tq, tk, tv;
  FS_RETURN_IF_ERROR(encode_maps<C>(pr, &tq, &tk, &tv));
  attn::SplitArgs<T> sa{attn::make_args<T>(pr, C::kBr), nullptr, nullptr, split_partial_rows(pr.p)};
  const int64_t blocks = pr.p.batch * pr.p.heads * sa.a.q_tiles;
  if (blocks > INT_MAX) return Status::InvalidSize;  // gridDim.x limit
  return attn::split_and_merge<D>(pr, splits, sa, stream, [&](const attn::SplitArgs<T>& filled) {
    return launch_config<C>(v5::flash_tma_v5_kernel<T, C>, dim3(unsigned(blocks), unsigned(splits)), stream, tq, tk,
                            tv, filled);
  });
}

Status run_v5(const AttentionProblem& pr, cudaStream_t stream) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  return run_v5_splits(pr, v5_splits(pr.p, dev.sms), stream);
}

}  // namespace

// Tiles of 128 query rows against one block per SM (a block takes up to 225 KiB of shared memory);
// the key blocks at the default width (ws::default_bc; the slices' 4-block floor is what they bound).
int v5_splits(const AttentionParams& p, int sms) {
  const AttentionProblem pr = prepare(p);
  constexpr int64_t kBr = ws::Config<64>::kBr;  // every configuration's: 64 rows per consumer
  const int64_t tiles = p.batch * p.heads * ((pr.max_seq_q + kBr - 1) / kBr);
  const int64_t bc = ws::default_bc(int(p.head_dim));
  return split_kv_heuristic(tiles, (p.seq_k + bc - 1) / bc, sms);
}

Status run_v5_splits(const AttentionProblem& pr, int splits, cudaStream_t stream) {
  if (splits <= 1) return run_v4(pr, stream);
  if (splits > 65535) return Status::InvalidSize;  // gridDim.y limit
  return with_ws_config(pr, [&](auto t, auto c) {
    return launch_split<typename decltype(t)::type, typename decltype(c)::type>(pr, splits, stream);
  });
}

}  // namespace flash_tma

const KernelDesc kFlashTmaV5 = flash_tma::descriptor(
    {"fs_flash_fwd_tma_v5", "stage07/attention", "v5",
     "v4 with a query tile's keys split over several blocks where the grid underfills the GPU, the slices merged by their LSE"},
    flash_tma::max_smem_bytes<flash_tma::ws::DefaultConfig>(), flash_tma::run_v5,
    flash_tma::workspace_extra_bytes<flash_tma::split_workspace<flash_tma::v5_splits>>);

Status launch_flash_tma_v5_splits(const AttentionParams& p, int splits, cudaStream_t stream) {
  return flash_tma::launch_forced(kFlashTmaV5, p, splits < 1, [&](const AttentionProblem& pr) {
    return flash_tma::run_v5_splits(pr, splits, stream);
  });
}

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v5, fs::kFlashTmaV5)
