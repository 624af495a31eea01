// The picking entries (flashstages.h, "The fastest version, picked"): which version runs a problem.
//
// The pick table (pick_table.inc, written by scripts/make_pick_table.py from results/*/stage*.json)
// holds, per measured GPU, every benchmark point with the library's versions ranked by their median
// time there. For a problem on a GPU:
//   the table's GPU   of the same name, else of the same compute capability (the reference first);
//   its points        ordered by their distance from the problem (pick.cpp: the same dtype, head_dim,
//                     mask, grouping, layout and determinism first, then the nearest sizes);
//   the candidates    first the versions level at the nearest point (within kPickTieBand of its fastest),
//                     the one least behind the fastest over the points near the problem first; then each
//                     point's ranked versions in turn, then every version newest first (the rule
//                     where no measured GPU matches, or no ranked version takes the problem); never a
//                     version that keeps N×N scores (fs_kernel_info::keeps_scores), which runs only by name;
//   the pick          the first candidate that admits() the problem on the current GPU.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/lib/kernel.h"

namespace fs {

// One version in the order the entries try them, and why it stands there.
struct PickCandidate {
  const KernelDesc* kernel;
  std::string why;
};

// The candidates for a problem on a GPU named `gpu` of compute capability `cc` (a pure function of
// the table and the registry: the CPU tests call it with made-up GPUs). Each version appears once.
std::vector<PickCandidate> pick_candidates(const AttentionParams& p, std::string_view gpu, int cc);
std::vector<PickCandidate> pick_candidates(const AttentionBwdParams& p, std::string_view gpu, int cc);
std::vector<PickCandidate> pick_candidates(const GemmParams& p, std::string_view gpu, int cc);

// The version the entry would run on the current GPU: the first candidate that admits the problem.
// Returns Success and fills `out`, or the refusal of the first candidate (out->kernel null, out->why
// says so).
Status pick_version(const AttentionParams& p, PickCandidate* out);
Status pick_version(const AttentionBwdParams& p, PickCandidate* out);
Status pick_version(const GemmParams& p, PickCandidate* out);

// The table itself (pick_table.inc), for the tests.
struct PickRanked {
  const char* version;  // "stage07/attention/v8"
  float ms;             // its median time at the point
};
constexpr int kPickRanked = 4;
// Versions within 3% of the fastest at a point are level there (pick_bench's goal is 3%), and the
// points within 6 of the nearest (pick.cpp's distance: less than another dtype, head_dim, mask or
// determinism) are its neighbourhood, over which level versions are ordered.
constexpr double kPickTieBand = 1.03;
constexpr double kPickNeighbourhood = 6;
struct PickAttentionPoint {
  int32_t problem;  // FS_PROBLEM_ATTENTION or FS_PROBLEM_ATTENTION_BWD
  int32_t dtype;
  int32_t deterministic;  // backward rows of "vN_deterministic"
  int64_t head_dim;
  int32_t causal;
  int64_t batch, heads, kv_heads, seq_q, seq_k;
  int32_t packed;  // a packed batch (cu_seqlens); seq_q = seq_k = its longest entry
  PickRanked ranked[kPickRanked];
};
struct PickGemmPoint {
  int32_t ab_dtype;
  int64_t m, n, k;
  PickRanked ranked[kPickRanked];
};
struct PickGpu {
  const char* name;    // as the benchmark JSON's context names it ("NVIDIA H200")
  const char* folder;  // its results/ folder
  int cc;
  int first_attention, attention_count, first_gemm, gemm_count;
};
struct PickTable {
  const PickGpu* gpus;
  int gpu_count;
  const PickAttentionPoint* attention;
  const PickGemmPoint* gemm;
};
PickTable pick_table();

}  // namespace fs
