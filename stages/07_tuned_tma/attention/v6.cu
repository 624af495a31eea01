// Stage 07 attention v6: the launch of v6_packed_gqa.cuh's kernels — the packed tiles, the split count,
// the workspace and v5's merge; where it does not pack (one query head per K/V head, or heads that fill
// their tiles: packs()) the launch is v5's — its descriptor and its C entry.
#include "stages/07_tuned_tma/attention/launch.cuh"
#include "stages/07_tuned_tma/attention/v6_packed_gqa.cuh"
#include "stages/07_tuned_tma/attention/versions.h"

namespace fs {

namespace flash_tma {

namespace {

// Whether v6 packs this problem: grouped K/V, and query heads too short to fill one tile of their own
// (max Nq < 128: decoding, short chunks). Where a head fills its tiles, packing saves no K/V traffic
// that L2 does not already save, and it measured slower than v5 there (NOTES.md).
bool packs(const AttentionParams& p, int64_t max_seq_q) { return group_size(p) > 1 && max_seq_q < ws::Config<64>::kBr; }

// Tiles of Br packed rows per (batch entry, K/V head): max Nq query rows of each of the G heads.
int64_t group_tiles(const AttentionProblem& pr, int64_t Br) {
  return (pr.max_seq_q * group_size(pr.p) + Br - 1) / Br;
}

// The packed kernel for element type T and tile configuration C over `splits` slices: with one split
// it writes O and LSE itself; with more, partials into one workspace allocation, then v5's merge, both
// on `stream` (the merge starts after every slice is written).
template <class T, class C>
Status launch_group(const AttentionProblem& pr, int splits, cudaStream_t stream) {
  constexpr int D = C::kD;
  CUtensorMap tk, tv;
  FS_RETURN_IF_ERROR(encode_kv_maps<C>(pr, &tk, &tv));
  attn::SplitArgs<T> sa{attn::make_args<T>(pr, C::kBr), nullptr, nullptr, split_partial_rows(pr.p)};
  sa.a.q_tiles = group_tiles(pr, C::kBr);
  const int64_t blocks = pr.p.batch * kv_head_count(pr.p) * sa.a.q_tiles;
  if (blocks > INT_MAX) return Status::InvalidSize;  // gridDim.x limit
  const dim3 grid{unsigned(blocks), unsigned(splits)};
  if (splits == 1) return launch_config<C>(v6::flash_tma_v6_kernel<T, C, /*kSplit=*/false>, grid, stream, tk, tv, sa);
  return attn::split_and_merge<D>(pr, splits, sa, stream, [&](const attn::SplitArgs<T>& filled) {
    return launch_config<C>(v6::flash_tma_v6_kernel<T, C, /*kSplit=*/true>, grid, stream, tk, tv, filled);
  });
}

// v5's heuristic over the packed tiles: B·KVH·ceil(max Nq·G / 128) of them, each visiting every key
// block (the causal diagonal is not counted, as in v5).
int v6_splits(const AttentionParams& p, int sms) {
  const AttentionProblem pr = prepare(p);
  if (!packs(p, pr.max_seq_q)) return v5_splits(p, sms);
  constexpr int64_t kBr = ws::Config<64>::kBr;  // every configuration's: 64 rows per consumer
  const int64_t bc = ws::default_bc(int(p.head_dim));
  return split_kv_heuristic(p.batch * kv_head_count(p) * group_tiles(pr, kBr), (p.seq_k + bc - 1) / bc, sms);
}

Status run_v6_splits(const AttentionProblem& pr, int splits, cudaStream_t stream) {
  if (!packs(pr.p, pr.max_seq_q)) return run_v5_splits(pr, splits, stream);
  if (splits > 65535) return Status::InvalidSize;  // gridDim.y limit
  return with_ws_config(pr, [&](auto t, auto c) {
    return launch_group<typename decltype(t)::type, typename decltype(c)::type>(pr, splits, stream);
  });
}

Status run_v6(const AttentionProblem& pr, cudaStream_t stream) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  return run_v6_splits(pr, v6_splits(pr.p, dev.sms), stream);
}

}  // namespace

}  // namespace flash_tma

const KernelDesc kFlashTmaV6 = flash_tma::descriptor(
    {"fs_flash_fwd_tma_v6", "stage07/attention", "v6",
     "v5 with the query heads of a K/V group packed into one tile (query-major), so K and V are read once per group"},
    flash_tma::max_smem_bytes<flash_tma::ws::DefaultConfig>(), flash_tma::run_v6,
    flash_tma::workspace_extra_bytes<flash_tma::split_workspace<flash_tma::v6_splits>>);

Status launch_flash_tma_v6_splits(const AttentionParams& p, int splits, cudaStream_t stream) {
  return flash_tma::launch_forced(kFlashTmaV6, p, splits < 1, [&](const AttentionProblem& pr) {
    return flash_tma::run_v6_splits(pr, splits, stream);
  });
}

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_tma_v6, fs::kFlashTmaV6)
