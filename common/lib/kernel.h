// How every kernel version describes itself, and the one way it is launched.
//
// A stage defines one KernelDesc per version: its name, what it takes (built from the same instance
// lists its dispatch uses, common/lib/dispatch.h), the GPUs it runs on, and `run`, the version's own
// launch. Everything else goes through launch() below, the same for every version of every stage:
//   validate the params  →  check that the current GPU can run the kernel and hold its tensors
//   →  (backward: no output overlaps another tensor, check_outputs_apart)  →  run(problem, stream)
// so a bad call returns its named code before anything is launched. The C entries are made by
// FS_EXPORT_ATTENTION / FS_EXPORT_ATTENTION_BWD / FS_EXPORT_GEMM from the descriptor, and the registry
// (all_kernels(), and fs_kernel_count / fs_kernel_at for C and Python) lists every descriptor of every
// stage.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/lib/attention.h"
#include "common/lib/flashstages.h"
#include "common/lib/gemm.h"
#include "common/lib/status.h"

namespace fs {

// A version's own launch, called with params that passed validation on a GPU that can run it.
using AttentionRun = Status (*)(const AttentionProblem&, cudaStream_t);
using AttentionBwdRun = Status (*)(const AttentionBwdProblem&, cudaStream_t);
using GemmRun = Status (*)(const GemmParams&, cudaStream_t);

struct KernelDesc {
  fs_kernel_info info;
  AttentionSupport attention;  // attention kernels, forward and backward: what validate() admits
  GemmSupport gemm;            // GEMM kernels: the same
  AttentionRun run_attention = nullptr;
  AttentionBwdRun run_attention_bwd = nullptr;
  GemmRun run_gemm = nullptr;
  // Attention: device memory the launch allocates beyond Q, K, V, O and LSE (the N×N score buffer of
  // stages 01–02), and the modelled DRAM traffic, for GB/s (null: the least possible,
  // attention_fwd_min_bytes). Backward: the most it allocates beyond its inputs and outputs for this
  // shape (the P and dS buffers of the naive version, delta when the caller does not ask for it),
  // and its traffic (null: attention_bwd_min_bytes). Both may be null for GEMM kernels.
  std::size_t (*extra_bytes)(const AttentionParams&) = nullptr;
  double (*traffic_bytes)(const AttentionParams&) = nullptr;
  // Backward: what a deterministic call allocates, where that differs from extra_bytes (stage 05 v2
  // needs its fp32 dQ workspace only for the atomics); null: the same.
  std::size_t (*deterministic_extra_bytes)(const AttentionParams&) = nullptr;
  // GEMM: device memory the launch allocates for these params (stage 06 v16's repacked rows); null: none.
  std::size_t (*gemm_extra_bytes)(const GemmParams&) = nullptr;

  std::size_t bwd_extra_bytes(const AttentionParams& shape, bool deterministic) const {
    return deterministic && deterministic_extra_bytes ? deterministic_extra_bytes(shape) : extra_bytes(shape);
  }

  std::string qualified() const { return std::string(info.stage) + "/" + info.version; }  // "stage04/v3"
  bool is_attention() const { return info.problem == FS_PROBLEM_ATTENTION; }
  bool is_attention_bwd() const { return info.problem == FS_PROBLEM_ATTENTION_BWD; }
};

// The GPUs a stage's kernels run on, as compute capabilities: CMake computes them from the stage's
// CUDA architectures and hands them to the stage's sources as the string FS_STAGE_ARCHS ("80 86 90";
// a string because nvcc splits -D values at commas) and the PTX they carry as FS_STAGE_PTX (80, or 0),
// read here into kStageArchs.
struct ArchSet {
  int count = 0;
  int cc[16] = {};
  int ptx = 0;  // the oldest PTX the code carries (compute_80: 80), 0 for none
};
constexpr ArchSet parse_archs(const char* s) {
  ArchSet a;
  int value = 0;
  bool digits = false;
  for (;; ++s) {
    if (*s >= '0' && *s <= '9') {
      value = value * 10 + (*s - '0');
      digits = true;
    } else {
      if (digits && a.count < 16) a.cc[a.count++] = value;
      value = 0;
      digits = false;
      if (!*s) return a;
    }
  }
}
constexpr ArchSet with_ptx(ArchSet a, int ptx) {
  a.ptx = ptx;
  return a;
}
#ifdef FS_STAGE_ARCHS
static constexpr ArchSet kStageArchs = with_ptx(parse_archs(FS_STAGE_ARCHS), FS_STAGE_PTX);
#endif

// Names of a version, as the registry and the benchmarks show them.
struct KernelName {
  const char* entry;      // "fs_flash_fwd_v3"
  const char* stage;      // "stage04"
  const char* version;    // "v3"
  const char* technique;  // one line
};

constexpr fs_kernel_info kernel_info(const KernelName& n, fs_problem problem, uint32_t in, uint32_t out,
                                     const ArchSet& archs, std::size_t smem_bytes) {
  fs_kernel_info i{};
  i.entry = n.entry;
  i.stage = n.stage;
  i.version = n.version;
  i.technique = n.technique;
  i.problem = problem;
  i.in_dtypes = in;
  i.out_dtypes = out;
  i.num_archs = archs.count;
  for (int a = 0; a < archs.count; ++a) i.archs[a] = archs.cc[a];
  i.ptx_arch = archs.ptx;
  i.smem_bytes = smem_bytes;
  return i;
}

// An attention version. smem_bytes: the most dynamic shared memory one of its blocks asks for (the
// device check compares it with what the GPU allows).
constexpr KernelDesc attention_kernel(const KernelName& n, const AttentionSupport& support, const ArchSet& archs,
                                      std::size_t smem_bytes, AttentionRun run,
                                      std::size_t (*extra_bytes)(const AttentionParams&),
                                      double (*traffic_bytes)(const AttentionParams&) = nullptr) {
  KernelDesc k{kernel_info(n, FS_PROBLEM_ATTENTION, support.dtypes, support.dtypes, archs, smem_bytes)};
  k.info.num_head_dims = support.num_head_dims;
  for (int i = 0; i < support.num_head_dims; ++i) k.info.head_dims[i] = support.head_dims[i];
  k.info.max_head_dim = support.max_head_dim;
  k.info.strided = support.strided ? 1 : 0;
  k.attention = support;
  k.run_attention = run;
  k.extra_bytes = extra_bytes;
  k.traffic_bytes = traffic_bytes;
  return k;
}

// An attention backward version: the same description, the backward's run. `support` says what it
// takes of the forward problem (dtypes: of Q, K, V, O, dO and the gradients).
constexpr KernelDesc attention_bwd_kernel(const KernelName& n, const AttentionSupport& support, const ArchSet& archs,
                                          std::size_t smem_bytes, AttentionBwdRun run,
                                          std::size_t (*extra_bytes)(const AttentionParams&),
                                          double (*traffic_bytes)(const AttentionParams&) = nullptr,
                                          std::size_t (*deterministic_extra_bytes)(const AttentionParams&) = nullptr) {
  KernelDesc k = attention_kernel(n, support, archs, smem_bytes, nullptr, extra_bytes, traffic_bytes);
  k.info.problem = FS_PROBLEM_ATTENTION_BWD;
  k.run_attention_bwd = run;
  k.deterministic_extra_bytes = deterministic_extra_bytes;
  return k;
}

// An attention version that keeps N×N scores in DRAM (stages 01–02, stage 05 v0), its memory growing
// with Nq·Nk (fs_kernel_info::keeps_scores): the picking entries never choose it; it runs only by name.
constexpr KernelDesc keeps_scores(KernelDesc k) {
  k.info.keeps_scores = 1;
  return k;
}

// A GEMM version; extra_bytes: the workspace it allocates, where it takes one.
constexpr KernelDesc gemm_kernel(const KernelName& n, const GemmSupport& support, const ArchSet& archs,
                                 std::size_t smem_bytes, GemmRun run,
                                 std::size_t (*extra_bytes)(const GemmParams&) = nullptr) {
  KernelDesc k{kernel_info(n, FS_PROBLEM_GEMM, support.ab_dtypes, support.c_dtypes, archs, smem_bytes)};
  k.gemm = support;
  k.run_gemm = run;
  k.gemm_extra_bytes = extra_bytes;
  return k;
}

// What launch() checks before it runs, without running: Success when launch() would run the version
// (the params valid for it, the current GPU able to run it and hold its tensors).
Status admits(const KernelDesc& kernel, const AttentionParams& params);
Status admits(const KernelDesc& kernel, const AttentionBwdParams& params);
Status admits(const KernelDesc& kernel, const GemmParams& params);

// Validate, check the device, run (see the top of this file).
Status launch(const KernelDesc& kernel, const AttentionParams& params, cudaStream_t stream);
Status launch(const KernelDesc& kernel, const AttentionBwdParams& params, cudaStream_t stream);
Status launch(const KernelDesc& kernel, const GemmParams& params, cudaStream_t stream);

// Every kernel of every stage, in stage and version order.
const std::vector<const KernelDesc*>& all_kernels();
// Those whose "stage/version" is `name` or starts with `name` + "/": "stage04" or "stage04/v3".
std::vector<const KernelDesc*> find_kernels(std::string_view name);

// One stage's versions, in order; each stage defines stageNN_kernels() beside its descriptors, and
// CMake writes the table that lists every stage's (kernel_table.cpp in the build tree).
struct KernelList {
  const KernelDesc* const* items;
  int count;
};
template <std::size_t N>
constexpr KernelList kernel_list(const KernelDesc* const (&items)[N]) {
  return {items, int(N)};
}

namespace detail {
int export_call(const KernelDesc& kernel, const fs_attention_params* params, void* stream);
int export_call(const KernelDesc& kernel, const fs_attention_bwd_params* params, void* stream);
int export_call(const KernelDesc& kernel, const fs_gemm_params* params, void* stream);
}  // namespace detail

}  // namespace fs

// The C entry of a version: a null params pointer is FS_ERR_NULL_POINTER, everything else is
// launch(descriptor, *params, stream).
#define FS_EXPORT_ATTENTION(entry, descriptor)                                     \
  extern "C" FS_API int entry(const fs_attention_params* params, void* stream) {   \
    return ::fs::detail::export_call(descriptor, params, stream);                   \
  }
#define FS_EXPORT_ATTENTION_BWD(entry, descriptor)                                   \
  extern "C" FS_API int entry(const fs_attention_bwd_params* params, void* stream) {   \
    return ::fs::detail::export_call(descriptor, params, stream);                       \
  }
#define FS_EXPORT_GEMM(entry, descriptor)                                      \
  extern "C" FS_API int entry(const fs_gemm_params* params, void* stream) {    \
    return ::fs::detail::export_call(descriptor, params, stream);               \
  }
