// The picking entries measured: at shapes the stage benchmarks do not use (and a few they do), the
// version fs_attention_forward / fs_attention_backward / fs_gemm pick against the next candidates that
// take the problem (pick.h's order: the nearest measured point's ranking first), each timed in
// alternating rounds. A point passes when the picked version's time is within 3% of the fastest's.
//
//   pick_bench [--rounds 5] [--json out.json] [--only fwd|bwd|gemm]
//
// Each round times every candidate of a point once (CUDA events after warm-up, the L2 flushed before
// each run, the median of 20 runs); a candidate's time is the median of its rounds. Prints one line a
// point and the worst ratio; exits 1 if a point misses 3%, 2 on a bad flag, 77 without a GPU (as the
// stage executables).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/lib/pick.h"
#include "common/tools/attention_check.h"
#include "common/tools/device_info.h"
#include "common/tools/gemm_check.h"
#include "common/tools/runner.h"
#include "common/tools/timing.h"

using namespace fs;

namespace {

constexpr int kCandidates = 4;       // the picked version and the next three that take the problem
constexpr double kWithin = 1.03;     // the goal: the picked version's time at most 3% above the best

struct Row {
  std::string problem, shape, picked, best;
  std::vector<std::pair<std::string, double>> times;  // candidate, median ms
  double ratio = 0;                                   // picked / best time
};

// The first kCandidates candidates that admit the problem on this GPU, the picked one first.
template <class Params>
std::vector<const KernelDesc*> admitted(const Params& p, const std::string& gpu, int cc) {
  std::vector<const KernelDesc*> out;
  for (const PickCandidate& c : pick_candidates(p, gpu, cc)) {
    if (admits(*c.kernel, p) != Status::Success) continue;
    out.push_back(c.kernel);
    if (int(out.size()) == kCandidates) break;
  }
  return out;
}

// Times every candidate `rounds` times, alternating, and fills the row.
template <class Params>
Row measure(const std::string& problem, const std::string& shape, const Params& p, const std::string& gpu, int cc,
            int rounds, std::size_t l2_bytes) {
  Row row{problem, shape};
  const std::vector<const KernelDesc*> list = admitted(p, gpu, cc);
  if (list.empty()) return row;
  PickCandidate picked;
  if (pick_version(p, &picked) != Status::Success || picked.kernel != list[0]) {
    std::fprintf(stderr, "pick_bench: %s %s: the entry's pick is not the first admitted candidate\n", problem.c_str(),
                 shape.c_str());
    std::exit(kExitFailed);
  }
  std::vector<std::vector<float>> per(list.size());  // per candidate, its median of each round
  TimingOptions opt;
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = 0; i < list.size(); ++i)
      per[i].push_back(median(time_runs([&] { return launch(*list[i], p, nullptr); }, opt, l2_bytes)));
  double best = 1e300;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const double t = median(per[i]);  // common/lib/timer.h's, as every timing of the project
    row.times.emplace_back(list[i]->qualified(), t);
    if (t < best) best = t, row.best = list[i]->qualified();
  }
  row.picked = list[0]->qualified();
  row.ratio = row.times[0].second / best;
  return row;
}

template <class T>
struct Tag {  // a type passed to a generic lambda
  using type = T;
};

struct AttentionPoint {
  int64_t b, h, kvh, nq, nk, d;
  bool causal;
};

// Shapes beside the stage benchmarks' grid (B·N = 16384, powers of two; the underfilled shapes of
// common/tools/bench.cpp): sequence lengths between the grid's, other batch and head counts, grouped
// K/V at other ratios, decoding at other lengths; and two of the grid's own points.
const AttentionPoint kForward[] = {
    {4, 16, 16, 3000, 3000, 128, false}, {4, 16, 16, 3000, 3000, 128, true},  {2, 16, 16, 6000, 6000, 128, true},
    {16, 16, 16, 700, 700, 128, false},  {8, 32, 32, 1536, 1536, 64, false},  {8, 32, 32, 1536, 1536, 64, true},
    {32, 16, 16, 300, 300, 64, true},    {1, 32, 4, 200, 12000, 128, false}, {2, 32, 8, 1, 5000, 128, false},
    {16, 32, 32, 1, 2000, 64, false},    {1, 16, 16, 700, 24000, 128, true}, {2, 8, 8, 3000, 3000, 256, false},
    {2, 8, 8, 3000, 3000, 256, true},    {2, 16, 16, 8192, 8192, 128, false}, {8, 32, 32, 2048, 2048, 64, true}};

const AttentionPoint kBackward[] = {
    {4, 16, 16, 3000, 3000, 128, false}, {4, 16, 16, 3000, 3000, 128, true}, {16, 16, 16, 700, 700, 128, false},
    {8, 32, 32, 1536, 1536, 64, true},   {1, 32, 8, 1000, 9000, 64, true},   {2, 16, 16, 8192, 8192, 128, false}};

struct GemmPoint {
  int64_t m, n, k;
};
const GemmPoint kGemm[] = {{3000, 3000, 3000}, {6144, 1536, 4096}, {1500, 1500, 1500},
                           {12000, 1000, 2000}, {512, 512, 8192},  {4096, 4096, 4096}};

std::string attention_shape_name(const AttentionPoint& s, DType t) {
  char out[160];
  std::snprintf(out, sizeof out, "%s D=%lld B=%lld H=%lld KVH=%lld Nq=%lld Nk=%lld%s", dtype_name(t),
                static_cast<long long>(s.d), static_cast<long long>(s.b), static_cast<long long>(s.h),
                static_cast<long long>(s.kvh), static_cast<long long>(s.nq), static_cast<long long>(s.nk),
                s.causal ? " causal" : "");
  return out;
}

void print(const Row& r) {
  if (r.times.empty()) {
    std::printf("%-4s %-58s no version takes it\n", r.problem.c_str(), r.shape.c_str());
    return;
  }
  std::printf("%-4s %-58s %-22s %6.3f ms  best %-22s %.3f%s\n", r.problem.c_str(), r.shape.c_str(), r.picked.c_str(),
              r.times[0].second, r.best.c_str(), r.ratio, r.ratio > kWithin ? "  MISSED" : "");
}

void write_json(const std::string& path, const std::vector<Row>& rows, const std::string& gpu) {
  std::ofstream f(path);
  f << "{\"gpu\": \"" << gpu << "\", \"within\": " << kWithin << ", \"points\": [\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    f << "  {\"problem\": \"" << r.problem << "\", \"shape\": \"" << r.shape << "\", \"picked\": \"" << r.picked
      << "\", \"best\": \"" << r.best << "\", \"ratio\": " << r.ratio << ", \"times_ms\": {";
    for (std::size_t j = 0; j < r.times.size(); ++j)
      f << (j ? ", " : "") << "\"" << r.times[j].first << "\": " << r.times[j].second;
    f << "}}" << (i + 1 < rows.size() ? "," : "") << "\n";
  }
  f << "]}\n";
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "pick_bench: %s\nusage: pick_bench [--rounds N (>= 1, default 5)] [--json FILE] "
               "[--only fwd|bwd|gemm]\n", why);
  std::exit(kExitUsage);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  std::string json, only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("pick_bench: the picked version against the next candidates, alternating rounds\n"
                  "usage: pick_bench [--rounds N (>= 1, default 5)] [--json FILE] [--only fwd|bwd|gemm]\n");
      return kExitPassed;
    }
    if (i + 1 >= argc) usage(("flag " + a + " needs a value").c_str());
    const std::string v = argv[++i];
    if (a == "--rounds") {
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (*end || n < 1 || n > 100) usage("--rounds takes a whole number from 1 to 100");
      rounds = int(n);
    } else if (a == "--json") {
      json = v;
    } else if (a == "--only") {
      if (v != "fwd" && v != "bwd" && v != "gemm") usage("--only takes fwd, bwd or gemm");
      only = v;
    } else {
      usage(("unknown flag " + a).c_str());
    }
  }
  std::string why;
  const std::optional<DeviceInfo> found = query_device(0, &why);
  if (!found) {
    std::fprintf(stderr, "pick_bench: no GPU: %s\n", why.c_str());
    return kExitNoGpu;
  }
  const DeviceInfo& dev = *found;
  std::printf("pick_bench on %s (sm_%d): %d alternating rounds, within %.0f%% of the best\n", dev.name.c_str(),
              dev.cc(), rounds, (kWithin - 1) * 100);
  std::vector<Row> rows;
  uint64_t seed = 90000;
  // The forward (AttentionFixture) or the backward (AttentionBwdFixture) at every shape of `points`.
  auto attention_rows = [&](auto fixture_type, const char* problem, const auto& points, DType t) {
    using Fixture = typename decltype(fixture_type)::type;
    for (const AttentionPoint& s : points) {
      AttentionParams shape = attention_shape(s.b, s.h, s.nq, s.nk, s.d, t, s.causal);
      shape.kv_heads = s.kvh;
      Fixture fixture(shape, ++seed, /*max_heads=*/-1);  // timing only: no fp64 reference
      rows.push_back(measure(problem, attention_shape_name(s, t), fixture.params(), dev.name, dev.cc(), rounds,
                             dev.l2_bytes));
      print(rows.back());
    }
  };
  for (DType t : {DType::FP16, DType::BF16}) {
    if (only.empty() || only == "fwd") attention_rows(Tag<AttentionFixture>{}, "fwd", kForward, t);
    if (only.empty() || only == "bwd") attention_rows(Tag<AttentionBwdFixture>{}, "bwd", kBackward, t);
  }
  if (only.empty() || only == "gemm")
    for (DType ab : {DType::FP16, DType::BF16, DType::INT8, DType::FP32})
      for (const GemmPoint& s : kGemm) {
        const DType c = ab == DType::INT8 ? DType::INT32 : ab;
        GemmCase g = gemm_case(s.m, s.n, s.k, ab, c, false, ab == DType::INT8);
        GemmFixture fixture(g, ++seed, /*check_rows=*/-1);
        char shape[96];
        std::snprintf(shape, sizeof shape, "%s M=%lld N=%lld K=%lld", dtype_name(ab), static_cast<long long>(s.m),
                      static_cast<long long>(s.n), static_cast<long long>(s.k));
        rows.push_back(measure("gemm", shape, fixture.params(), dev.name, dev.cc(), rounds, dev.l2_bytes));
        print(rows.back());
      }
  double worst = 0;
  int missed = 0;
  for (const Row& r : rows) {
    worst = std::max(worst, r.ratio);
    missed += r.ratio > kWithin;
  }
  std::printf("worst picked/best: %.3f over %zu points; %d above %.2f\n", worst, rows.size(), missed, kWithin);
  if (!json.empty()) write_json(json, rows, dev.name);
  return missed ? kExitFailed : kExitPassed;
}
