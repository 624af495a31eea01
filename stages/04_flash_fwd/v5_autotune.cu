// flashstages · stage 04 · v5 — v4's kernel with the tile shape chosen per (head_dim, dtype, mask) by
// timing a few candidate shapes on the current GPU at first use, remembered for the process.
//
// What changes from v4: nothing inside the kernel; this file is host code. v4 runs one shape (Br = 64,
// four warps of 16 rows) everywhere; the best shape depends on the head_dim and the GPU, through
// registers per thread (rO alone is D/2 fp32 registers per thread per 16-row tile), shared memory per
// block (Q plus two K and V buffers), blocks per SM, and how often a K or V fragment read from shared
// memory is reused (once per 16-row tile a warp owns). So, like the autotuner the Triton tutorials lean
// on, v5 keeps a short list of shapes per head_dim (tile_shapes.cuh; the first is v4's) and, the first time it meets a
// (GPU, head_dim, dtype, mask), times each on a synthetic problem (the grid's N = 8192 point) and keeps the
// fastest (common/lib/tuner.h: FLASHSTAGES_AUTOTUNE=0 skips the timing and takes v4's shape,
// FLASHSTAGES_AUTOTUNE=verbose prints every timing).
//   Br×Bc, warps    the query rows per block and keys per block; warps of 16 or 32 rows (kMT = 1, 2)
//   Q: regs / smem  Q fragments held in registers for the whole key loop, or re-read at every block
// The tuning problem is built like any call (prepare), drawn with the common device fill and timed
// with CUDA events on the caller's stream, its buffers from the stream-ordered pool: tens of
// milliseconds per key, once (each usable candidate runs 10 times, 1.4 ms or more a run at D = 128:
// results/nvidia-h100-80gb-hbm3/logs/tuner_picks.txt). A first call made while the stream is capturing a CUDA graph takes v4's
// shape without tuning (nothing can be timed inside a capture).
// Why it is faster, measured (H100, fp16, D = 128, N = 8192, B = 2, H = 16; stage04.json), over v4:
//   non-causal <!-- value: [stage04/v5/fp16/D:128/N:8192/causal:0] | .1f -->366.5<!-- /value --> TFLOPS, <!-- value: [stage04/v5/fp16/D:128/N:8192/causal:0] / [stage04/v4/fp16/D:128/N:8192/causal:0] | .2f -->1.22<!-- /value -->× v4
//   causal     <!-- value: [stage04/v5/fp16/D:128/N:8192/causal:1] | .1f -->334.4<!-- /value --> TFLOPS, <!-- value: [stage04/v5/fp16/D:128/N:8192/causal:1] / [stage04/v4/fp16/D:128/N:8192/causal:1] | .2f -->1.16<!-- /value -->× v4
// The shape picked at D = 128 (Br = 128, four warps of 32 rows, Q re-read from shared memory) feeds
// each K and V fragment to two mma instead of one. SDPA's FlashAttention-2 backend measured
// <!-- value: [sdpa_flash/fp16/D:128/N:8192/causal:0] | .1f -->335.5<!-- /value --> / <!-- value: [sdpa_flash/fp16/D:128/N:8192/causal:1] | .1f -->301.9<!-- /value --> TFLOPS in the same run (sdpa.json).
//
// Run: build/h100/stages/04_flash_fwd/stage04_flash_fwd --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 --version v5
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "common/lib/device.h"
#include "common/lib/tuner.h"
#include "flash_fwd.h"
#include "launch.cuh"
#include "tile_shapes.cuh"
#include "tuning_problem.h"

namespace fs::flash::v5 {

namespace {

// One candidate shape, with its launch (either dtype).
struct Candidate {
  int br, bc, warps, min_blocks;
  bool q_in_regs;
  std::size_t smem_bytes;
  Status (*launch)(const AttentionProblem&, cudaStream_t);
};

template <class C>
Status launch_candidate(const AttentionProblem& pr, cudaStream_t stream) {
  return Elements::dispatch(pr.p.dtype, [&](auto t) {
    return attn::launch_kernel<C>(v4::flash_fwd_v4_kernel<typename decltype(t)::type, C::kHeadDim, C>, pr, stream);
  });
}

// The candidates of a head_dim: tile_shapes.cuh's list for it, v4's shape first.
template <class... Cs>
std::vector<Candidate> candidate_list(ShapeList<Cs...>) {
  return {Candidate{Cs::kBr, Cs::kBc, Cs::kWarps, Cs::kMinBlocks, Cs::kQInRegs, Cs::kSmemBytes,
                    launch_candidate<Cs>}...};
}

const std::vector<Candidate>& candidates(int64_t head_dim) {
  static const std::vector<Candidate> none;
  const std::vector<Candidate>* found = &none;
  HeadDimList::dispatch(head_dim, [&](auto d) {
    static const std::vector<Candidate> list = candidate_list(typename TileShapes<decltype(d)::value>::type{});
    found = &list;
    return Status::Success;
  });
  return *found;
}

std::string name(const Candidate& c) {
  return "Br=" + std::to_string(c.br) + " Bc=" + std::to_string(c.bc) + " warps=" + std::to_string(c.warps) +
         (c.q_in_regs ? " Q:regs " : " Q:smem ") + std::to_string(c.smem_bytes / 1024) + "KB" +
         (c.min_blocks > 1 ? " " + std::to_string(c.min_blocks) + "/SM" : "");
}

bool runs_here(const Candidate& c) {
  DeviceProps dev;
  return current_device(&dev) == Status::Success && c.smem_bytes <= dev.smem_per_block_optin;
}

// The tuning problem: the benchmark grid's point at N = 8192 for the head_dim, dtype and mask being
// tuned — B·N = 16384 tokens (B = 2), H = 2048 / D heads, so B·H·D is the same at every head_dim. With
// B = 1, H = 16 (this problem before), a quarter of that at D = 64, the causal tiles' tail weighed
// more and the tuner kept Br = 64 at 3 blocks per SM, 3–9% slower than Br = 128 at every grid point
// from N = 1024 on (the stage README, "The tuner, checked").
constexpr int64_t kTuneTokens = 16384, kTuneModelDim = 2048, kTuneSeq = 8192;
AttentionParams tuning_shape(int64_t head_dim, DType dtype, bool causal) {
  AttentionParams p{};
  p.batch = kTuneTokens / kTuneSeq;
  p.heads = kTuneModelDim / head_dim;
  p.seq_q = p.seq_k = kTuneSeq;
  p.head_dim = head_dim;
  p.dtype = static_cast<int32_t>(dtype);
  p.causal = causal;
  return p;
}

Tuner& tuner() {
  static Tuner t("flash_fwd v5");  // one per process: what it learned serves every later call
  return t;
}

std::string key_of(int device, int64_t head_dim, DType dtype, bool causal) {
  return "device " + std::to_string(device) + " D=" + std::to_string(head_dim) + " " + dtype_name(dtype) +
         (causal ? " causal" : "");
}

// The candidate for the problem's (device, head_dim, dtype, mask), timed on `stream` at first use.
Status choose(int64_t head_dim, DType dtype, bool causal, cudaStream_t stream, int* index) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  const std::string key = key_of(dev.device, head_dim, dtype, causal);
  const auto& list = candidates(head_dim);
  TuningProblem problem(stream);
  AttentionProblem pr{};
  return tuner().choose(
      key, stream,
      [&](Tuner::Candidates* c) {
        FS_RETURN_IF_ERROR(problem.make(tuning_shape(head_dim, dtype, causal), /*seed=*/4000, &pr));
        c->count = int(list.size());
        c->usable = [&](int i) { return runs_here(list[i]); };
        c->name = [&](int i) { return name(list[i]); };
        c->run = [&](int i) { return list[i].launch(pr, stream); };
        return Status::Success;
      },
      index);
}

}  // namespace

}  // namespace fs::flash::v5

fs::Status fs::flash::run_v5(const AttentionProblem& pr, cudaStream_t stream) {
  int index = 0;
  FS_RETURN_IF_ERROR(v5::choose(pr.p.head_dim, dtype_of(pr.p), pr.p.causal != 0, stream, &index));
  return v5::candidates(pr.p.head_dim)[index].launch(pr, stream);
}

int fs::flash::v5_remembered_choice(int64_t head_dim, DType dtype, bool causal) {
  DeviceProps dev;
  int index = -1;
  if (current_device(&dev) != Status::Success) return -1;
  return v5::tuner().remembered(v5::key_of(dev.device, head_dim, dtype, causal), &index) ? index : -1;
}

fs::Status fs::flash::run_v5_candidate(const AttentionProblem& pr, int index, cudaStream_t stream) {
  return v5::candidates(pr.p.head_dim).at(index).launch(pr, stream);
}

namespace fs {

using flash::v5::candidates;

int flash_fwd_v5_num_candidates(int64_t head_dim) { return int(candidates(head_dim).size()); }

std::string flash_fwd_v5_candidate_name(int64_t head_dim, int index) {
  const auto& list = candidates(head_dim);
  return index >= 0 && index < int(list.size()) ? flash::v5::name(list[index]) : std::string("none");
}

bool flash_fwd_v5_candidate_runs_here(int64_t head_dim, int index) {
  const auto& list = candidates(head_dim);
  return index >= 0 && index < int(list.size()) && flash::v5::runs_here(list[index]);
}

Status launch_flash_fwd_v5_candidate(const AttentionParams& p, int index, cudaStream_t stream) {
  FS_RETURN_IF_ERROR(validate(p, kFlashFwdV5.attention));
  FS_RETURN_IF_ERROR(check_current_device(kFlashFwdV5.info, largest_tensor_bytes(p)));
  const auto& list = candidates(p.head_dim);
  if (index < 0 || index >= int(list.size())) return Status::InvalidSize;  // no such candidate
  if (!flash::v5::runs_here(list[index])) return Status::UnsupportedDevice;
  return list[index].launch(prepare(p), stream);
}

int flash_fwd_v5_choice(int64_t head_dim, DType dtype, bool causal, cudaStream_t stream) {
  int index = -1;
  if (candidates(head_dim).empty() || !in_set(flash::kSupport.dtypes, int32_t(dtype))) return -1;
  return flash::v5::choose(head_dim, dtype, causal, stream, &index) == Status::Success ? index : -1;
}

}  // namespace fs
