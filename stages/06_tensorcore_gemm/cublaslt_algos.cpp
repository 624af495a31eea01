// stage06_cublaslt_algos: every algorithm cuBLASLt has for one fp16 or bf16 GEMM, each at its fastest
// tile and pipeline depth, timed in one run beside the configuration cuBLASLt's heuristic picks and
// beside the project's cuBLAS baseline (cublasGemmEx, common/tools/cublas_gemm.h).
//
// Why: v9–v16 are written with mma.sync, cuBLAS on Hopper picks wgmma kernels, and the stage's fp16
// goal (0.7× cuBLAS) asks how far mma.sync can go on this GPU. cuBLASLt also carries mma.sync
// kernels (named cutlass_80_…, sm80_… or ampere_…; the wgmma ones sm90_… or nvjet_sm90_…), and this
// tool times them on the same problem. The API does not say which kernel an algorithm runs, the
// profiler does: --configs launches the listed configurations once each, in order, so that Nsight
// Compute names them. What it found, and the runs, are in the
// stage's NOTES.md.
//   stage06_cublaslt_algos --dtype fp16 --m 4096 --n 4096 --k 4096
//   ncu --clock-control none --metrics gpu__time_duration.sum stage06_cublaslt_algos --configs pick,21:24:12
//
// The problem is the benchmark's: row-major C = A·B, neither transposed, C of the input type, fp32
// accumulation, alpha = 1, beta = 0, uniform random inputs in [-1, 1), 32 MiB of workspace, as the
// cuBLAS baseline has. Every configuration is first timed briefly (below), to find each algorithm's
// fastest few; then each contender (the baseline, the pick, those few) is timed as the benchmarks time
// a kernel: launched until the clock has settled under its own load (a GPU at its power limit clocks a
// fast kernel lower than a slow one, so interleaving them would flatter the fast one), then --repeats
// runs, the L2 flushed before each, and the median.
// An algorithm whose configurations cannot be set by tile and stage count alone (cuBLASLt's Hopper
// kernels want more) is left out of the enumeration; the pick stands for it.
#include <cublasLt.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/lib/random.h"
#include "common/tools/check.h"
#include "common/tools/cublas_gemm.h"
#include "common/tools/device_buffer.h"
#include "common/tools/device_info.h"
#include "common/tools/runner.h"
#include "common/tools/timing.h"

namespace {


// One configuration of one algorithm: what --configs names as id:tile:stages ("pick": the heuristic's
// choice, as it comes).
struct Config {
  bool pick = false;
  int id = 0;
  uint32_t tile = CUBLASLT_MATMUL_TILE_UNDEFINED, stages = CUBLASLT_MATMUL_STAGES_UNDEFINED;
  std::string key() const {
    return pick ? "pick" : std::to_string(id) + ":" + std::to_string(tile) + ":" + std::to_string(stages);
  }
};

// "pick,21:24:12" into configurations; false, with the offending item, on anything else.
bool parse_configs(const std::string& text, std::vector<Config>* out, std::string* bad) {
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item == "pick") {
      out->push_back(Config{true});
      continue;
    }
    long long v[3];
    char sep[2];
    int used = 0;
    if (std::sscanf(item.c_str(), "%lld%c%lld%c%lld%n", &v[0], &sep[0], &v[1], &sep[1], &v[2], &used) != 5 ||
        sep[0] != ':' || sep[1] != ':' || used != int(item.size()) || v[0] < 0 || v[1] < 0 || v[2] < 0 ||
        v[0] > INT32_MAX || v[1] > UINT32_MAX || v[2] > UINT32_MAX) {
      *bad = item;
      return false;
    }
    out->push_back(Config{false, int(v[0]), uint32_t(v[1]), uint32_t(v[2])});
  }
  if (out->empty()) *bad = text;
  return !out->empty();
}

// A cuBLASLt attribute that is a list of uint32 (tile or stages ids); {undefined} when it has none.
std::vector<uint32_t> cap_list(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoCapAttributes_t attr) {
  std::size_t bytes = 0;
  FS_CUBLAS_CHECK(cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes));
  std::vector<uint32_t> ids(bytes / sizeof(uint32_t));
  if (!ids.empty())
    FS_CUBLAS_CHECK(cublasLtMatmulAlgoCapGetAttribute(&algo, attr, ids.data(), bytes, &bytes));
  if (ids.empty()) ids.push_back(0);  // CUBLASLT_MATMUL_TILE_UNDEFINED, CUBLASLT_MATMUL_STAGES_UNDEFINED
  return ids;
}

// The GEMM as cuBLASLt sees it: column-major, so C = A·B row-major is Cᵀ = Bᵀ·Aᵀ with B first.
class LtGemm {
 public:
  LtGemm(int64_t m, int64_t n, int64_t k, cudaDataType_t type) : m_(m), n_(n), k_(k), type_(type) {
    FS_CUBLAS_CHECK(cublasLtCreate(&handle_));
    FS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    FS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb_, type, n, k, n));  // B, K×N row-major
    FS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la_, type, k, m, k));  // A, M×K row-major
    FS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc_, type, n, m, n));  // C, M×N row-major
    FS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref_));
    const std::size_t ws = fs::kCublasWorkspaceBytes;
    FS_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  }
  ~LtGemm() {
    cublasLtMatmulPreferenceDestroy(pref_);
    cublasLtMatrixLayoutDestroy(lc_);
    cublasLtMatrixLayoutDestroy(la_);
    cublasLtMatrixLayoutDestroy(lb_);
    cublasLtMatmulDescDestroy(desc_);
    cublasLtDestroy(handle_);
  }
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  std::vector<int> algo_ids() const {
    std::vector<int> ids(1024);
    int count = 0;
    FS_CUBLAS_CHECK(cublasLtMatmulAlgoGetIds(handle_, CUBLAS_COMPUTE_32F, CUDA_R_32F, type_, type_, type_, type_,
                                             int(ids.size()), ids.data(), &count));
    ids.resize(std::size_t(count));
    return ids;
  }
  cublasLtMatmulAlgo_t init(int id) const {
    cublasLtMatmulAlgo_t algo{};
    FS_CUBLAS_CHECK(cublasLtMatmulAlgoInit(handle_, CUBLAS_COMPUTE_32F, CUDA_R_32F, type_, type_, type_, type_, id, &algo));
    return algo;
  }
  // The configuration as an algorithm, split-K off, if cuBLASLt runs it on this problem within the
  // workspace; false otherwise.
  bool configure(const Config& c, cublasLtMatmulAlgo_t* algo) const {
    if (c.pick) {
      *algo = heuristic();
      return true;
    }
    if (cublasLtMatmulAlgoInit(handle_, CUBLAS_COMPUTE_32F, CUDA_R_32F, type_, type_, type_, type_, c.id, algo) !=
        CUBLAS_STATUS_SUCCESS)
      return false;
    const int32_t one = 1, zero = 0;
    const uint32_t no_reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
    bool ok = cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &c.tile, sizeof c.tile) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &c.stages, sizeof c.stages) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one, sizeof one) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &no_reduction,
                                                   sizeof no_reduction) == CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &zero, sizeof zero) ==
                  CUBLAS_STATUS_SUCCESS;
    cublasLtMatmulHeuristicResult_t result{};
    ok = ok && cublasLtMatmulAlgoCheck(handle_, desc_, lb_, la_, lc_, lc_, algo, &result) == CUBLAS_STATUS_SUCCESS &&
         result.workspaceSize <= fs::kCublasWorkspaceBytes;
    return ok;
  }
  // The heuristic's first choice, as cublasLtMatmul without an algorithm would run it.
  cublasLtMatmulAlgo_t heuristic() const {
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    FS_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle_, desc_, lb_, la_, lc_, lc_, pref_, 1, &result, &found));
    if (found == 0) throw fs::CudaError("cuBLASLt has no algorithm for this problem");
    return result.algo;
  }
  fs::Status run(const cublasLtMatmulAlgo_t& algo, const void* a, const void* b, void* c, void* ws) const {
    const float alpha = 1.0f, beta = 0.0f;
    return cublasLtMatmul(handle_, desc_, &alpha, b, lb_, a, la_, &beta, c, lc_, c, lc_, &algo, ws, fs::kCublasWorkspaceBytes,
                          nullptr) == CUBLAS_STATUS_SUCCESS
               ? fs::Status::Success
               : fs::Status::CudaError;
  }
  double flops() const { return 2.0 * double(m_) * double(n_) * double(k_); }

 private:
  int64_t m_, n_, k_;
  cudaDataType_t type_;
  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t lb_ = nullptr, la_ = nullptr, lc_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
};

// One configuration attribute, widened: each is an integer of 2 or 4 bytes, and cuBLASLt wants its
// exact size.
uint32_t config_of(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  uint32_t v = 0;
  std::size_t bytes = 0;
  FS_CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, nullptr, 0, &bytes));
  if (bytes != 2 && bytes != 4) throw fs::CudaError("a cuBLASLt algorithm attribute of " + std::to_string(bytes) + " bytes");
  if (bytes == 2) {
    uint16_t narrow = 0;
    FS_CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &narrow, bytes, &bytes));
    return narrow;
  }
  FS_CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, bytes, &bytes));
  return v;
}

// The heuristic's whole configuration, for the record.
std::string describe(const cublasLtMatmulAlgo_t& algo) {
  const std::pair<const char*, cublasLtMatmulAlgoConfigAttributes_t> attrs[] = {
      {"id", CUBLASLT_ALGO_CONFIG_ID},           {"tile", CUBLASLT_ALGO_CONFIG_TILE_ID},
      {"stages", CUBLASLT_ALGO_CONFIG_STAGES_ID}, {"splitk", CUBLASLT_ALGO_CONFIG_SPLITK_NUM},
      {"reduction", CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME}, {"swizzle", CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING},
      {"custom", CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION}, {"inner_shape", CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID},
      {"cluster_shape", CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID}};
  std::string out;
  for (const auto& [name, attr] : attrs) out += std::string(out.empty() ? "" : " ") + name + "=" + std::to_string(config_of(algo, attr));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t m = 4096, n = 4096, k = 4096;
  int repeats = 10;
  std::string dtype = "fp16", configs_text;
  CLI::App app{"stage06_cublaslt_algos: every cuBLASLt algorithm for one fp16/bf16 GEMM (C = A·B, row-major, "
               "fp32 accumulation), each at its fastest tile and stage count, beside the heuristic's pick"};
  const CLI::Validator positive = fs::decimal_in(1, int64_t(1) << 20);
  app.add_option("--m", m, "M, rows of C")->capture_default_str()->transform(positive);
  app.add_option("--n", n, "N, columns of C")->capture_default_str()->transform(positive);
  app.add_option("--k", k, "K, the inner dimension")->capture_default_str()->transform(positive);
  app.add_option("--dtype", dtype, "fp16 or bf16 (A, B and C)")->capture_default_str()->check(CLI::IsMember({"fp16", "bf16"}));
  app.add_option("--repeats", repeats, "timed runs per configuration (the median is reported)")
      ->capture_default_str()
      ->transform(fs::decimal_in(1, 1000));
  // A list parse_configs refuses is a bad flag like any other: fs::parse_command_line reports it.
  const CLI::Validator config_list(
      [](std::string& s) -> std::string {
        std::vector<Config> configs;
        std::string bad;
        if (s.empty() || parse_configs(s, &configs, &bad)) return {};
        return "'" + bad + "' is not pick or id:tile:stages (three non-negative integers)";
      },
      "LIST");
  app.add_option("--configs", configs_text,
                 "launch only these configurations (pick, or id:tile:stages as the table prints them), separated "
                 "by commas, once each and untimed: for a profiler to name their kernels")
      ->check(config_list);
  if (const int code = fs::parse_command_line(app, argc, argv); code >= 0) return code;
  std::vector<Config> listed;
  std::string bad;
  if (!configs_text.empty()) parse_configs(configs_text, &listed, &bad);  // accepted by config_list above

  std::string why;
  const std::optional<fs::DeviceInfo> dev = fs::query_device(0, &why);
  if (!dev) {
    std::fprintf(stderr, "stage06_cublaslt_algos: %s: nothing run\n", why.c_str());
    return fs::kExitNoGpu;  // as the stage executables: the flags were fine, the machine has no GPU
  }
  try {
    const fs::DType type = dtype == "fp16" ? fs::DType::FP16 : fs::DType::BF16;
    const LtGemm gemm(m, n, k, dtype == "fp16" ? CUDA_R_16F : CUDA_R_16BF);
    fs::DeviceBuffer<uint16_t> a(std::size_t(m * k)), b(std::size_t(k * n)), c(std::size_t(m * n));
    fs::DeviceBuffer<unsigned char> ws(fs::kCublasWorkspaceBytes);
    FS_CHECK_STATUS(fs::fill_random_device(a.get(), a.size(), type, 1));
    FS_CHECK_STATUS(fs::fill_random_device(b.get(), b.size(), type, 2));
    std::printf("%s; %s M=%lld N=%lld K=%lld, C = A·B row-major, fp32 accumulation\n", dev->summary().c_str(),
                dtype.c_str(), (long long)m, (long long)n, (long long)k);

    if (!listed.empty()) {
      for (std::size_t i = 0; i < listed.size(); ++i) {
        cublasLtMatmulAlgo_t algo{};
        if (!gemm.configure(listed[i], &algo)) {
          std::fprintf(stderr, "error: configuration %s does not run this problem\n", listed[i].key().c_str());
          return 1;
        }
        FS_CHECK_STATUS(gemm.run(algo, a.get(), b.get(), c.get(), ws.get()));
        FS_CUDA_CHECK(cudaDeviceSynchronize());
        std::printf("launch %zu: %s\n", i, listed[i].key().c_str());
      }
      return 0;
    }

    const cublasLtMatmulAlgo_t picked = gemm.heuristic();
    std::printf("the heuristic's pick: %s\n", describe(picked).c_str());
    auto run = [&](const cublasLtMatmulAlgo_t& algo) { return gemm.run(algo, a.get(), b.get(), c.get(), ws.get()); };

    // Each algorithm's fastest few configurations, from a short timing of every configuration it
    // accepts: one untimed launch, then the median of three, the L2 flushed before each (fs::time_runs).
    // The untimed launch matters: a configuration's first launch loads its kernel (CUDA loads modules
    // lazily), and that load, between the start and end events, made one timed run rank the
    // configurations by whether their kernel was already loaded (NOTES.md).
    std::vector<Config> configs;
    int tried = 0;
    for (const int id : gemm.algo_ids()) {
      const cublasLtMatmulAlgo_t base = gemm.init(id);
      std::vector<std::pair<float, Config>> once;
      for (const uint32_t tile : cap_list(base, CUBLASLT_ALGO_CAP_TILE_IDS))
        for (const uint32_t stages : cap_list(base, CUBLASLT_ALGO_CAP_STAGES_IDS)) {
          const Config cfg{false, id, tile, stages};
          cublasLtMatmulAlgo_t algo{};
          if (!gemm.configure(cfg, &algo)) continue;
          ++tried;
          once.push_back({fs::median(fs::time_runs([&] { return run(algo); }, {1, 3}, dev->l2_bytes)), cfg});
        }
      std::sort(once.begin(), once.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      for (std::size_t i = 0; i < once.size() && i < 3; ++i) configs.push_back(once[i].second);
    }
    fs::GemmParams p{};
    p.m = m, p.n = n, p.k = k, p.ab_dtype = p.c_dtype = dtype == "fp16" ? FS_FP16 : FS_BF16;
    p.alpha = 1.0f, p.a = a.get(), p.lda = k, p.b = b.get(), p.ldb = n, p.c = c.get(), p.ldc = n;
    fs::CublasGemm cublas(p);
    // The contenders: the baseline, the pick, then `configs` in order.
    std::vector<std::function<fs::Status()>> contenders;
    contenders.push_back([&] {
      cublas.run(p);  // throws on an error
      return fs::Status::Success;
    });
    contenders.push_back([&, picked] { return run(picked); });
    for (const Config& cfg : configs) {
      cublasLtMatmulAlgo_t algo{};
      if (!gemm.configure(cfg, &algo)) throw fs::CudaError("cuBLASLt refused " + cfg.key() + " the second time");
      contenders.push_back([&, algo] { return run(algo); });
    }
    std::vector<float> median_ms;
    for (const auto& launch : contenders)
      median_ms.push_back(fs::median(fs::time_runs(launch, {0, repeats, fs::kSustainedWarmupSeconds}, dev->l2_bytes)));

    // One row per algorithm (its fastest configuration) after the two baselines.
    std::map<int, std::pair<float, std::string>> best;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const float ms = median_ms[i + 2];
      auto it = best.find(configs[i].id);
      if (it == best.end() || ms < it->second.first) best[configs[i].id] = {ms, configs[i].key()};
    }
    std::vector<std::pair<float, std::string>> rows(best.size());
    std::transform(best.begin(), best.end(), rows.begin(), [](const auto& e) { return e.second; });
    std::sort(rows.begin(), rows.end());
    const float cublas_ms = median_ms[0], pick_ms = median_ms[1];
    std::printf("%d configurations of %zu algorithms timed briefly; each algorithm's 3 fastest again, each after its "
                "own warm-up, median of %d runs; each algorithm's fastest:\n",
                tried, best.size(), repeats);
    std::printf("%-16s %10s %9s %10s\n", "id:tile:stages", "ms", "TFLOPS", "vs cublas");
    auto row = [&](const std::string& label, float ms, const char* note) {
      std::printf("%-16s %10.4f %9.1f %9.2fx%s\n", label.c_str(), ms, gemm.flops() / (ms * 1e9), cublas_ms / ms, note);
    };
    row("cublas", cublas_ms, "  (cublasGemmEx: the project's baseline)");
    row("pick", pick_ms, "  (cublasLtMatmul's heuristic, first choice)");
    std::string list = "pick";
    for (const auto& [ms, key] : rows) {
      row(key, ms, "");
      list += "," + key;
    }
    std::printf("configs: %s\n", list.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stage06_cublaslt_algos: %s\n", e.what());
    return 1;
  }
  return 0;
}
