// Stage 04 v6: the launch of v6_split_kv.cuh's kernels — how many splits, which tile shape, the
// workspace — its descriptor and C entry, and the views into its planner the tests and benchmarks take.
//
// The plan for a call:
//   1. v5's tile shape for (head_dim, dtype, mask) (v5's own tuner), and the grid it makes:
//      tiles = B·H·ceil(Nq / Br) blocks against slots = SMs × the blocks of that kernel an SM holds.
//   2. tiles >= slots: the grid fills the GPU; one split, v5's launch, nothing more.
//   3. tiles < slots: the candidates are every tile shape of tile_shapes.cuh with split counts around
//      the wave count's choice (split_kv_heuristic, common/lib/split_kv.h); the tuner times them once on a dense
//      problem of the call's shape (B·H query heads over B·KVH K/V heads, Nq, Nk) and remembers the
//      fastest for that shape. Decoding (Nq = 1, one query tile per head) is the extreme case: B·H
//      tiles, each split as far as the waves and the 4-block slices allow (16 at most).
// FLASHSTAGES_AUTOTUNE=0 (and a first call inside a graph capture) takes candidate 0: v5's tile
// with the heuristic's split count, untimed.
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "common/lib/device.h"
#include "common/lib/flops.h"
#include "common/lib/split_kv.h"
#include "common/lib/tuner.h"
#include "launch.cuh"
#include "tuner.cuh"
#include "v6_split_kv.cuh"
#include "versions.h"

namespace fs::flash::v6 {

namespace {

// The split kernel for tile shape C, then the merge, around one workspace allocation.
template <class C>
Status launch_split(const AttentionProblem& pr, int splits, cudaStream_t stream) {
  return Elements::dispatch(pr.p.dtype, [&](auto t) {
    using T = typename decltype(t)::type;
    constexpr int D = C::kHeadDim;
    SplitArgs<T> sa{make_args<T>(pr, C::kBr), nullptr, nullptr, split_partial_rows(pr.p)};
    const int64_t blocks = pr.p.batch * pr.p.heads * sa.a.q_tiles;
    if (blocks > INT_MAX) return Status::InvalidSize;  // gridDim.x limit
    return split_and_merge<D>(pr, splits, sa, stream, [&](const SplitArgs<T>& filled) {
      auto* split_kernel = flash_fwd_v6_kernel<T, D, C>;
      // Above 48 KB a kernel must opt in to the larger dynamic shared memory carve-out.
      FS_RETURN_IF_CUDA_ERROR(
          cudaFuncSetAttribute(split_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::kSmemBytes)));
      split_kernel<<<dim3(unsigned(blocks), unsigned(splits)), C::kThreads, C::kSmemBytes, stream>>>(filled);
      FS_RETURN_IF_CUDA_ERROR(cudaGetLastError());
      return Status::Success;
    });
  });
}

// How many blocks of the split kernel for tile shape C one SM holds (registers, shared memory).
template <class C>
Status blocks_per_sm(DType dtype, int* n) {
  return Elements::dispatch(int32_t(dtype), [&](auto t) {
    auto* kernel = flash_fwd_v6_kernel<typename decltype(t)::type, C::kHeadDim, C>;
    FS_RETURN_IF_CUDA_ERROR(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(C::kSmemBytes)));
    FS_RETURN_IF_CUDA_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, kernel, C::kThreads, C::kSmemBytes));
    return Status::Success;
  });
}

// One tile shape of tile_shapes.cuh (v5's candidate of the same index), with v6's launches.
struct Tile {
  int br, bc;
  std::size_t smem_bytes;
  Status (*launch)(const AttentionProblem&, int splits, cudaStream_t);
  Status (*blocks_per_sm)(DType, int*);
};

template <class... Cs>
std::vector<Tile> tile_list(ShapeList<Cs...>) {
  return {Tile{Cs::kBr, Cs::kBc, Cs::kSmemBytes, launch_split<Cs>, blocks_per_sm<Cs>}...};
}

const std::vector<Tile>& tiles(int64_t head_dim) {
  return shape_table<Tile>(head_dim, [](auto shapes) { return tile_list(shapes); });
}

// One way to run a call: a tile shape and a split count.
struct Plan {
  int tile, splits;
};

// Runs plan `c`: one split is v5's launch of that tile shape (no workspace, no merge).
Status run_plan(const AttentionProblem& pr, const Plan& c, cudaStream_t stream) {
  if (c.splits == 1) return run_v5_candidate(pr, c.tile, stream);
  return tiles(pr.p.head_dim)[c.tile].launch(pr, c.splits, stream);
}

// The grid of tile shape `tile` for the call: its query tiles (B·H·ceil(Nq/Br)), the key blocks of the
// longest row, and the blocks the GPU holds at once.
struct Grid {
  int64_t tiles, key_blocks, slots;
};
Status grid_of(const AttentionProblem& pr, int tile, Grid* g) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  const Tile& t = tiles(pr.p.head_dim)[tile];
  // The occupancy query costs microseconds of host time: once per (device, head_dim, tile, dtype).
  static std::mutex mutex;
  static std::map<std::tuple<int, int64_t, int, int32_t>, int> known;
  const auto key = std::make_tuple(dev.device, pr.p.head_dim, tile, pr.p.dtype);
  int per_sm = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = known.find(key);
    if (it != known.end()) per_sm = it->second;
  }
  if (per_sm == 0) {
    FS_RETURN_IF_ERROR(t.blocks_per_sm(dtype_of(pr.p), &per_sm));
    std::lock_guard<std::mutex> lock(mutex);
    known[key] = per_sm;
  }
  g->tiles = pr.p.batch * pr.p.heads * ((pr.max_seq_q + t.br - 1) / t.br);
  g->key_blocks = (pr.p.seq_k + t.bc - 1) / t.bc;
  g->slots = int64_t(dev.sms) * std::max(per_sm, 1);
  return Status::Success;
}

bool runs_here(const Tile& t) { return fits_here(t.smem_bytes); }

// The candidates of an underfilled call, `first` (v5's tile) first with the heuristic's split count:
// for each tile shape that fits this GPU, its heuristic count h, one split, and 2h where slices stay
// long enough.
Status candidates(const AttentionProblem& pr, int first, std::vector<Plan>* out) {
  const auto& list = tiles(pr.p.head_dim);
  std::vector<int> order{first};
  for (int i = 0; i < int(list.size()); ++i)
    if (i != first && runs_here(list[i])) order.push_back(i);
  for (int i : order) {
    Grid g;
    FS_RETURN_IF_ERROR(grid_of(pr, i, &g));
    const int h = split_kv_heuristic(g.tiles, g.key_blocks, g.slots);
    out->push_back({i, h});
    if (h > 1) out->push_back({i, 1});
    if (h > 1 && 2 * h <= kMaxSplits && g.key_blocks >= 2 * h * kMinSliceBlocks) out->push_back({i, 2 * h});
  }
  return Status::Success;
}

std::string name(int64_t head_dim, const Plan& c) {
  return flash_fwd_v5_candidate_name(head_dim, c.tile) + " splits=" + std::to_string(c.splits);
}

// The tuning problem: dense, B = 1, H = the call's B·H over its B·KVH K/V heads (the same groups: what
// K and V cost depends on how many query heads share them), the call's Nq (its longest entry) and Nk,
// in its head_dim, dtype, mask and scale.
AttentionParams tuning_shape(const AttentionProblem& call) {
  AttentionParams p{};
  p.batch = 1;
  p.heads = call.p.batch * call.p.heads;
  p.kv_heads = call.p.batch * kv_head_count(call.p);
  p.seq_k = call.p.seq_k;
  p.seq_q = call.p.causal ? std::min(call.max_seq_q, p.seq_k) : call.max_seq_q;
  p.head_dim = call.p.head_dim;
  p.dtype = call.p.dtype;
  p.causal = call.p.causal;
  p.scale = call.p.scale;
  return p;
}

Tuner& tuner() {
  static Tuner t("flash_fwd v6");  // one per process: what it learned serves every later call
  return t;
}

std::string key_of(const AttentionProblem& pr, int device) {
  const AttentionParams& p = pr.p;
  return "device " + std::to_string(device) + " D=" + std::to_string(p.head_dim) + " " + dtype_name(dtype_of(p)) +
         (p.causal ? " causal" : "") + " B*H=" + std::to_string(p.batch * p.heads) +
         " B*KVH=" + std::to_string(p.batch * kv_head_count(p)) +
         " Nq=" + std::to_string(pr.max_seq_q) + " Nk=" + std::to_string(p.seq_k);
}

// The plans the tuner would time for a call (one where the grid fills the GPU: v5's launch), v5's tile
// `first` from its tuner.
Status plans_of(const AttentionProblem& pr, int first, std::vector<Plan>* out) {
  Grid g;
  FS_RETURN_IF_ERROR(grid_of(pr, first, &g));
  if (g.tiles >= g.slots) {
    out->push_back({first, 1});
    return Status::Success;
  }
  return candidates(pr, first, out);
}

// The plan for a call (see the top of this file). With `tune` false nothing is timed: the remembered
// choice, or else the candidate with the most splits (what extra_bytes reports before the first call:
// an upper bound).
Status plan(const AttentionProblem& pr, cudaStream_t stream, bool tune, Plan* out) {
  const int64_t d = pr.p.head_dim;
  const DType dtype = dtype_of(pr.p);
  const int first = tune ? flash_fwd_v5_choice(d, dtype, pr.p.causal != 0, stream)
                         : v5_remembered_choice(d, dtype, pr.p.causal != 0);
  if (first < 0 && tune) return Status::CudaError;  // v5's tuning failed
  if (first >= 0) {
    Grid g;
    FS_RETURN_IF_ERROR(grid_of(pr, first, &g));
    if (g.tiles >= g.slots) {
      *out = {first, 1};
      return Status::Success;
    }
  }
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  const std::string key = key_of(pr, dev.device);
  // A shape seen before: its plan, without rebuilding the candidates (host time on every call).
  static std::mutex mutex;
  static std::map<std::string, Plan> planned;
  if (first >= 0) {
    std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = planned.find(key); it != planned.end()) {
      *out = it->second;
      return Status::Success;
    }
  }
  std::vector<Plan> list;
  FS_RETURN_IF_ERROR(candidates(pr, std::max(first, 0), &list));
  int index = 0;
  if (!tune) {
    if (first < 0 || !tuner().remembered(key, &index))
      index = int(std::max_element(list.begin(), list.end(),
                                   [](const Plan& a, const Plan& b) { return a.splits < b.splits; }) -
                  list.begin());
    *out = list[index];
    return Status::Success;
  }
  TuningProblem problem(stream);
  AttentionProblem tp{};
  const Status chosen = tuner().choose(
      key, stream,
      [&](Tuner::Candidates* c) {
        FS_RETURN_IF_ERROR(problem.make(tuning_shape(pr), /*seed=*/5000, &tp));
        c->count = int(list.size());
        c->usable = [](int) { return true; };  // candidates() kept only the tile shapes that fit
        c->name = [&](int i) { return name(pr.p.head_dim, list[i]); };
        c->run = [&](int i) { return run_plan(tp, list[i], stream); };
        return Status::Success;
      },
      &index);
  // No room for the tuning problem beside the call's tensors: the untimed choice, not remembered.
  if (chosen == Status::OutOfMemory) index = 0;
  else FS_RETURN_IF_ERROR(chosen);
  *out = list[index];
  if (int kept = 0; tuner().remembered(key, &kept)) {  // not a choice made inside a graph capture
    std::lock_guard<std::mutex> lock(mutex);
    planned[key] = list[kept];
  }
  return Status::Success;
}

// v6's launch: the plan for the call, tuned the first time its shape comes.
Status run(const AttentionProblem& pr, cudaStream_t stream) {
  Plan c{};
  FS_RETURN_IF_ERROR(plan(pr, stream, /*tune=*/true, &c));
  return run_plan(pr, c, stream);
}

}  // namespace

}  // namespace fs::flash::v6

namespace fs {

// v6 runs v5's shapes too (the largest instance is v4's shape), with a workspace for the splits.
const KernelDesc kFlashFwdV6 = flash::version(
    {"fs_flash_fwd_v6", "stage04", "v6",
     "v5 + split-KV: key slices in separate blocks where the grid underfills the GPU, merged by LSE"},
    flash::max_smem_bytes<flash::FirstShape>(), flash::v6::run, flash_fwd_v6_extra_bytes, flash::kStridedSupport);

std::size_t flash_fwd_v6_extra_bytes(const AttentionParams& p) {
  std::size_t bytes = lse_extra_bytes(p);
  // Called on shapes without tensors (the benchmarks size their buffers with it): no validate().
  if (flash::v6::tiles(p.head_dim).empty() || !in_set(flash::kSupport.dtypes, p.dtype) || p.batch < 1 ||
      p.heads < 1 || p.seq_q < 1 || p.seq_k < 1)
    return bytes;
  flash::v6::Plan c{};
  if (flash::v6::plan(prepare(p), nullptr, /*tune=*/false, &c) == Status::Success)
    bytes += split_workspace_bytes(p, c.splits);
  return bytes;
}

std::vector<std::pair<int, int>> flash_fwd_v6_plans(const AttentionParams& p) {
  std::vector<std::pair<int, int>> out;
  const int first = flash_fwd_v5_choice(p.head_dim, dtype_of(p), p.causal != 0, nullptr);
  std::vector<flash::v6::Plan> list;
  if (first < 0 || flash::v6::plans_of(prepare(p), first, &list) != Status::Success) return out;
  for (const auto& c : list) out.emplace_back(c.tile, c.splits);
  return out;
}

bool flash_fwd_v6_choice(const AttentionParams& p, cudaStream_t stream, int* tile, int* splits) {
  flash::v6::Plan c{};
  if (flash::v6::plan(prepare(p), stream, /*tune=*/true, &c) != Status::Success) return false;
  *tile = c.tile;
  *splits = c.splits;
  return true;
}

Status launch_flash_fwd_v6_plan(const AttentionParams& p, int tile, int splits, cudaStream_t stream) {
  FS_RETURN_IF_ERROR(validate(p, kFlashFwdV6.attention));
  FS_RETURN_IF_ERROR(check_current_device(kFlashFwdV6.info, largest_tensor_bytes(p)));
  const auto& list = flash::v6::tiles(p.head_dim);
  if (tile < 0 || tile >= int(list.size()) || splits < 1 || splits > 65535) return Status::InvalidSize;
  if (!flash::v6::runs_here(list[tile])) return Status::UnsupportedDevice;
  return flash::v6::run_plan(prepare(p), {tile, splits}, stream);
}

}  // namespace fs

FS_EXPORT_ATTENTION(fs_flash_fwd_v6, fs::kFlashFwdV6)
