// The picking entries: the table's ranking, nearest point first, then the newest version (pick.h).
#include "common/lib/pick.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "common/lib/cuda_check.h"
#include "common/lib/device.h"

namespace fs {

namespace {

#include "common/lib/pick_table.inc"

// A registry version by its qualified name ("stage07/attention/v8"); null for one this build lacks.
const KernelDesc* by_name(std::string_view name) {
  static const std::unordered_map<std::string, const KernelDesc*> names = [] {
    std::unordered_map<std::string, const KernelDesc*> m;
    for (const KernelDesc* k : all_kernels()) m.emplace(k->qualified(), k);
    return m;
  }();
  const auto it = names.find(std::string(name));
  return it == names.end() ? nullptr : it->second;
}

// Whether a measured GPU has points of the problem (a partial folder may hold GEMMs alone).
bool measured(const PickGpu& g, fs_problem problem) {
  if (problem == FS_PROBLEM_GEMM) return g.gemm_count > 0;
  for (int i = g.first_attention; i < g.first_attention + g.attention_count; ++i)
    if (kPickAttention[i].problem == problem) return true;
  return false;
}

// The measured GPU whose ranking applies: of those with points of the problem, the one of the same
// name, else the first of the same compute capability (the reference GPU comes first in the table, so
// it wins among GPUs of one architecture); null if none.
const PickGpu* table_gpu(std::string_view gpu, int cc, fs_problem problem) {
  for (const PickGpu& g : kPickGpus)
    if (gpu == g.name && measured(g, problem)) return &g;
  for (const PickGpu& g : kPickGpus)
    if (g.cc == cc && measured(g, problem)) return &g;
  return nullptr;
}

double log2_ratio(double a, double b) { return std::fabs(std::log2(std::max(a, 1.0) / std::max(b, 1.0))); }

bool sixteen_bit(int32_t t) { return t == FS_FP16 || t == FS_BF16; }

// How far a measured point is from the problem, as a sum of weights. What a kernel's speed depends on
// most weighs most: another dtype (less for the other 16-bit type), determinism, head_dim, mask, then
// layout and grouping; then the sizes, one per octave of Nq and of Nk, and half an octave's weight for
// the heads in flight (B·H) and for the query heads that share a K/V head (H / KVH).
double distance(const PickAttentionPoint& pt, const AttentionParams& p, bool deterministic) {
  double d = 0;
  if (pt.dtype != p.dtype) d += sixteen_bit(pt.dtype) && sixteen_bit(p.dtype) ? 20 : 100;
  if (bool(pt.deterministic) != deterministic) d += 50;
  if (pt.head_dim != p.head_dim) d += 10 + 4 * log2_ratio(double(pt.head_dim), double(p.head_dim));
  if (bool(pt.causal) != (p.causal != 0)) d += 8;
  const bool packed = p.cu_seqlens_q != nullptr;
  if (bool(pt.packed) != packed) d += 4;
  const int64_t kv_heads = p.kv_heads ? p.kv_heads : p.heads;
  if ((pt.kv_heads < pt.heads) != (kv_heads < p.heads)) d += 4;
  // A packed batch's rows per entry: its longest (max_seq_q, where known), not the totals.
  const double nq = packed && p.max_seq_q > 0 ? double(p.max_seq_q) : double(p.seq_q);
  const double nk = packed && p.max_seq_k > 0 ? double(p.max_seq_k) : packed ? nq : double(p.seq_k);
  d += log2_ratio(nq, double(pt.seq_q)) + log2_ratio(nk, double(pt.seq_k));
  d += 0.5 * log2_ratio(double(p.batch) * double(p.heads), double(pt.batch) * double(pt.heads));
  d += 0.5 * log2_ratio(double(p.heads) / double(kv_heads), double(pt.heads) / double(pt.kv_heads));
  return d;
}

// Whether M, N and K are whole multiples of 128: several GEMM versions take only whole tiles, or run a
// slower path over partial ones, so their ranking off such sizes differs from their ranking on them
// (on the H200, stage 06's int8 v13 leads v16 at 1024³ and falls far behind it at 1500³ and 3000³).
bool whole_tiles(int64_t m, int64_t n, int64_t k) { return m % 128 == 0 && n % 128 == 0 && k % 128 == 0; }

double distance(const PickGemmPoint& pt, const GemmParams& p) {
  double d = pt.ab_dtype == p.ab_dtype ? 0 : sixteen_bit(pt.ab_dtype) && sixteen_bit(p.ab_dtype) ? 20 : 100;
  if (whole_tiles(pt.m, pt.n, pt.k) != whole_tiles(p.m, p.n, p.k)) d += 2;
  return d + log2_ratio(double(p.m), double(pt.m)) + log2_ratio(double(p.n), double(pt.n)) +
         log2_ratio(double(p.k), double(pt.k));
}

std::string describe(const PickAttentionPoint& pt) {
  char s[160];
  std::snprintf(s, sizeof s, "%s D=%lld B=%lld H=%lld%s Nq=%lld Nk=%lld%s%s%s", dtype_name(DType(pt.dtype)),
                static_cast<long long>(pt.head_dim), static_cast<long long>(pt.batch),
                static_cast<long long>(pt.heads),
                pt.kv_heads < pt.heads ? (" KVH=" + std::to_string(pt.kv_heads)).c_str() : "",
                static_cast<long long>(pt.seq_q), static_cast<long long>(pt.seq_k), pt.causal ? " causal" : "",
                pt.packed ? " packed" : "", pt.deterministic ? " deterministic" : "");
  return s;
}

std::string describe(const PickGemmPoint& pt) {
  char s[96];
  std::snprintf(s, sizeof s, "%s M=%lld N=%lld K=%lld", dtype_name(DType(pt.ab_dtype)), static_cast<long long>(pt.m),
                static_cast<long long>(pt.n), static_cast<long long>(pt.k));
  return s;
}

const char* ordinal(int i) {
  static const char* names[] = {"fastest", "2nd", "3rd", "4th"};
  return names[std::min(i, 3)];
}

// A version's time at a point over the fastest's there; for a version the point does not rank, a little
// behind its last ranked one when it ranks kPickRanked (slower than those), else nothing (it did not run
// there: not every version takes every point).
template <class Point>
std::optional<double> behind(const Point& pt, std::string_view version) {
  int ranked = 0;
  for (; ranked < kPickRanked && pt.ranked[ranked].version; ++ranked)
    if (version == pt.ranked[ranked].version) return double(pt.ranked[ranked].ms) / double(pt.ranked[0].ms);
  if (ranked < kPickRanked) return std::nullopt;
  return 1.01 * double(pt.ranked[ranked - 1].ms) / double(pt.ranked[0].ms);
}

// The versions level at the nearest point (within kPickTieBand of its fastest), the one least behind
// over the neighbourhood first: at most how far behind the fastest each is at the points within
// kPickNeighbourhood of the nearest. Level versions swap places between runs, and the ranking between
// measured points can flip (on the H200, stage 07's forward v4 is level with v7 at N = 1024 and well
// behind it at N = 700): the version that is never far behind near the problem is the safer pick.
template <class Point>
std::vector<std::pair<const char*, double>> level_versions(const std::vector<std::pair<double, const Point*>>& order) {
  std::vector<std::pair<const char*, double>> level;  // version, its worst ratio over the neighbourhood
  if (order.empty()) return level;
  const auto& [d0, nearest] = order.front();
  for (int r = 0; r < kPickRanked && nearest->ranked[r].version; ++r) {
    if (double(nearest->ranked[r].ms) > kPickTieBand * double(nearest->ranked[0].ms)) break;
    double worst = 1;
    for (const auto& [d, pt] : order) {
      if (d > d0 + kPickNeighbourhood) break;
      if (const std::optional<double> x = behind(*pt, nearest->ranked[r].version)) worst = std::max(worst, *x);
    }
    level.emplace_back(nearest->ranked[r].version, worst);
  }
  std::stable_sort(level.begin(), level.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return level;
}

// The candidates: `points` (the GPU's, for this problem) nearest first; the versions level at the
// nearest (level_versions), then each point's ranking in turn, then the rule: every version of
// `problem`, newest first. Each version once, and none that keeps N×N scores
// (fs_kernel_info::keeps_scores): its memory grows with Nq·Nk, so it runs only when named.
template <class Point, class Distance>
std::vector<PickCandidate> candidates(const Point* points, int count, const PickGpu* gpu, fs_problem problem,
                                      std::string_view gpu_name, int cc, Distance dist) {
  std::vector<std::pair<double, const Point*>> order;
  for (int i = 0; i < count; ++i) order.emplace_back(dist(points[i]), &points[i]);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PickCandidate> out;
  std::unordered_set<const KernelDesc*> seen;
  // A version this build has, that may be picked, and not yet a candidate.
  auto fresh = [&](const KernelDesc* k) { return k && !k->info.keeps_scores && seen.insert(k).second; };
  for (const auto& [version, worst] : level_versions(order)) {
    const KernelDesc* k = by_name(version);
    if (!fresh(k)) continue;
    char why[320];
    std::snprintf(why, sizeof why,
                  "level with the fastest at %s on %s (results/%s, within %.0f%%), and at most %.1f%% behind the "
                  "fastest at the measured points near the problem",
                  describe(*order.front().second).c_str(), gpu->name, gpu->folder, 100 * (kPickTieBand - 1),
                  100 * (worst - 1));
    out.push_back({k, why});
  }
  for (const auto& [d, pt] : order)
    for (int r = 0; r < kPickRanked && pt->ranked[r].version; ++r) {
      const KernelDesc* k = by_name(pt->ranked[r].version);
      if (!fresh(k)) continue;
      char why[320];
      std::snprintf(why, sizeof why, "%s at %s on %s (results/%s, %.3f ms), the measured point nearest the problem",
                    ordinal(r), describe(*pt).c_str(), gpu->name, gpu->folder, double(pt->ranked[r].ms));
      out.push_back({k, why});
    }
  const std::vector<const KernelDesc*>& all = all_kernels();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    const KernelDesc* k = *it;
    if (k->info.problem != problem || !fresh(k)) continue;
    char why[320];
    if (gpu)
      std::snprintf(why, sizeof why, "the newest version that takes the problem: none of those measured on %s takes it",
                    gpu->name);
    else
      std::snprintf(why, sizeof why, "the newest version that takes the problem: no GPU named %.*s or of sm_%d measured",
                    int(gpu_name.size()), gpu_name.data(), cc);
    out.push_back({k, why});
  }
  return out;
}

std::vector<PickCandidate> attention_candidates(const AttentionParams& p, bool backward, bool deterministic,
                                                std::string_view gpu_name, int cc) {
  const fs_problem problem = backward ? FS_PROBLEM_ATTENTION_BWD : FS_PROBLEM_ATTENTION;
  const PickGpu* gpu = table_gpu(gpu_name, cc, problem);
  std::vector<PickAttentionPoint> points;
  if (gpu)
    for (int i = gpu->first_attention; i < gpu->first_attention + gpu->attention_count; ++i)
      if (kPickAttention[i].problem == problem) points.push_back(kPickAttention[i]);
  return candidates(points.data(), int(points.size()), gpu, problem, gpu_name, cc,
                    [&](const PickAttentionPoint& pt) { return distance(pt, p, deterministic); });
}

// What the candidates depend on besides the GPU: the fields distance() reads (pointers, scale and
// strides play no part in the order; admits() checks them on every call).
std::string order_key(const AttentionParams& p, int problem, bool deterministic) {
  char k[224];
  std::snprintf(k, sizeof k, "%d %d %d %lld %d %lld %lld %lld %lld %lld %d %lld %lld", problem, int(deterministic),
                p.dtype, static_cast<long long>(p.head_dim), int(p.causal != 0), static_cast<long long>(p.batch),
                static_cast<long long>(p.heads), static_cast<long long>(p.kv_heads), static_cast<long long>(p.seq_q),
                static_cast<long long>(p.seq_k), int(p.cu_seqlens_q != nullptr), static_cast<long long>(p.max_seq_q),
                static_cast<long long>(p.max_seq_k));
  return k;
}
std::string order_key(const AttentionParams& p) { return order_key(p, FS_PROBLEM_ATTENTION, false); }
std::string order_key(const AttentionBwdParams& p) {
  return order_key(p.fwd, FS_PROBLEM_ATTENTION_BWD, p.deterministic != 0);
}
std::string order_key(const GemmParams& p) {
  char k[96];
  std::snprintf(k, sizeof k, "%d %d %lld %lld %lld", FS_PROBLEM_GEMM, p.ab_dtype, static_cast<long long>(p.m),
                static_cast<long long>(p.n), static_cast<long long>(p.k));
  return k;
}

// The current GPU's name and compute capability, read once per device.
Status current_gpu(std::string* name, int* cc, int* device) {
  DeviceProps dev;
  FS_RETURN_IF_ERROR(current_device(&dev));
  static thread_local std::unordered_map<int, std::string> names;
  auto it = names.find(dev.device);
  if (it == names.end()) {
    cudaDeviceProp prop;
    if (const cudaError_t err = cudaGetDeviceProperties(&prop, dev.device); err != cudaSuccess)
      return record_cuda_error(err);
    it = names.emplace(dev.device, prop.name).first;
  }
  *name = it->second;
  *cc = dev.cc;
  *device = dev.device;
  return Status::Success;
}

// The versions left out of the candidates because they keep N×N scores, of those that take the problem:
// named in a refusal, so the caller knows which one would run it by name.
template <class Params>
std::string score_keepers_admitting(const Params& p) {
  std::vector<std::string> names;
  for (const KernelDesc* k : all_kernels())
    if (k->info.keeps_scores && admits(*k, p) == Status::Success) names.push_back(k->qualified());
  if (names.empty()) return "";
  std::string s = names[0];
  for (std::size_t i = 1; i < names.size(); ++i) s += ", " + names[i];
  return s + (names.size() == 1 ? " takes it but keeps N×N scores in memory, so it runs only when named"
                                : " take it but keep N×N scores in memory, so they run only when named");
}

// The first candidate that admits the problem; else the first candidate's refusal.
template <class Params>
Status first_admitted(const std::vector<PickCandidate>& list, const Params& p, PickCandidate* out) {
  Status first = Status::UnsupportedDtype;  // a registry with no version of the problem
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Status st = admits(*list[i].kernel, p);
    if (st == Status::Success) {
      *out = list[i];
      return st;
    }
    if (i == 0) first = st;
  }
  std::string why = list.empty() ? std::string("no version of this problem in the library")
                                 : list[0].kernel->qualified() + ", the first candidate, refuses the problem: " +
                                       status_name(first);
  if (const std::string keepers = score_keepers_admitting(p); !keepers.empty()) why += "; " + keepers;
  *out = {nullptr, why};
  return first;
}

template <class Params>
Status pick_current(const Params& p, PickCandidate* out) {
  std::string name;
  int cc = 0, device = 0;
  if (const Status st = current_gpu(&name, &cc, &device); st != Status::Success) {
    *out = {nullptr, std::string("no GPU to pick for: ") + status_name(st)};
    return st;
  }
  // The order is worked out once per GPU and problem shape (sorting the points and writing every
  // reason took about 100 us on a CPU core, more than a short kernel); admits() runs on every call.
  static thread_local std::unordered_map<std::string, std::vector<PickCandidate>> orders;
  if (orders.size() > 4096) orders.clear();  // a bound for programs that see ever new shapes
  const std::string key = std::to_string(device) + " " + order_key(p);
  auto it = orders.find(key);
  if (it == orders.end()) it = orders.emplace(key, pick_candidates(p, name, cc)).first;
  return first_admitted(it->second, p, out);
}

}  // namespace

std::vector<PickCandidate> pick_candidates(const AttentionParams& p, std::string_view gpu, int cc) {
  return attention_candidates(p, /*backward=*/false, /*deterministic=*/false, gpu, cc);
}

std::vector<PickCandidate> pick_candidates(const AttentionBwdParams& p, std::string_view gpu, int cc) {
  return attention_candidates(p.fwd, /*backward=*/true, p.deterministic != 0, gpu, cc);
}

std::vector<PickCandidate> pick_candidates(const GemmParams& p, std::string_view gpu_name, int cc) {
  const PickGpu* gpu = table_gpu(gpu_name, cc, FS_PROBLEM_GEMM);
  const PickGemmPoint* points = gpu ? kPickGemm + gpu->first_gemm : nullptr;
  return candidates(points, gpu ? gpu->gemm_count : 0, gpu, FS_PROBLEM_GEMM, gpu_name, cc,
                    [&](const PickGemmPoint& pt) { return distance(pt, p); });
}

Status pick_version(const AttentionParams& p, PickCandidate* out) { return pick_current(p, out); }
Status pick_version(const AttentionBwdParams& p, PickCandidate* out) { return pick_current(p, out); }
Status pick_version(const GemmParams& p, PickCandidate* out) { return pick_current(p, out); }

PickTable pick_table() {
  return {kPickGpus, int(sizeof kPickGpus / sizeof kPickGpus[0]), kPickAttention, kPickGemm};
}

}  // namespace fs

namespace {

void fill(fs_pick* pick, const fs::PickCandidate& c) {
  pick->kernel = c.kernel ? &c.kernel->info : nullptr;
  std::snprintf(pick->why, sizeof pick->why, "%s", c.why.c_str());
}

template <class Params>
int run_picked(const Params* params, void* stream) {
  if (!params) return FS_ERR_NULL_POINTER;
  fs::PickCandidate picked;
  if (const fs::Status st = fs::pick_version(*params, &picked); st != fs::Status::Success) return int(st);
  return int(fs::launch(*picked.kernel, *params, static_cast<cudaStream_t>(stream)));
}

template <class Params>
int query_pick(const Params* params, fs_pick* pick) {
  if (!params || !pick) return FS_ERR_NULL_POINTER;
  fs::PickCandidate picked;
  const fs::Status st = fs::pick_version(*params, &picked);
  fill(pick, picked);
  return int(st);
}

}  // namespace

extern "C" FS_API int fs_attention_forward(const fs_attention_params* params, void* stream) {
  return run_picked(params, stream);
}
extern "C" FS_API int fs_attention_backward(const fs_attention_bwd_params* params, void* stream) {
  return run_picked(params, stream);
}
extern "C" FS_API int fs_gemm(const fs_gemm_params* params, void* stream) { return run_picked(params, stream); }

extern "C" FS_API int fs_pick_attention_forward(const fs_attention_params* params, fs_pick* pick) {
  return query_pick(params, pick);
}
extern "C" FS_API int fs_pick_attention_backward(const fs_attention_bwd_params* params, fs_pick* pick) {
  return query_pick(params, pick);
}
extern "C" FS_API int fs_pick_gemm(const fs_gemm_params* params, fs_pick* pick) { return query_pick(params, pick); }
