// Stage 04 v5: the tuner (v5_autotune.cuh says what v5 is). It keeps v5's candidates per head_dim, v4's
// kernel at each shape of tile_shapes.cuh, and the first time it meets a (GPU, head_dim, dtype, mask)
// times them on a synthetic problem built like any call (prepare), drawn with the common device fill
// and timed with CUDA events on the caller's stream, its buffers from the stream-ordered pool; the
// fastest is remembered for the process (common/lib/tuner.h). A first call made while the stream is
// capturing a CUDA graph takes v4's shape without tuning (nothing can be timed inside a capture).
// Then v5's launch, its descriptor and C entry, and the views into the tuner that v6, the tests and
// the benchmarks take.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "common/lib/device.h"
#include "common/lib/tuner.h"
#include "launch.cuh"
#include "tuner.cuh"
#include "v5_autotune.cuh"
#include "versions.h"

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
    return attn::launch_kernel<C>(kernel<typename decltype(t)::type, C>, pr, stream);
  });
}

// The candidates of a head_dim: tile_shapes.cuh's list for it, v4's shape first.
template <class... Cs>
std::vector<Candidate> candidate_list(ShapeList<Cs...>) {
  return {Candidate{Cs::kBr, Cs::kBc, Cs::kWarps, Cs::kMinBlocks, Cs::kQInRegs, Cs::kSmemBytes,
                    launch_candidate<Cs>}...};
}

const std::vector<Candidate>& candidates(int64_t head_dim) {
  return shape_table<Candidate>(head_dim, [](auto shapes) { return candidate_list(shapes); });
}

std::string name(const Candidate& c) {
  return "Br=" + std::to_string(c.br) + " Bc=" + std::to_string(c.bc) + " warps=" + std::to_string(c.warps) +
         (c.q_in_regs ? " Q:regs " : " Q:smem ") + std::to_string(c.smem_bytes / 1024) + "KB" +
         (c.min_blocks > 1 ? " " + std::to_string(c.min_blocks) + "/SM" : "");
}

bool runs_here(const Candidate& c) { return fits_here(c.smem_bytes); }

// The tuning problem: the benchmark grid's point at N = 8192 for the head_dim, dtype and mask being
// tuned — B·N = 16384 tokens (B = 2), H = 2048 / D heads, so B·H·D is the same at every head_dim
// (NOTES.md: why not B = 1, H = 16, the problem before).
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

// v5's launch: the candidate the tuner picks for the problem's (head_dim, dtype, mask).
Status run(const AttentionProblem& pr, cudaStream_t stream) {
  int index = 0;
  FS_RETURN_IF_ERROR(choose(pr.p.head_dim, dtype_of(pr.p), pr.p.causal != 0, stream, &index));
  return candidates(pr.p.head_dim)[index].launch(pr, stream);
}

}  // namespace

}  // namespace fs::flash::v5

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

// v5's first candidate is v4's shape, which every GPU this build runs on can take; the tuner skips
// the others where they do not fit.
const KernelDesc kFlashFwdV5 = flash::version(
    {"fs_flash_fwd_v5", "stage04", "v5",
     "v4's kernel with the tile shape per (head_dim, dtype, mask) picked by timing candidates on this GPU"},
    flash::max_smem_bytes<flash::FirstShape>(), flash::v5::run, lse_extra_bytes, flash::kStridedSupport);

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

FS_EXPORT_ATTENTION(fs_flash_fwd_v5, fs::kFlashFwdV5)
