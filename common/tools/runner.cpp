#include "common/tools/runner.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <exception>
#include <limits>
#include <stdexcept>

#include "common/lib/flops.h"
#include "common/lib/kernel.h"
#include "common/tools/attention_check.h"
#include "common/tools/device_info.h"
#include "common/tools/gemm_check.h"
#include "common/tools/timing.h"

namespace fs {

namespace {

// ---- Command-line values ---------------------------------------------------------------------

CLI::Validator at_least(int64_t lo) { return decimal_in(lo, std::numeric_limits<int64_t>::max()); }

const CLI::Validator kFinite(
    [](std::string& s) -> std::string {
      double v = 0;
      if (!CLI::detail::lexical_cast(s, v)) return "expects a number, got '" + s + "'";
      if (!std::isfinite(v)) return "must be a finite number, got " + s;
      return {};
    },
    "FINITE");

// The names of the dtypes in a dtype_bit() set: "fp16, bf16".
std::string dtype_list(uint32_t set) {
  std::string s;
  for (DType t : kAllDtypes)
    if (set & dtype_bit(t)) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s;
}

const char* first_dtype(uint32_t set) {
  for (DType t : kAllDtypes)
    if (set & dtype_bit(t)) return dtype_name(t);
  return "none";
}

// An attention stage's default dtype: the first one its last version takes, passing over a version that
// takes fp8 alone (stage 07's v9), whose inputs need scales a user picks with them.
const char* default_attention_dtype(const std::vector<const KernelDesc*>& own) {
  for (auto k = own.rbegin(); k != own.rend(); ++k)
    if ((*k)->info.in_dtypes & ~dtype_bit(DType::FP8_E4M3)) return first_dtype((*k)->info.in_dtypes);
  return first_dtype(own.back()->info.in_dtypes);
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

// A bad combination of flags, found after parsing: kExitUsage with this message.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Fake, well-aligned device pointers: validation never dereferences them, so the problem can be
// checked before any GPU is looked for.
void* fake_pointer(int i) { return reinterpret_cast<void*>(std::uintptr_t(0x100000) * (i + 1)); }

// ---- What every run shares -------------------------------------------------------------------

struct Common {
  bool check = true;
  int repeats = 20;
  std::string only_version;
};

struct Row {
  std::string name, verdict = "unchecked";
  double ms = 0, rate = 0, extra_mib = -1;
};

// The problem of one run: its inputs on the device, the check of one kernel against fp64, a launch.
class Problem {
 public:
  virtual ~Problem() = default;
  virtual void print_header(const DeviceInfo& dev) const = 0;
  virtual double flops() const = 0;
  virtual const char* unit() const = 0;  // "TFLOPS", "TOPS"
  virtual double peak(const DeviceInfo& dev) const = 0;
  virtual double traffic_bytes(const KernelDesc* k) const = 0;
  virtual double extra_bytes(const KernelDesc* k) const = 0;  // < 0: not reported
  // Checks once against fp64, prints the line, returns "PASS", "FAIL" or the failed launch's status.
  virtual std::string check(const KernelDesc* k, const std::function<Status()>& launch) = 0;
  virtual Status launch(const KernelDesc& k) = 0;
  // The launch that is timed: on the problem's timing inputs where they differ from the checked ones.
  virtual Status launch_timed(const KernelDesc& k) { return launch(k); }
};

// Checks and times one implementation (a kernel, or the peer when `k` is null); false when it failed.
// `checked` runs on the inputs the check compares; `timed` on the inputs the time is taken on (the same
// for attention; for a GEMM, random reals instead of the check's small integers).
bool measure(Problem& problem, const Common& opt, const DeviceInfo& dev, const KernelDesc* k, const std::string& name,
             const std::string& technique, const std::function<Status()>& checked,
             const std::function<Status()>& timed, std::vector<Row>* rows) {
  std::printf("\n%s — %s\n", name.c_str(), technique.c_str());
  Row row;
  row.name = name;
  if (k) {
    const double extra = problem.extra_bytes(k);
    char memory[48] = "none";
    if (extra >= 0) std::snprintf(memory, sizeof memory, "%.1f MiB", extra / (1 << 20));
    std::printf("  extra device memory: %s; modelled DRAM traffic %.1f MB\n", memory, problem.traffic_bytes(k) / 1e6);
    row.extra_mib = extra < 0 ? -1 : extra / (1 << 20);
  }
  if (opt.check) {
    row.verdict = problem.check(k, checked);
    if (row.verdict != "PASS" && row.verdict != "FAIL") return false;
  }
  try {
    row.ms = median(time_runs(timed, {3, opt.repeats, kSustainedWarmupSeconds}, dev.l2_bytes));
  } catch (const std::exception& e) {
    std::printf("  launch failed while timing: %s\n", e.what());
    return false;
  }
  row.rate = problem.flops() / (row.ms * 1e-3) * 1e-12;
  const double peak = problem.peak(dev);
  std::printf("  time: median %.3f ms of %d runs -> %.2f %s (%.1f%% of peak), %.0f GB/s modelled\n", row.ms,
              opt.repeats, row.rate, problem.unit(), 100.0 * row.rate / peak,
              problem.traffic_bytes(k) / (row.ms * 1e-3) * 1e-9);
  rows->push_back(row);
  return row.verdict != "FAIL";
}

// ---- Attention -------------------------------------------------------------------------------

struct AttentionOptions {
  int64_t batch = 0, heads = 0, kv_heads = 0, seq = 4096, seq_k = 0, dim = 64, check_heads = -1;
  bool causal = false;
  bool deterministic = false;  // backward stages
  double scale = 0.0;
  std::string dtype;
};

class AttentionJob : public Problem {
 public:
  AttentionJob(const AttentionParams& shape, int check_heads)
      : fixture_(shape, /*seed=*/20261122, check_heads) {}
  void print_header(const DeviceInfo&) const override {
    const AttentionParams p = fixture_.params();
    std::printf("problem: %s\n", describe(p).c_str());
    std::printf("work: %.3g FLOP; least traffic (Q, K, V, O, LSE once) %.1f MB\n", flops(),
                attention_fwd_min_bytes(p) / 1e6);
  }
  double flops() const override { return attention_fwd_flops(fixture_.shape()); }
  const char* unit() const override { return "TFLOPS"; }
  double peak(const DeviceInfo& dev) const override {
    switch (dtype_of(fixture_.shape())) {
      case DType::FP32: return dev.peak_fp32_tflops;
      case DType::FP8_E4M3: return dev.peak_fp8_tflops;
      default: return dev.peak_fp16_tflops;
    }
  }
  double traffic_bytes(const KernelDesc* k) const override {
    const AttentionParams p = fixture_.params();
    return k && k->traffic_bytes ? k->traffic_bytes(p) : attention_fwd_min_bytes(p);
  }
  double extra_bytes(const KernelDesc* k) const override { return double(k->extra_bytes(fixture_.params())); }
  std::string check(const KernelDesc* k, const std::function<Status()>&) override {
    const AttentionCheck c = fixture_.run(*k);
    if (c.status != Status::Success) {
      std::printf("  launch failed: %s (%s)\n", status_name(c.status), status_message(c.status));
      return status_name(c.status);
    }
    const DType t = dtype_of(fixture_.shape());
    const bool ok = c.passed(attention_tolerance(t), lse_tolerance(t));
    std::printf("  check vs fp64 (%d heads): O %s | LSE %s -> %s\n", c.heads_checked, c.o.str().c_str(),
                c.lse.str().c_str(), ok ? "PASS" : "FAIL");
    return ok ? "PASS" : "FAIL";
  }
  Status launch(const KernelDesc& k) override { return fs::launch(k, fixture_.params(), nullptr); }

 private:
  AttentionFixture fixture_;
};

// The backward of the same problem: checked on the fixture's inputs with delta asked for, timed as a
// training step calls it, without (the version keeps delta in a workspace).
class BackwardJob : public Problem {
 public:
  BackwardJob(const AttentionParams& shape, int check_heads, bool deterministic)
      : fixture_(shape, /*seed=*/20261122, check_heads), deterministic_(deterministic) {}
  void print_header(const DeviceInfo&) const override {
    std::printf("problem: backward of %s%s\n", describe(fixture_.shape()).c_str(),
                deterministic_ ? ", deterministic dQ" : "");
    std::printf("work: %.3g FLOP (2.5x the forward's); least traffic (Q, K, V, O, dO, LSE read once, dQ, dK, dV "
                "written once) %.1f MB\n",
                flops(), attention_bwd_min_bytes(fixture_.shape()) / 1e6);
  }
  double flops() const override { return attention_bwd_flops(fixture_.shape()); }
  const char* unit() const override { return "TFLOPS"; }
  double peak(const DeviceInfo& dev) const override {
    switch (dtype_of(fixture_.shape())) {
      case DType::FP32: return dev.peak_fp32_tflops;
      case DType::FP8_E4M3: return dev.peak_fp8_tflops;
      default: return dev.peak_fp16_tflops;
    }
  }
  double traffic_bytes(const KernelDesc* k) const override {
    return k && k->traffic_bytes ? k->traffic_bytes(fixture_.shape()) : attention_bwd_min_bytes(fixture_.shape());
  }
  double extra_bytes(const KernelDesc* k) const override {
    return double(k->bwd_extra_bytes(fixture_.shape(), deterministic_));
  }
  std::string check(const KernelDesc* k, const std::function<Status()>&) override {
    const AttentionBwdCheck c = fixture_.run(*k, checked_params());
    if (c.status != Status::Success) {
      std::printf("  launch failed: %s (%s)\n", status_name(c.status), status_message(c.status));
      return status_name(c.status);
    }
    const bool ok = c.passed(backward_tolerance(dtype_of(fixture_.shape())));
    std::printf("  check vs fp64 (%d heads): dQ %s | dK %s | dV %s | delta %s -> %s\n", c.heads_checked,
                c.dq.str().c_str(), c.dk.str().c_str(), c.dv.str().c_str(), c.delta.str().c_str(),
                ok ? "PASS" : "FAIL");
    return ok ? "PASS" : "FAIL";
  }
  Status launch(const KernelDesc& k) override { return fs::launch(k, checked_params(), nullptr); }
  Status launch_timed(const KernelDesc& k) override {
    AttentionBwdParams p = checked_params();
    p.delta = nullptr;
    return fs::launch(k, p, nullptr);
  }

 private:
  AttentionBwdParams checked_params() const {
    AttentionBwdParams p = fixture_.params();
    p.deterministic = deterministic_;
    return p;
  }
  AttentionBwdFixture fixture_;
  bool deterministic_;
};

void add_attention_options(CLI::App& app, AttentionOptions& o, const std::string& default_dtype,
                           const std::vector<std::string>& dtypes, bool backward) {
  o.dtype = default_dtype;
  app.add_option("--batch", o.batch, "B, batch entries [default: 16384 / N, at least 1]")->transform(at_least(1));
  app.add_option("--heads", o.heads, "H, heads [default: 2048 / D, at least 1]")->transform(at_least(1));
  app.add_option("--kv-heads", o.kv_heads, "KVH, K/V heads, a divisor of H (grouped-query attention) [default: H]")
      ->transform(at_least(1));
  app.add_option("--seq", o.seq, "Nq, query rows per head")->capture_default_str()->transform(at_least(1));
  app.add_option("--seq-k", o.seq_k, "Nk, key and value rows per head [default: Nq]")->transform(at_least(1));
  app.add_option("--dim", o.dim, "D, head_dim")->capture_default_str()->transform(at_least(1));
  app.add_flag("--causal", o.causal, "causal mask, aligned bottom-right (also --causal=0/1 or =false/true)")
      ->check(switch_value());
  app.add_option("--scale", o.scale, "softmax scale; 0 selects 1/sqrt(D)")->capture_default_str()->check(kFinite);
  app.add_option("--dtype", o.dtype, "element type of Q, K, V, O")
      ->capture_default_str()
      ->check(CLI::IsMember(dtypes));
  app.add_option("--check-heads", o.check_heads,
                 "heads checked against fp64; 0 = all [default: all, 8 or 2 as the problem grows]")
      ->transform(at_least(0));
  if (backward)
    app.add_flag("--deterministic", o.deterministic,
                 "dQ bitwise the same on every run (no unordered atomics; also --deterministic=0/1 or =false/true)")
        ->check(switch_value());
}

AttentionParams attention_params(const AttentionOptions& o) {
  AttentionParams p{};
  p.seq_q = o.seq;
  p.seq_k = o.seq_k ? o.seq_k : o.seq;
  p.head_dim = o.dim;
  p.batch = o.batch ? o.batch : std::max<int64_t>(1, 16384 / o.seq);
  p.heads = o.heads ? o.heads : std::max<int64_t>(1, 2048 / o.dim);
  p.kv_heads = o.kv_heads;
  p.causal = o.causal;
  p.scale = float(o.scale);
  p.dtype = static_cast<int32_t>(*parse_dtype(o.dtype));
  return p;
}

// Why no version takes the problem, in terms of the flags: what the judged versions take together,
// named as gemm_refusal names them (the version, when one was asked for). The head_dims are those of
// the versions that take the dtype, where any does (stage 07's fp8 v9 takes 128 alone).
std::string attention_refusal(Status st, const AttentionParams& p, const std::vector<const KernelDesc*>& judged) {
  uint32_t dtypes = 0;
  std::vector<const KernelDesc*> typed;  // the judged versions that take p's dtype
  for (const KernelDesc* k : judged) {
    dtypes |= k->info.in_dtypes;
    if (in_set(k->info.in_dtypes, p.dtype)) typed.push_back(k);
  }
  const std::vector<const KernelDesc*>& takers = typed.empty() ? judged : typed;
  int64_t any_up_to = 0;  // the largest bound of the versions that take any head_dim up to one
  std::vector<int64_t> listed;
  for (const KernelDesc* k : takers) {
    if (k->info.num_head_dims == 0) any_up_to = std::max<int64_t>(any_up_to, k->info.max_head_dim);
    listed.insert(listed.end(), k->info.head_dims, k->info.head_dims + k->info.num_head_dims);
  }
  std::sort(listed.begin(), listed.end());
  listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
  const std::string who = judged.size() == 1 ? judged.front()->qualified() : "any version";
  const bool all_typed = typed.empty() || typed.size() == judged.size();
  const std::string dim_who = takers.size() == 1 ? takers.front()->qualified()
                              : all_typed        ? who
                                                 : "any " + std::string(dtype_name(dtype_of(p))) + " version";
  switch (st) {
    case Status::UnsupportedHeadDim: {
      std::string dims;
      for (int64_t d : listed) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      if (any_up_to > 0) dims += (dims.empty() ? "" : ", or ") + std::string("1 to ") + std::to_string(any_up_to);
      return "--dim: " + std::to_string(p.head_dim) + " is not a head_dim " + dim_who + " takes (" + dims + ")";
    }
    case Status::UnsupportedDtype:
      return std::string("--dtype: ") + dtype_name(dtype_of(p)) + " is not taken by " + who + " (" +
             dtype_list(dtypes) + ")";
    case Status::UnsupportedMask:
      return "--causal needs Nq <= Nk (--seq " + std::to_string(p.seq_q) + ", --seq-k " + std::to_string(p.seq_k) +
             "): the first query rows would see no key";
    case Status::InvalidKvHeads:
      return "--kv-heads: " + std::to_string(p.kv_heads) + " must divide --heads " + std::to_string(p.heads) +
             " (each K/V head serves H / KVH query heads)";
    case Status::InvalidSize:
      return "--batch, --heads, --seq, --seq-k, --dim: " + describe(p) + " is too large (its byte counts pass 2^63)";
    default:
      return describe(p) + ": " + status_message(st);
  }
}

// ---- GEMM ------------------------------------------------------------------------------------

struct GemmOptions {
  int64_t m = 4096, n = 0, k = 0, check_rows = 64;
  std::string dtype = "fp32", c_dtype;
  int trans_a = 0, trans_b = -1;
  double alpha = 1.0, beta = 0.0;
};

class GemmJob : public Problem {
 public:
  // The check runs on small integers (exact); the time is taken on a second set of inputs drawn as
  // the benchmarks draw them, uniform [-1, 1] (int8: the whole range): a tensor core's power, and so
  // the clock it holds, depends on the data, and small integers flatter every kernel and cuBLAS alike.
  GemmJob(const GemmCase& g, int64_t check_rows)
      : case_(g), fixture_(g, /*seed=*/20261206, check_rows), timed_(random_reals(g), /*seed=*/20261207, -1) {}
  void print_header(const DeviceInfo& dev) const override {
    std::printf("problem: %s\n", describe(case_).c_str());
    std::printf("work: %.3g %s; least traffic (A, B read once, C written once) %.1f MB; peak %.1f %s\n", flops(),
                int8() ? "OP" : "FLOP", traffic_bytes(nullptr) / 1e6, peak(dev), unit());
    std::printf("timed on: %s (the check's inputs are not timed)\n",
                int8() ? "a second draw over the int8 range" : "uniform [-1, 1] reals");
  }
  double flops() const override { return gemm_flops(case_.shape.m, case_.shape.n, case_.shape.k); }
  const char* unit() const override { return int8() ? "TOPS" : "TFLOPS"; }
  double peak(const DeviceInfo& dev) const override {
    return case_.shape.ab_dtype == FS_FP32 ? dev.peak_fp32_tflops : int8() ? dev.peak_int8_tops : dev.peak_fp16_tflops;
  }
  double traffic_bytes(const KernelDesc*) const override {
    const GemmParams& s = case_.shape;
    return gemm_min_bytes(s.m, s.n, s.k, double(dtype_size(DType(s.ab_dtype))), double(dtype_size(DType(s.c_dtype))),
                          s.beta != 0.0f);
  }
  double extra_bytes(const KernelDesc* k) const override {
    return k && k->gemm_extra_bytes ? double(k->gemm_extra_bytes(fixture_.params())) : -1;
  }
  std::string check(const KernelDesc*, const std::function<Status()>& launch) override {
    const GemmCheck c = fixture_.run([&](const GemmParams&) { return launch(); });
    if (c.status != Status::Success) {
      std::printf("  launch failed: %s (%s)\n", status_name(c.status), status_message(c.status));
      return status_name(c.status);
    }
    const bool ok = gemm_passed(case_, c);
    std::printf("  check vs fp64 (%lld rows): %s, %lld mismatches%s -> %s\n", (long long)c.rows_checked,
                c.c.str().c_str(), (long long)c.c.mismatches, c.outside_untouched ? "" : ", C PADDING WRITTEN",
                ok ? "PASS" : "FAIL");
    return ok ? "PASS" : "FAIL";
  }
  Status launch(const KernelDesc& k) override { return fs::launch(k, fixture_.params(), nullptr); }
  Status launch_timed(const KernelDesc& k) override { return fs::launch(k, timed_.params(), nullptr); }
  GemmParams params() const { return fixture_.params(); }
  GemmParams timed_params() const { return timed_.params(); }

 private:
  static GemmCase random_reals(GemmCase g) {
    g.integers = false;
    return g;
  }
  bool int8() const { return case_.shape.ab_dtype == FS_INT8; }
  GemmCase case_;
  GemmFixture fixture_, timed_;
};

void add_gemm_options(CLI::App& app, GemmOptions& o, const std::vector<std::string>& dtypes) {
  app.add_option("--m", o.m, "M, rows of C")->capture_default_str()->transform(at_least(1));
  app.add_option("--n", o.n, "N, columns of C [default: M]")->transform(at_least(1));
  app.add_option("--k", o.k, "K, the reduction [default: M]")->transform(at_least(1));
  app.add_option("--dtype", o.dtype, "element type of A and B")->capture_default_str()->check(CLI::IsMember(dtypes));
  app.add_option("--c-dtype", o.c_dtype, "element type of C [default: int32 for int8, else the input type]")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16", "int32"}));
  app.add_option("--trans-a", o.trans_a, "A stored K×M")->capture_default_str()->transform(decimal_in(0, 1));
  app.add_option("--trans-b", o.trans_b, "B stored N×K [default: 1 for int8, cuBLASLt's layout; else 0]")
      ->transform(decimal_in(0, 1));
  app.add_option("--alpha", o.alpha, "C = alpha·op(A)·op(B) + beta·C")->capture_default_str()->check(kFinite);
  app.add_option("--beta", o.beta, "beta = 0 never reads C")->capture_default_str()->check(kFinite);
  app.add_option("--check-rows", o.check_rows, "rows of C checked against fp64; 0 = all")
      ->capture_default_str()
      ->transform(at_least(0));
}

GemmCase gemm_problem(const GemmOptions& o) {
  const DType ab = *parse_dtype(o.dtype);
  const DType c = o.c_dtype.empty() ? (ab == DType::INT8 ? DType::INT32 : ab) : *parse_dtype(o.c_dtype);
  const int trans_b = o.trans_b >= 0 ? o.trans_b : ab == DType::INT8;
  GemmCase g = gemm_case(o.m, o.n ? o.n : o.m, o.k ? o.k : o.m, ab, c, o.trans_a != 0, trans_b != 0);
  g.shape.alpha = float(o.alpha);
  g.shape.beta = float(o.beta);
  g.integers = ab != DType::FP32;  // fp16 and int8 run on small integers: the check is exact
  return g;
}

std::string gemm_refusal(Status st, const GemmParams& p, const std::vector<const KernelDesc*>& judged) {
  uint32_t in = 0, out = 0;
  uint32_t layouts = 0;                    // those taken by the versions that take these types
  std::vector<std::string> names, takers;  // all judged; those that take these types
  for (const KernelDesc* k : judged) {
    in |= k->info.in_dtypes;
    out |= k->info.out_dtypes;
    names.push_back(k->qualified());
    if (in_set(k->gemm.ab_dtypes, p.ab_dtype) && in_set(k->gemm.c_dtypes, p.c_dtype)) {
      layouts |= k->gemm.layouts;
      takers.push_back(k->qualified());
    }
  }
  const std::string who = takers.size() == 1   ? takers.front()
                          : judged.size() == 1 ? names.front()
                                               : "these versions";
  switch (st) {
    case Status::UnsupportedDtype:
      return std::string("--dtype/--c-dtype: ") + dtype_name(DType(p.ab_dtype)) + " -> " +
             dtype_name(DType(p.c_dtype)) + " is not taken by " +
             (judged.size() == 1 ? names.front() : "any version") + " (inputs: " + dtype_list(in) +
             "; outputs: " + dtype_list(out) + ")";
    case Status::InvalidSize: return "--m, --n, --k: " + describe(p) + " is too large (its byte counts pass 2^63)";
    case Status::InvalidLeadingDim:  // the executable stores A and B tight: their rows are K, M or N long
      return "--m, --n, --k: " + describe(p) + ": the rows of A and B (stored tight: K, M or N elements) must be " +
             "multiples of 16 bytes (" + std::to_string(16 / dtype_size(DType(p.ab_dtype))) + " " +
             dtype_name(DType(p.ab_dtype)) + ") for " + who + ", which read them with TMA";
    case Status::UnsupportedLayout: {
      std::string taken;
      for (int ta = 0; ta < 2; ++ta)
        for (int tb = 0; tb < 2; ++tb)
          if (layouts & layout_bit(ta, tb))
            taken += std::string(taken.empty() ? "" : ", ") + "--trans-a " + std::to_string(ta) + " --trans-b " +
                     std::to_string(tb);
      return "--trans-a, --trans-b: " + describe(p) + " is not a layout " + join(takers) + " take" +
             (takers.size() == 1 ? "s" : "") + " (" + taken + ")";
    }
    default: return describe(p) + ": " + status_message(st);
  }
}

// ---- The run ---------------------------------------------------------------------------------

std::vector<const KernelDesc*> resolve(const std::vector<std::string>& names) {
  std::vector<const KernelDesc*> out;
  for (const auto& n : names)
    for (const KernelDesc* k : find_kernels(n)) out.push_back(k);
  return out;
}

bool selected(const KernelDesc& k, const std::string& only) {
  return only.empty() || only == k.info.version || only == k.qualified();
}

}  // namespace

CLI::Validator decimal_in(int64_t lo, int64_t hi) {
  const bool open = hi == std::numeric_limits<int64_t>::max();
  const std::string bounds = open ? "at least " + std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [lo, hi, bounds](std::string& s) -> std::string {
        // from_chars reads decimal digits after an optional minus sign, and nothing else: no base
        // prefix, no sign +, no spaces, no digit separators; the whole string must be the number.
        int64_t v = 0;
        const char* end = s.data() + s.size();
        const auto [stop, error] = std::from_chars(s.data(), end, v);
        if (s.empty() || stop != end || error == std::errc::invalid_argument)
          return "expects a decimal integer, got '" + s + "'";
        if (error == std::errc::result_out_of_range || v < lo || v > hi) return "must be " + bounds + ", got " + s;
        s = std::to_string(v);  // as CLI11 reads it next: 010 stays ten
        return {};
      },
      open ? ">=" + std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi));
}

const CLI::Validator& switch_value() {
  static const CLI::Validator v(
      [](std::string& s) -> std::string {
        if (s == "0" || s == "1" || s == "false" || s == "true") return {};
        return "takes 0, 1, false or true, got '" + s + "'";
      },
      "0|1");
  return v;
}

int parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::printf("%s", app.help().c_str());
    std::printf("Exit codes: %d done, every check passed; %d a wrong result or a failed launch; %d a bad flag "
                "(refused before any GPU is looked for); %d no usable GPU, nothing run.\n",
                kExitPassed, kExitFailed, kExitUsage, kExitNoGpu);
    return kExitPassed;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\nRun with --help for the options and their defaults.\n", e.what());
    return kExitUsage;
  }
  return -1;
}

int run_stage(int argc, char** argv, const StageRun& stage) {
  const std::vector<const KernelDesc*> own = resolve(stage.kernels), baselines = resolve(stage.baselines);
  if (own.empty()) {
    std::fprintf(stderr, "error: the library holds no kernel named %s\n", join(stage.kernels).c_str());
    return kExitFailed;
  }
  const bool backward = own.front()->is_attention_bwd();
  const bool attention = own.front()->is_attention() || backward;
  uint32_t own_dtypes = 0;
  for (const KernelDesc* k : own) own_dtypes |= k->info.in_dtypes;
  std::vector<std::string> dtype_names;
  for (DType t : kAllDtypes)
    if ((own_dtypes & dtype_bit(t)) && (attention || t != DType::INT32)) dtype_names.push_back(dtype_name(t));

  CLI::App app{std::string("flashstages ") + stage.title};
  app.get_formatter()->column_width(34);
  Common common;
  AttentionOptions ao;
  GemmOptions go;
  if (attention) {
    add_attention_options(app, ao, default_attention_dtype(own), dtype_names, backward);
  } else {
    go.dtype = dtype_names.front();  // fp32 for stage 06, fp16 for stage 07 (which takes no fp32)
    add_gemm_options(app, go, dtype_names);
  }
  app.add_option("--check", common.check, "check every version against fp64 first (0 or false: time only)")
      ->capture_default_str()
      ->check(switch_value());
  app.add_option("--repeats", common.repeats, "timed runs per version (the median is reported)")
      ->capture_default_str()
      ->transform(at_least(1));
  std::vector<std::string> versions;
  for (const KernelDesc* k : baselines) versions.push_back(k->qualified());
  for (const KernelDesc* k : own) versions.push_back(k->qualified());
  app.add_option("--version", common.only_version, "run only this version (vN or stageNN/vN): " + join(versions));
  if (const int code = parse_command_line(app, argc, argv); code >= 0) return code;

  // Everything the arguments decide is checked here, before any GPU is looked for: each selected
  // version validates the problem as its launch would (on fake pointers), and a version that refuses
  // it is skipped with the reason; when every one refuses, that is a usage error.
  std::unique_ptr<Problem> problem;
  std::vector<std::pair<const KernelDesc*, Status>> verdicts;  // baselines first, then the stage's own
  AttentionParams ap{};
  GemmCase gc;
  try {
    // A bare vN names the stage's own version vN where it has one (stage 07 gemm's v9; its baseline is
    // stage06/v9 by its full name): the baselines are then no candidates.
    const bool own_named = std::any_of(own.begin(), own.end(),
                                       [&](const KernelDesc* k) { return k->info.version == common.only_version; });
    std::vector<const KernelDesc*> all = own_named ? std::vector<const KernelDesc*>{} : baselines;
    all.insert(all.end(), own.begin(), own.end());
    if (attention) {
      ap = attention_params(ao);
    } else {
      gc = gemm_problem(go);
    }
    for (const KernelDesc* k : all) {
      if (!selected(*k, common.only_version)) continue;
      if (attention) {
        AttentionParams fake = ap;
        fake.q = fake_pointer(0), fake.k = fake_pointer(1), fake.v = fake_pointer(2), fake.o = fake_pointer(3);
        if (!backward) {
          verdicts.emplace_back(k, validate(fake, k->attention));
          continue;
        }
        AttentionBwdParams bwd{};
        bwd.fwd = fake;
        bwd.fwd.lse = static_cast<float*>(fake_pointer(4));
        bwd.d_o = fake_pointer(5), bwd.dq = fake_pointer(6), bwd.dk = fake_pointer(7), bwd.dv = fake_pointer(8);
        bwd.deterministic = ao.deterministic;
        verdicts.emplace_back(k, validate(bwd, k->attention));
      } else {
        GemmParams fake = gc.shape;
        fake.a = fake_pointer(0), fake.b = fake_pointer(1), fake.c = fake_pointer(2);
        fake.lda = fake.trans_a ? fake.m : fake.k;
        fake.ldb = fake.trans_b ? fake.k : fake.n;
        fake.ldc = fake.n;
        verdicts.emplace_back(k, validate(fake, k->gemm));
      }
    }
    if (verdicts.empty())
      throw UsageError("--version: " + common.only_version + " is not a version here (" + join(versions) + ")");
    // The flags are for the stage's own versions (the baselines run where they can): at least one of
    // those selected must take the problem.
    std::vector<std::pair<const KernelDesc*, Status>> mine;
    for (const auto& v : verdicts)
      if (std::find(own.begin(), own.end(), v.first) != own.end()) mine.push_back(v);
    const auto& judged = mine.empty() ? verdicts : mine;
    if (std::none_of(judged.begin(), judged.end(), [](const auto& v) { return v.second == Status::Success; })) {
      // The last version's reason, from those that take the types where any does: a version that takes
      // them says what else is wrong (stage 07's int8 v6 refuses fp16 by its type, v4 the same call
      // by its rows). The message names them all.
      Status st = judged.back().second;
      for (const auto& v : judged)
        if (v.second != Status::UnsupportedDtype) st = v.second;
      std::vector<const KernelDesc*> kernels;
      for (const auto& v : judged) kernels.push_back(v.first);
      throw UsageError(attention ? attention_refusal(st, ap, kernels) : gemm_refusal(st, gc.shape, kernels));
    }
  } catch (const UsageError& e) {
    std::fprintf(stderr, "error: %s\nRun with --help for the options and their defaults.\n", e.what());
    return kExitUsage;
  }

  std::printf("flashstages %s\n", stage.title);
  std::string why;
  const auto dev = query_device(0, &why);
  if (!dev) {
    std::printf("%s: nothing run (exit code %d)\n", why.c_str(), kExitNoGpu);
    return kExitNoGpu;
  }
  std::printf("device: %s\n", dev->summary().c_str());

  try {
    if (attention) {
      // The fp64 reference costs 4·Nq·Nk·D per head: check every head of small problems, two of large.
      const double per_head = double(ap.seq_q) * double(ap.seq_k) * double(ap.head_dim);
      const int heads = ao.check_heads >= 0 ? int(ao.check_heads) : per_head > 2e8 ? 2 : per_head > 2e7 ? 8 : 0;
      if (backward)
        problem = std::make_unique<BackwardJob>(ap, common.check ? heads : -1, ao.deterministic);
      else
        problem = std::make_unique<AttentionJob>(ap, common.check ? heads : -1);
    } else {
      problem = std::make_unique<GemmJob>(gc, common.check ? go.check_rows : -1);
    }
    problem->print_header(*dev);

    int failures = 0;
    std::vector<Row> rows;
    double peer_ms = 0;
    if (!attention && stage.gemm_peer) {
      GemmJob& g = static_cast<GemmJob&>(*problem);
      std::unique_ptr<GemmPeer> peer;
      try {
        peer = stage.gemm_peer(g.params());
      } catch (const std::exception& e) {
        std::printf("\npeer unavailable for this problem: %s\n", e.what());
      }
      if (peer) {
        const std::string name = std::string(peer->name()) + "/" + dtype_name(DType(gc.shape.ab_dtype));
        const auto check_peer = [&] {
          peer->run(g.params(), nullptr);
          return Status::Success;
        };
        const auto time_peer = [&] {
          peer->run(g.timed_params(), nullptr);
          return Status::Success;
        };
        if (!measure(*problem, common, *dev, nullptr, name, "kernel 0: the vendor library", check_peer, time_peer,
                     &rows))
          ++failures;
        if (!rows.empty()) peer_ms = rows.back().ms;
      }
    }
    for (const auto& [k, verdict] : verdicts) {
      if (verdict == Status::UnsupportedDtype) {
        std::printf("\n%s — takes no %s: skipped\n", k->qualified().c_str(),
                    dtype_name(DType(attention ? ap.dtype : gc.shape.ab_dtype)));
        continue;
      }
      if (verdict != Status::Success) {
        std::printf("\n%s — skipped: %s (%s)\n", k->qualified().c_str(), status_name(verdict),
                    status_message(verdict));
        continue;
      }
      const std::string why_not = unsupported_reason(k->info, props_of(*dev));
      if (!why_not.empty()) {
        std::printf("\n%s — skipped: %s\n", k->qualified().c_str(), why_not.c_str());
        continue;
      }
      if (!measure(*problem, common, *dev, k, k->qualified(), k->info.technique,
                   [&, k = k] { return problem->launch(*k); }, [&, k = k] { return problem->launch_timed(*k); },
                   &rows))
        ++failures;
    }

    const double peak = problem->peak(*dev);
    int width = int(std::strlen("implementation"));  // the name column fits the longest name ("stage07/attention/v6")
    for (const Row& r : rows) width = std::max(width, int(r.name.size()));
    std::printf("\n%-*s %10s %9s %8s %10s  %s\n", width, "implementation", "ms", problem->unit(), "%peak",
                attention ? "extra MiB" : "vs peer", "check");
    for (const Row& r : rows) {
      char extra[32] = "-";
      if (attention && r.extra_mib >= 0) std::snprintf(extra, sizeof extra, "%.1f", r.extra_mib);
      if (!attention && peer_ms > 0) std::snprintf(extra, sizeof extra, "%.2fx", peer_ms / r.ms);
      std::printf("%-*s %10.3f %9.2f %7.1f%% %10s  %s\n", width, r.name.c_str(), r.ms, r.rate, 100.0 * r.rate / peak,
                  extra, r.verdict.c_str());
    }
    if (failures) std::printf("%d implementation(s) FAILED\n", failures);
    return failures ? kExitFailed : kExitPassed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitFailed;
  }
}

}  // namespace fs
