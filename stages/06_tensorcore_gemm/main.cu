// Stage 06 executable: cuBLAS ("kernel 0") and every version of one element type on the same problem,
// each checked against the fp64 reference and timed. Exit code 1 when any result is wrong or a launch
// fails, 2 on bad arguments or no usable GPU.
//
//   stage06_gemm [--m 4096 --n 4096 --k 4096] [--dtype fp32|fp16|int8] [--c-dtype fp32|fp16|int32]
//                [--trans-a 0|1] [--trans-b 0|1] [--alpha 1 --beta 0] [--check 0|1] [--check-rows 64]
//                [--repeats 20] [--version vN]
//
// fp32 runs v1–v5 on uniform [-1, 1] inputs (checked against fp64 within sgemm_tolerance(K)); fp16
// runs v6–v7 and int8 runs v8 on small integers, which must match exactly. int8 defaults to
// --trans-b 1, the layout cuBLASLt's int8 kernels want.
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.h"
#include "cublas_gemm.h"
#include "device_check.h"
#include "device_info.h"
#include "flops.h"
#include "gemm.h"
#include "gemm_check.h"
#include "timer.h"

using namespace fs;

namespace {

struct Options {
  GemmShape shape;
  bool check = true;
  int64_t check_rows = 64;
  int repeats = 20;
  std::string only_version;
};

int32_t parse_type(const std::string& name, const char* option) {
  for (int32_t t : {FS_FP32, FS_FP16, FS_BF16, FS_INT8, FS_INT32})
    if (name == gemm_dtype_name(t)) return t;
  throw std::invalid_argument(std::string(option) + ": unknown type '" + name + "'");
}

Options parse(int argc, char** argv) {
  CommandLine cl(argc, argv, {});
  Options o;
  GemmShape& s = o.shape;
  s.m = cl.get_int("m", 4096);
  s.n = cl.get_int("n", s.m);
  s.k = cl.get_int("k", s.m);
  s.ab_dtype = parse_type(cl.get("dtype", "fp32"), "--dtype");
  if (s.ab_dtype != FS_FP32 && s.ab_dtype != FS_FP16 && s.ab_dtype != FS_INT8)
    throw std::invalid_argument("--dtype must be fp32, fp16 or int8");
  const char* default_c = s.ab_dtype == FS_INT8 ? "int32" : gemm_dtype_name(s.ab_dtype);
  s.c_dtype = parse_type(cl.get("c-dtype", default_c), "--c-dtype");
  s.trans_a = cl.get_bool("trans-a", false);
  s.trans_b = cl.get_bool("trans-b", s.ab_dtype == FS_INT8);
  s.alpha = static_cast<float>(cl.get_double("alpha", 1.0));
  s.beta = static_cast<float>(cl.get_double("beta", 0.0));
  s.integers = s.ab_dtype != FS_FP32;
  o.check = cl.get_bool("check", true);
  o.check_rows = cl.get_int("check-rows", 64);
  o.repeats = static_cast<int>(cl.get_int("repeats", 20));
  o.only_version = cl.get("version", "");
  const auto unread = cl.unread();
  if (!unread.empty()) throw std::invalid_argument("unknown option " + unread.front());
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) throw std::invalid_argument("--m, --n and --k must be positive");
  return o;
}

std::vector<const GemmKernel*> versions_for(int32_t ab_dtype) {
  if (ab_dtype == FS_FP32) return {&kGemmV1, &kGemmV2, &kGemmV3, &kGemmV4, &kGemmV5};
  if (ab_dtype == FS_FP16) return {&kGemmV6, &kGemmV7};
  return {&kGemmV8};
}

struct Row {
  std::string name, verdict;
  double ms = 0, tflops = 0;
};

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  try {
    opt = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  std::printf("flashstages stage 06 — GEMM: SIMT fp32, WMMA fp16 and int8, against cuBLAS\n");
  std::string why;
  const auto dev = usable_device(&why);
  if (!dev) {
    std::printf("%s: nothing to run\n", why.c_str());
    return 2;
  }
  std::printf("device: %s\n", dev->summary().c_str());

  try {
    const GemmShape& s = opt.shape;
    GemmProblem problem(s, /*seed=*/20261206, opt.check ? opt.check_rows : -1);
    const GemmParams p = problem.params();
    const double flops = gemm_flops(s.m, s.n, s.k);
    const double bytes = gemm_min_bytes(s.m, s.n, s.k, double(gemm_dtype_size(s.ab_dtype)),
                                        double(gemm_dtype_size(s.c_dtype)), s.beta != 0.0f);
    const bool int8 = s.ab_dtype == FS_INT8;
    const double peak = s.ab_dtype == FS_FP32 ? dev->peak_fp32_tflops
                        : int8                ? dev->peak_int8_tops
                                              : dev->peak_fp16_tflops;
    const char* unit = int8 ? "TOPS" : "TFLOPS";
    std::printf("problem: %s\n", describe(s).c_str());
    std::printf("work: %.3g %s; least traffic (A, B read once, C written once) %.1f MB; peak %.1f %s\n", flops,
                int8 ? "OP" : "FLOP", bytes / 1e6, peak, unit);

    int failures = 0;
    std::vector<Row> rows;
    // Checks (unless --check 0) and times one implementation; returns its median time in ms or 0.
    auto measure = [&](const std::string& name, const std::string& technique,
                       const std::function<Status(const GemmParams&)>& launch) {
      std::printf("\n%s — %s\n", name.c_str(), technique.c_str());
      Row row{name, "unchecked"};
      if (opt.check) {
        const GemmCheck c = problem.run(launch);
        if (c.status != Status::Success) {
          std::printf("  launch failed: %s (%s)\n", status_name(c.status), status_message(c.status));
          ++failures;
          return 0.0;
        }
        const bool ok = gemm_passed(s, c);
        std::printf("  check vs fp64 (%lld rows): %s, %lld mismatches%s -> %s\n", (long long)c.rows_checked,
                    c.c.str().c_str(), (long long)c.c.mismatches, c.outside_untouched ? "" : ", C PADDING WRITTEN",
                    ok ? "PASS" : "FAIL");
        row.verdict = ok ? "PASS" : "FAIL";
        if (!ok) ++failures;
      }
      Status st = Status::Success;
      const auto ms = time_runs([&] { st = launch(p); }, {3, opt.repeats, true}, dev->l2_bytes);
      if (st != Status::Success) {
        std::printf("  launch failed: %s\n", status_name(st));
        ++failures;
        return 0.0;
      }
      row.ms = median(ms);
      row.tflops = flops / (row.ms * 1e-3) * 1e-12;
      std::printf("  time: median %.3f ms of %d runs -> %.2f %s (%.1f%% of peak), %.0f GB/s least traffic\n", row.ms,
                  opt.repeats, row.tflops, unit, 100.0 * row.tflops / peak, bytes / (row.ms * 1e-3) * 1e-9);
      rows.push_back(row);
      return row.ms;
    };

    double baseline_ms = 0;
    std::unique_ptr<CublasGemm> peer;
    try {
      peer = std::make_unique<CublasGemm>(p);
    } catch (const std::exception& e) {
      std::printf("\ncuBLAS baseline unavailable for this problem: %s\n", e.what());
    }
    if (peer) {
      const std::string name = std::string(peer->name()) + "/" + gemm_dtype_name(s.ab_dtype);
      baseline_ms = measure(name, "kernel 0: the vendor library", [&](const GemmParams& q) {
        peer->run(q);
        return Status::Success;
      });
    }
    for (const GemmKernel* k : versions_for(s.ab_dtype)) {
      if (!opt.only_version.empty() && opt.only_version != k->version) continue;
      measure(std::string(k->stage) + "/" + k->version, k->technique,
              [k](const GemmParams& q) { return k->launch(q, nullptr); });
    }

    std::printf("\n%-16s %10s %9s %8s %9s  %s\n", "implementation", "ms", unit, "%peak", "vs cuBLAS", "check");
    for (const Row& r : rows) {
      char ratio[32] = "-";
      if (baseline_ms > 0) std::snprintf(ratio, sizeof ratio, "%.2fx", baseline_ms / r.ms);
      std::printf("%-16s %10.3f %9.2f %7.1f%% %9s  %s\n", r.name.c_str(), r.ms, r.tflops,
                  100.0 * r.tflops / peak, ratio, r.verdict.c_str());
    }
    if (failures) std::printf("%d implementation(s) FAILED\n", failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
