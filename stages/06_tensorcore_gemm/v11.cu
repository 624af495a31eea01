// Stage 06 v11: the tuner (v11_autotune.cuh lists what it chooses among), the candidates' launches,
// v11's descriptor and C entry, fs_gemm_v11, and the candidates as the tests look inside them.
#include <string>
#include <vector>

#include "common/lib/device.h"
#include "common/lib/random.h"
#include "common/lib/tuner.h"
#include "common/lib/workspace.h"
#include "stages/06_tensorcore_gemm/launch.cuh"
#include "stages/06_tensorcore_gemm/versions.h"
#include "stages/06_tensorcore_gemm/v11_autotune.cuh"

namespace fs::gemm_v11 {

// A candidate's launch: v9's kernel at tiles Tl with 16-byte copies (the only ones v11 tunes), either
// element type, p's transposes. Each candidate's instances compile in a file of their own,
// instances/v11_<tiles>.cu (from instances/v11.cuh), side by side with the rest of the stage.
template <class Tl>
Status launch_candidate(const GemmParams& p, cudaStream_t stream);

// Candidate 0, v9's tiles, is v9's own launch: on 16-byte rows v9 runs the same instances, compiled
// once, in v9.cu.
template <>
Status launch_candidate<gemm_v9::V9Tiles>(const GemmParams& p, cudaStream_t stream) {
  return kGemmV9.run_gemm(p, stream);
}

namespace {

// One candidate: its configuration and its launch, 16-byte copies only (any dtype, any transposes).
struct Candidate {
  int bm, bn, bk, stages, threads;
  std::size_t smem_bytes;  // the largest of its four transpose instances
  Status (*launch)(const GemmParams&, cudaStream_t);
};

template <class Tl>
Candidate candidate() {
  return {Tl::kBM, Tl::kBN, Tl::kBK, Tl::kStages, Tl::kThreads, gemm::max_smem_bytes<Tl::template Smem>(),
          launch_candidate<Tl>};
}

template <class... Ts>
std::vector<Candidate> candidate_list(TileList<Ts...>) {
  return {candidate<Ts>()...};
}
const std::vector<Candidate>& candidates() {
  static const std::vector<Candidate> list = candidate_list(CandidateTiles{});
  return list;
}

std::string name(const Candidate& c) {
  return std::to_string(c.bm) + "x" + std::to_string(c.bn) + "x" + std::to_string(c.bk) + " " +
         std::to_string(c.stages) + " stages " + std::to_string(c.threads / 32) + " warps " +
         std::to_string(c.smem_bytes / 1024) + "KB";
}

bool runs_here(const Candidate& c) {
  DeviceProps dev;
  return current_device(&dev) == Status::Success && c.smem_bytes <= dev.smem_per_block_optin;
}

Tuner& tuner() {
  static Tuner t("gemm v11");  // one per process: what it learned serves every later call
  return t;
}

std::string key_of(int device, const GemmParams& p) {
  return "device " + std::to_string(device) + " " + dtype_name(DType(p.ab_dtype)) + "->" +
         dtype_name(DType(p.c_dtype)) + (p.trans_a ? " A^T" : "") +
         (p.trans_b ? " B^T" : "") + " M=" + std::to_string(p.m) + " N=" + std::to_string(p.n) +
         " K=" + std::to_string(p.k);
}

// The problem the candidates are timed on: the caller's sizes, transposes, leading dimensions and
// types, in stream-ordered workspace of `buffers` (freed when it goes), A and B drawn uniform in
// [-1, 1] from seeds 5000 and 5001 (timing zeros flatters a kernel), alpha = 1, beta = 0.
Status make_tuning_problem(GemmParams p, WorkspaceSet& buffers, cudaStream_t stream, GemmParams* out) {
  const DType ab = DType(p.ab_dtype);
  const int64_t spans[2] = {gemm_a_span(p), gemm_b_span(p)};
  void* operands[2] = {};
  for (int i = 0; i < 2; ++i) {
    FS_RETURN_IF_ERROR(buffers.alloc(&operands[i], std::size_t(spans[i]) * dtype_size(ab)));
    FS_RETURN_IF_ERROR(fill_random_device(operands[i], std::size_t(spans[i]), ab, 5000 + i, -1.0f, 1.0f, stream));
  }
  FS_RETURN_IF_ERROR(buffers.alloc(&p.c, std::size_t(gemm_c_span(p)) * dtype_size(DType(p.c_dtype))));
  p.a = operands[0];
  p.b = operands[1];
  p.alpha = 1.0f;
  p.beta = 0.0f;  // C is written only: it needs no values
  *out = p;
  return Status::Success;
}

// The candidate for the call, timed on `stream` at first use. A tuning problem that does not fit in
// memory leaves the call to v9's configuration (candidate 0), remembered nowhere.
Status choose(const GemmParams& p, cudaStream_t stream, int* index) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  const auto& list = candidates();
  WorkspaceSet buffers(stream);
  GemmParams tp{};
  const Status st = tuner().choose(
      key_of(dev.device, p), stream,
      [&](Tuner::Candidates* c) {
        FS_RETURN_IF_ERROR(make_tuning_problem(p, buffers, stream, &tp));
        c->count = int(list.size());
        c->usable = [&](int i) { return runs_here(list[i]); };
        c->name = [&](int i) { return name(list[i]); };
        c->run = [&](int i) { return list[i].launch(tp, stream); };
        return Status::Success;
      },
      index);
  if (st == Status::OutOfMemory) {
    *index = 0;
    return Status::Success;
  }
  return st;
}

bool rows_16b(const GemmParams& p) { return gemm::operand_copy_bytes(p, 2) == 16; }

Status run_v11(const GemmParams& p, cudaStream_t stream) {
  if (!rows_16b(p)) return kGemmV9.run_gemm(p, stream);
  int index = 0;
  FS_RETURN_IF_ERROR(choose(p, stream, &index));
  return candidates()[index].launch(p, stream);
}

// One candidate alone (the tests run every candidate through the odd sizes); v9 where rows are narrower.
template <class Tl>
Status run_candidate(const GemmParams& p, cudaStream_t stream) {
  if (!rows_16b(p)) return kGemmV9.run_gemm(p, stream);
  return launch_candidate<Tl>(p, stream);
}
template <class... Ts>
std::vector<GemmRun> candidate_runs(TileList<Ts...>) {
  return {run_candidate<Ts>...};
}

}  // namespace

}  // namespace fs::gemm_v11

namespace fs {

// The device check of v11 asks for v9's shared memory: a GPU with less opt-in memory than the larger
// candidates need still runs v11, whose tuner skips those candidates.
const KernelDesc kGemmV11 = gemm_kernel(
    {"fs_gemm_v11", "stage06", "v11",
     "v9's kernel, block tile / k-depth / stages picked per problem by timing 5 candidates (16-byte rows)"},
    kHalfSupport, kStageArchs, gemm::max_smem_bytes<gemm_v9::Config>(), gemm_v11::run_v11);

int gemm_v11_num_candidates() { return int(gemm_v11::candidates().size()); }

std::string gemm_v11_candidate_name(int index) {
  const auto& list = gemm_v11::candidates();
  return index >= 0 && index < int(list.size()) ? gemm_v11::name(list[index]) : std::string("none");
}

const KernelDesc* gemm_v11_candidate(int index) {
  struct Desc {
    std::string version;  // "v11[2]": what the tests' messages name
    KernelDesc desc;
  };
  static const std::vector<Desc> descs = [] {
    const std::vector<GemmRun> runs = gemm_v11::candidate_runs(gemm_v11::CandidateTiles{});
    std::vector<Desc> d(runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i) {
      d[i].version = "v11[" + std::to_string(i) + "]";
      d[i].desc = kGemmV11;
      d[i].desc.info.smem_bytes = gemm_v11::candidates()[i].smem_bytes;
      d[i].desc.run_gemm = runs[i];
    }
    for (Desc& x : d) x.desc.info.version = x.version.c_str();  // the strings no longer move
    return d;
  }();
  return index >= 0 && index < int(descs.size()) ? &descs[index].desc : nullptr;
}

int gemm_v11_remembered_choice(const GemmParams& p) {
  DeviceProps dev;
  int index = -1;
  if (current_device(&dev) != Status::Success) return -1;
  return gemm_v11::tuner().remembered(gemm_v11::key_of(dev.device, p), &index) ? index : -1;
}

}  // namespace fs

FS_EXPORT_GEMM(fs_gemm_v11, fs::kGemmV11)
