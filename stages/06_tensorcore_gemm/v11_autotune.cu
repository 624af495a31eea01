// flashstages · stage 06 · v11 — v9's kernel with the block tile, the k-tile depth and the pipeline
// depth chosen per problem by timing a few candidates on the current GPU at first use (fp16, bf16).
//
// What changes from v9: nothing inside the kernel; this file is host code, as stage 04's v5 is to v4.
// v9 runs one configuration everywhere: 128×256 tiles of C, 8 warps, 32-deep k-tiles, 4 stages, one
// block per SM. What that costs, per SM and per 16-deep step of the block (the budget an ncu profile
// of v9 has to explain), on the H100's measured ceilings (ceilings.json: 2470 FLOP of mma.sync and
// 128 bytes of shared memory per SM per clock):
//   the MMAs       2·128·256·16 FLOP / 2470            = 424 clocks
//   ldmatrix       8 warps · (2 KB of A + 2 KB of B) / 128 = 256 clocks
//   cp.async       (128 + 256)·16·2 bytes / 128          =  96 clocks
// so shared memory is busy 83% of the time the tensor pipe needs, and a __syncthreads every second
// step stops all 8 warps of the SM's only block. The candidates move those terms:
//   128×256, 64 deep, 3 stages:       one barrier per four steps instead of two (144 KB of shared memory)
//   256×128, 32 deep, 4 stages:       v9 turned on its side: the grouped order walks C differently
//   128×128, 4 warps, 2 blocks/SM:    a block waiting at its barrier leaves the other block's 4 warps
//                                     running (64 KB each, or 96 KB at 64 deep with 3 stages); more
//                                     copies per FLOP (16 KB per SM-step instead of 12)
// Which wins depends on the shape (how many waves of tiles fill the SMs) and the GPU, so v11 times them
// (common/lib/tuner.h): the first call for a (GPU, dtype, transposes, M, N, K) runs each usable
// candidate 10 times on a problem of the caller's sizes and leading dimensions, in stream-ordered
// workspace (drawn uniform in [-1, 1]: timing zeros flatters a kernel; alpha = 1, beta = 0), and
// remembers the fastest for the process. FLASHSTAGES_AUTOTUNE=0 takes v9's configuration without
// timing, =verbose prints every timing. Only 16-byte-aligned operands are tuned: narrower rows take
// v9 itself (its 8-, 4- and 2-byte copy paths), which is also what a call inside a CUDA graph capture
// gets, and what a call gets when the tuning problem does not fit in memory.
// Measured (results/nvidia-h100-80gb-hbm3/stage06.json; v9, v11 and cuBLAS in one run,
// logs/bench_stage06_rerun_v9_v11.log):
//   fp16 <!-- value: [stage06/v11/fp16/M:4096/N:4096/K:4096] / [stage06/v9/fp16/M:4096/N:4096/K:4096] | .2f -->1.00<!-- /value -->× v9 at 4096³, <!-- value: [stage06/v11/fp16/M:8192/N:8192/K:8192] / [stage06/v9/fp16/M:8192/N:8192/K:8192] | .2f -->1.07<!-- /value -->× at 8192³, <!-- value: [stage06/v11/fp16/M:4096/N:4096/K:1024] / [stage06/v9/fp16/M:4096/N:4096/K:1024] | .2f -->1.07<!-- /value -->× at 4096×4096×1024;
//   <!-- value: [stage06/v11/fp16/M:4096/N:4096/K:4096] / [cublas/fp16/M:4096/N:4096/K:4096] | .2f -->0.56<!-- /value -->× cuBLAS fp16 at 4096³, <!-- value: [stage06/v11/fp16/M:8192/N:8192/K:8192] / [cublas/fp16/M:8192/N:8192/K:8192] | .2f -->0.61<!-- /value -->× at 8192³ (the stage README, "v11").
//
// Run: build/h100/stages/06_tensorcore_gemm/stage06_gemm --dtype fp16 --version v11
//      FLASHSTAGES_AUTOTUNE=verbose build/h100/stages/06_tensorcore_gemm/stage06_bench --benchmark_filter='stage06/v11/'
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>
#include <vector>

#include "common/lib/device.h"
#include "common/lib/gemm_launch.h"
#include "common/lib/random.h"
#include "common/lib/tuner.h"
#include "common/lib/workspace.h"
#include "gemm.h"
#include "mma_launch.h"

namespace fs::gemm_v11 {

namespace {

using gemm_v9::Tiles;
using gemm_v9::V9Tiles;

// One candidate: its configuration and its launch, 16-byte copies only (any dtype, any transposes).
struct Candidate {
  int bm, bn, bk, stages, threads;
  std::size_t smem_bytes;  // the largest of its four transpose instances
  Status (*launch)(const GemmParams&, cudaStream_t);
};

// A candidate's launch: 16-byte copies (the only ones v11 tunes), either element type.
template <class Tl>
struct Run16 {
  template <bool kTA, bool kTB>
  static cudaError_t run(const GemmParams& p, cudaStream_t stream) {
    return gemm_v9::launch_any_half<Tl, kTA, kTB, 16>(p, stream);
  }
};

template <class Tl>
Candidate candidate() {
  return {Tl::kBM, Tl::kBN, Tl::kBK, Tl::kStages, Tl::kThreads, gemm::max_smem_bytes<Tl::template Smem>(),
          gemm::launch_transposes<Run16<Tl>>};
}

template <class... Ts>
struct TileList {};
// v9's configuration first (the untuned choice), then the others the header explains.
using CandidateTiles = TileList<V9Tiles, Tiles<128, 256, 64, 3>, Tiles<256, 128, 32, 4>, Tiles<128, 128, 32, 4>,
                                Tiles<128, 128, 64, 3>>;

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
// types, in workspace of `buffers` (freed when it goes), A and B drawn from seeds 5000 and 5001.
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
  return gemm::launch_transposes<Run16<Tl>>(p, stream);
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
