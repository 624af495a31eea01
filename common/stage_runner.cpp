#include "stage_runner.h"

#include <cstdio>
#include <exception>
#include <iterator>
#include <string>
#include <vector>

#include "attention_check.h"
#include "cli.h"
#include "device_check.h"
#include "flops.h"
#include "random.h"
#include "timer.h"

namespace fs {

namespace {

struct Options {
  AttentionShape shape;
  bool check = true;
  int check_heads = 0;
  int repeats = 20;
  std::string only_version;
};

// The stage's own kernel is the last version; its first dtype is the default (fp16 from stage 04 on).
DType default_dtype(unsigned dtypes) {
  for (DType t : {DType::FP32, DType::FP16, DType::BF16})
    if (dtypes & dtype_bit(t)) return t;
  return DType::FP32;
}

Options parse(int argc, char** argv, DType fallback_dtype) {
  CommandLine cl(argc, argv, {"causal"});
  Options o;
  AttentionShape& s = o.shape;
  s.seq_q = cl.get_int("seq", 4096);
  s.seq_k = cl.get_int("seq-k", s.seq_q);
  s.head_dim = cl.get_int("dim", 64);
  s.batch = cl.get_int("batch", s.seq_q >= 16384 ? 1 : 16384 / s.seq_q);
  s.heads = cl.get_int("heads", s.head_dim > 0 && s.head_dim <= 2048 ? 2048 / s.head_dim : 1);
  s.causal = cl.get_bool("causal", false);
  s.scale = static_cast<float>(cl.get_double("scale", 0.0));
  const std::string dt = cl.get("dtype", dtype_name(fallback_dtype));
  const auto dtype = parse_dtype(dt);
  if (!dtype) throw std::invalid_argument("--dtype must be fp32, fp16 or bf16, got '" + dt + "'");
  s.dtype = *dtype;
  o.check = cl.get_bool("check", true);
  // The fp64 reference costs 4·Nq·Nk·D per head: check every head of small problems, two of large.
  const double per_head = double(s.seq_q) * double(s.seq_k) * double(s.head_dim);
  o.check_heads = static_cast<int>(cl.get_int("check-heads", per_head > 2e8 ? 2 : per_head > 2e7 ? 8 : 0));
  o.repeats = static_cast<int>(cl.get_int("repeats", 20));
  o.only_version = cl.get("version", "");
  const auto unread = cl.unread();
  if (!unread.empty()) throw std::invalid_argument("unknown option " + unread.front());
  return o;
}

}  // namespace

int run_attention_stage(int argc, char** argv, const char* title, std::initializer_list<AttentionKernel> versions) {
  Options opt;
  try {
    opt = parse(argc, argv, default_dtype(std::data(versions)[versions.size() - 1].dtypes));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  std::printf("flashstages %s\n", title);
  std::string why;
  const auto dev = usable_device(&why);
  if (!dev) {
    std::printf("%s: nothing to run\n", why.c_str());
    return 2;
  }
  std::printf("device: %s\n", dev->summary().c_str());

  try {
    AttentionProblem problem(opt.shape, /*seed=*/20261122, opt.check ? opt.check_heads : -1);
    const AttentionParams p = problem.params();
    const double flops = attention_fwd_flops(p);
    const bool tensor = opt.shape.dtype != DType::FP32;
    const double peak = tensor ? dev->peak_fp16_tflops : dev->peak_fp32_tflops;
    std::printf("problem: %s\n", describe(p).c_str());
    std::printf("work: %.3g FLOP; least traffic (Q, K, V, O, LSE once) %.1f MB\n", flops,
                attention_fwd_min_bytes(p) / 1e6);

    int failures = 0;
    std::vector<std::string> rows;
    for (const AttentionKernel& k : versions) {
      const std::string qualified = std::string(k.stage) + "/" + k.version;
      if (!opt.only_version.empty() && opt.only_version != k.version && opt.only_version != qualified) continue;
      if (!(k.dtypes & dtype_bit(opt.shape.dtype))) {
        std::printf("\n%s — takes no %s: skipped\n", qualified.c_str(), dtype_name(opt.shape.dtype));
        continue;
      }
      const double extra = double(k.extra_bytes(p));
      const double traffic = k.traffic_bytes ? k.traffic_bytes(p) : attention_fwd_min_bytes(p);
      std::printf("\n%s/%s — %s\n", k.stage, k.version, k.technique);
      std::printf("  extra device memory: %.1f MiB; modelled DRAM traffic %.1f MB\n", extra / (1 << 20),
                  traffic / 1e6);
      std::string verdict = "unchecked";
      if (opt.check) {
        const AttentionCheck c = problem.run(k);
        if (c.status != Status::Success) {
          std::printf("  launch failed: %s (%s)\n", status_name(c.status), status_message(c.status));
          ++failures;
          continue;
        }
        const bool ok = c.passed(attention_tolerance(opt.shape.dtype), lse_tolerance(opt.shape.dtype));
        std::printf("  check vs fp64 (%d heads): O %s | LSE %s -> %s\n", c.heads_checked, c.o.str().c_str(),
                    c.lse.str().c_str(), ok ? "PASS" : "FAIL");
        verdict = ok ? "PASS" : "FAIL";
        if (!ok) ++failures;
      }
      Status launch_status = Status::Success;
      const auto ms = time_runs([&] { launch_status = k.launch(p, nullptr); }, {3, opt.repeats, true},
                                dev->l2_bytes);
      if (launch_status != Status::Success) {
        std::printf("  launch failed: %s\n", status_name(launch_status));
        ++failures;
        continue;
      }
      const double t = median(ms) * 1e-3;
      const double tflops = flops / t * 1e-12;
      std::printf("  time: median %.3f ms of %d runs -> %.2f TFLOPS (%.1f%% of %s peak), %.0f GB/s modelled\n",
                  t * 1e3, opt.repeats, tflops, 100.0 * tflops / peak, tensor ? "FP16 tensor" : "FP32",
                  traffic / t * 1e-9);
      char row[256];
      std::snprintf(row, sizeof row, "%-10s %-3s %10.3f %9.2f %7.1f%% %10.1f  %s", k.stage, k.version, t * 1e3,
                    tflops, 100.0 * tflops / peak, extra / (1 << 20), verdict.c_str());
      rows.push_back(row);
    }
    std::printf("\n%-10s %-3s %10s %9s %8s %10s  %s\n", "stage", "ver", "ms", "TFLOPS", "%peak", "extra MiB",
                "check");
    for (const auto& r : rows) std::printf("%s\n", r.c_str());
    if (failures) std::printf("%d version(s) FAILED\n", failures);
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace fs
