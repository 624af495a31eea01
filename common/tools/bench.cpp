#include "common/tools/bench.h"

#include <cstdio>

#include "common/lib/flops.h"
#include "common/lib/random.h"
#include "common/tools/attention_check.h"
#include "common/tools/check.h"
#include "common/tools/device_buffer.h"
#include "common/tools/timing.h"

namespace fs::bench {

namespace {

constexpr int kRepetitions = 5;
constexpr double kMinTimeSeconds = 0.05;

// The attention and GEMM counters: rates from the event time (Google Benchmark's kIsRate divides by
// CPU time).
void timed_loop(benchmark::State& state, const DeviceInfo& dev, double flops, double bytes,
                const std::function<void()>& launch) {
  const double seconds = seconds_per_run(state, dev, launch);
  state.counters["TFLOPS"] = flops / seconds * 1e-12;
  state.counters["GB/s"] = bytes / seconds * 1e-9;
}

}  // namespace

double seconds_per_run(benchmark::State& state, const DeviceInfo& dev, const std::function<void()>& launch) {
  // Warm-up: module load, first-touch of pools, the v5 tuner; and on a benchmark's first call, the
  // sustained clock (timer.h). Google Benchmark calls this several times per benchmark, first with one
  // iteration to size the count, then with the count it found, one benchmark after another: the clock
  // settled on the first call carries over to the next ones.
  const bool first_call = state.max_iterations == 1;
  FS_CHECK_STATUS(warm_up_for(
      [&] {
        launch();
        return Status::Success;
      },
      first_call ? kSustainedWarmupSeconds : 0.0, nullptr));
  L2Flusher flusher(dev.l2_bytes);
  GpuTimer timer;
  double total_s = 0.0;
  for (auto _ : state) {
    flusher.flush();
    FS_CHECK_STATUS(timer.begin(nullptr));
    launch();
    float ms = 0.0f;
    FS_CHECK_STATUS(timer.end(nullptr, &ms));
    state.SetIterationTime(ms * 1e-3);
    total_s += ms * 1e-3;
  }
  return total_s / double(state.iterations());
}

benchmark::internal::Benchmark* configure(benchmark::internal::Benchmark* b) {
  return b->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Repetitions(kRepetitions)
      ->ReportAggregatesOnly(true)
      ->MinTime(kMinTimeSeconds);
}

bool runs_on(const KernelDesc& kernel, const DeviceInfo& dev) {
  const std::string why = unsupported_reason(kernel.info, props_of(dev));
  if (why.empty()) return true;
  std::printf("skipped %s: %s\n", kernel.qualified().c_str(), why.c_str());
  return false;
}

AttentionParams grid_params(DType dtype, int64_t d, int64_t n, bool causal) {
  AttentionParams p{};
  p.batch = n >= 16384 ? 1 : 16384 / n;
  p.heads = 2048 / d;
  p.seq_q = p.seq_k = n;
  p.head_dim = d;
  p.causal = causal;
  p.dtype = static_cast<int32_t>(dtype);
  return p;
}

namespace {

// The forward of `shape` on random inputs (Q, K, V uniform in [-1, 1]) by run(p), p pointing at them;
// traffic(p): the bytes its GB/s counter counts; counters(p) adds its own once the timing is done. A
// run that fails skips the benchmark with its code.
void time_forward_by(benchmark::State& state, const DeviceInfo& dev, const AttentionParams& shape,
                     const std::function<Status(const AttentionParams&)>& run,
                     const std::function<double(const AttentionParams&)>& traffic,
                     const std::function<void(const AttentionParams&)>& counters) {
  const DType t = dtype_of(shape);
  const std::size_t e = dtype_size(t);
  DeviceBuffer<unsigned char> q(q_elems(shape) * e), kb(kv_elems(shape) * e), v(kv_elems(shape) * e),
      o(q_elems(shape) * dtype_size(output_dtype(shape)));
  DeviceBuffer<float> lse(lse_elems(shape));
  FS_CHECK_STATUS(fill_random_device(q.get(), q_elems(shape), t, 1));
  FS_CHECK_STATUS(fill_random_device(kb.get(), kv_elems(shape), t, 2));
  FS_CHECK_STATUS(fill_random_device(v.get(), kv_elems(shape), t, 3));
  const AttentionParams p = attention_on(shape, q.get(), kb.get(), v.get(), o.get(), lse.get());
  if (const Status st = run(p); st != Status::Success) {
    state.SkipWithError(status_name(st));
    return;
  }
  timed_loop(state, dev, attention_fwd_flops(p), traffic(p), [&] { run(p); });
  counters(p);
}

// The forward of `shape` by kernel k, with its extra device memory as a counter.
void time_forward(benchmark::State& state, const DeviceInfo& dev, const KernelDesc& k, const AttentionParams& shape) {
  time_forward_by(
      state, dev, shape, [&](const AttentionParams& p) { return launch(k, p, nullptr); },
      [&](const AttentionParams& p) { return k.traffic_bytes ? k.traffic_bytes(p) : attention_fwd_min_bytes(p); },
      [&](const AttentionParams& p) { state.counters["extra_bytes"] = double(k.extra_bytes(p)); });
}

// A backward's tensors for `shape` as a training step has them: Q, K, V, O, dO uniform in [-1, 1] and
// LSE = standin_lse(), so that P <= 1 as after a real forward (the time does not depend on the values),
// and room for dQ, dK, dV. params(): the backward on them, no delta asked for.
struct BackwardTensors {
  explicit BackwardTensors(const AttentionParams& shape)
      : shape(shape), q(q_bytes(shape)), k(kv_bytes(shape)), v(kv_bytes(shape)), o(q_bytes(shape)),
        d_o(q_bytes(shape)), dq(q_bytes(shape)), dk(kv_bytes(shape)), dv(kv_bytes(shape)), lse(lse_elems(shape)) {
    const DType t = dtype_of(shape);
    FS_CHECK_STATUS(fill_random_device(q.get(), q_elems(shape), t, 1));
    FS_CHECK_STATUS(fill_random_device(k.get(), kv_elems(shape), t, 2));
    FS_CHECK_STATUS(fill_random_device(v.get(), kv_elems(shape), t, 3));
    FS_CHECK_STATUS(fill_random_device(o.get(), q_elems(shape), t, 4));
    FS_CHECK_STATUS(fill_random_device(d_o.get(), q_elems(shape), t, 5));
    const float lse_value = float(standin_lse(shape));
    FS_CHECK_STATUS(fill_random_device(lse.get(), lse_elems(shape), DType::FP32, 6, lse_value, lse_value));
  }
  AttentionBwdParams params() const {
    AttentionBwdParams p{};
    p.fwd = attention_on(shape, q.get(), k.get(), v.get(), o.get(), lse.get());
    p.d_o = d_o.get();
    p.dq = dq.get();
    p.dk = dk.get();
    p.dv = dv.get();
    return p;
  }
  static std::size_t q_bytes(const AttentionParams& s) { return q_elems(s) * dtype_size(dtype_of(s)); }
  static std::size_t kv_bytes(const AttentionParams& s) { return kv_elems(s) * dtype_size(dtype_of(s)); }

  AttentionParams shape;
  DeviceBuffer<unsigned char> q, k, v, o, d_o, dq, dk, dv;
  DeviceBuffer<float> lse;
};

// The backward of `shape`, as a training step calls it (BackwardTensors).
void time_backward(benchmark::State& state, const DeviceInfo& dev, const KernelDesc& k, const AttentionParams& shape,
                   bool deterministic) {
  const BackwardTensors tensors(shape);
  AttentionBwdParams p = tensors.params();
  p.deterministic = deterministic;
  if (const Status st = launch(k, p, nullptr); st != Status::Success) {
    state.SkipWithError(status_name(st));
    return;
  }
  const double traffic = k.traffic_bytes ? k.traffic_bytes(shape) : attention_bwd_min_bytes(shape);
  timed_loop(state, dev, attention_bwd_flops(shape), traffic, [&] { launch(k, p, nullptr); });
  state.counters["extra_bytes"] = double(k.bwd_extra_bytes(shape, deterministic));
}

// One attention benchmark, forward or backward as the kernel is: `shape` (sizes, dtype, mask), named
// `name`.
void register_attention_point(const DeviceInfo& dev, const KernelDesc& kernel, const std::string& name,
                              const AttentionParams& shape, bool deterministic) {
  const KernelDesc* k = &kernel;
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [&dev, k, shape, deterministic](benchmark::State& state) {
    if (k->is_attention_bwd())
      time_backward(state, dev, *k, shape, deterministic);
    else
      time_forward(state, dev, *k, shape);
  });
  configure(b);
}

// Whether the shape's tensors and the kernel's workspace fit in 90% of device memory.
bool fits(const DeviceInfo& dev, const KernelDesc& kernel, const AttentionParams& shape) {
  const double tensors = kernel.is_attention_bwd() ? attention_bwd_min_bytes(shape) : attention_fwd_min_bytes(shape);
  return tensors + double(kernel.extra_bytes(shape)) <= 0.9 * double(dev.global_mem);
}

// Every grid point the kernel takes and that fits, named <series>/<point_name>.
void register_grid(const DeviceInfo& dev, const KernelDesc& kernel, const AttentionGrid& grid,
                   const std::string& series, bool deterministic) {
  if (!runs_on(kernel, dev)) return;
  for (const AttentionParams& shape : grid_points(grid))
    if (in_set(kernel.attention.dtypes, shape.dtype) && fits(dev, kernel, shape))
      register_attention_point(dev, kernel, series + "/" + point_name(shape), shape, deterministic);
}

}  // namespace

std::vector<AttentionParams> grid_points(const AttentionGrid& grid) {
  std::vector<AttentionParams> points;
  for (DType dtype : grid.dtypes)
    for (int64_t d : grid.dims)
      for (int64_t n : grid.seqs)
        for (bool causal : grid.causal) points.push_back(grid_params(dtype, d, n, causal));
  return points;
}

std::string point_name(const AttentionParams& p) {
  const std::string causal = "/causal:" + std::to_string(int(p.causal != 0));
  const AttentionParams on_grid = grid_params(dtype_of(p), p.head_dim, p.seq_q, p.causal != 0);
  if (p.seq_k == p.seq_q && p.batch == on_grid.batch && p.heads == on_grid.heads && kv_head_count(p) == p.heads)
    return std::string(dtype_name(dtype_of(p))) + "/D:" + std::to_string(p.head_dim) + "/N:" + std::to_string(p.seq_q) + causal;
  // KVH only where K/V have fewer heads than Q: multi-head names stay as they were.
  const std::string kv_heads = kv_head_count(p) != p.heads ? "/KVH:" + std::to_string(kv_head_count(p)) : "";
  return std::string(dtype_name(dtype_of(p))) + "/D:" + std::to_string(p.head_dim) + "/B:" + std::to_string(p.batch) + "/H:" +
         std::to_string(p.heads) + kv_heads + "/Nq:" + std::to_string(p.seq_q) + "/Nk:" + std::to_string(p.seq_k) +
         causal;
}

void register_attention_candidates(const DeviceInfo& dev, const std::string& series,
                                   const std::vector<AttentionParams>& points,
                                   const std::function<std::vector<AttentionCandidate>(const AttentionParams&)>& candidates,
                                   std::function<std::string(const AttentionParams&)> picked) {
  for (const AttentionParams& shape : points)
    for (AttentionCandidate& c : candidates(shape)) {
      const std::string name = series + "/" + point_name(shape) + "/" + c.label;
      auto* b = benchmark::RegisterBenchmark(name.c_str(), [&dev, shape, c, picked](benchmark::State& state) {
        time_forward_by(state, dev, shape, c.launch, attention_fwd_min_bytes, [&](const AttentionParams&) {
          state.counters["picked"] = picked(shape) == c.label ? 1.0 : 0.0;
        });
      });
      configure(b);
    }
}

void register_attention(const DeviceInfo& dev, const KernelDesc& kernel, const AttentionGrid& grid) {
  register_grid(dev, kernel, grid, kernel.qualified(), false);
}

void register_attention_bwd_deterministic(const DeviceInfo& dev, const KernelDesc& kernel,
                                          const AttentionGrid& grid) {
  register_grid(dev, kernel, grid, kernel.qualified() + "_deterministic", true);
}

void register_attention_shapes(const DeviceInfo& dev, const KernelDesc& kernel,
                               const std::vector<AttentionParams>& shapes) {
  if (!runs_on(kernel, dev)) return;
  for (const AttentionParams& p : shapes) {
    if (!in_set(kernel.attention.dtypes, p.dtype) || !fits(dev, kernel, p)) continue;
    register_attention_point(dev, kernel, kernel.qualified() + "/" + point_name(p), p, false);
  }
}

std::vector<AttentionParams> underfilled_attention_shapes() {
  struct Size {
    int64_t b, h, nq, nk;
  };
  const Size sizes[] = {{1, 16, 512, 16384}, {1, 32, 1024, 8192}, {2, 8, 256, 32768}, {4, 32, 1, 8192}};
  std::vector<AttentionParams> shapes;
  for (int64_t d : {128, 64})
    for (const Size& s : sizes)
      for (bool causal : {false, true}) shapes.push_back(attention_shape(s.b, s.h, s.nq, s.nk, d, DType::FP16, causal));
  for (bool causal : {false, true}) shapes.push_back(attention_shape(1, 16, 512, 16384, 128, DType::BF16, causal));
  struct GqaSize {
    int64_t b, h, kv_heads, nq, nk;
  };
  const GqaSize gqa_sizes[] = {{1, 32, 8, 1, 16384}, {8, 32, 8, 1, 8192}, {1, 32, 8, 512, 16384}, {4, 32, 1, 1, 8192}};
  for (const GqaSize& s : gqa_sizes)
    for (bool causal : {false, true}) {
      AttentionParams p = attention_shape(s.b, s.h, s.nq, s.nk, 128, DType::FP16, causal);
      p.kv_heads = s.kv_heads;
      shapes.push_back(p);
    }
  return shapes;
}

std::vector<int32_t> packed_lengths(const PackedBatch& batch) {
  // splitmix64 from a fixed seed: std::uniform_int_distribution's output differs between standard
  // libraries, and these lengths name a benchmark.
  uint64_t state = 0x5eed0f1a77e27ULL;
  std::vector<int32_t> lens;
  for (int64_t i = 0; i < batch.entries; ++i) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    lens.push_back(int32_t(batch.lo + int64_t(z % uint64_t(batch.hi - batch.lo + 1))));
  }
  return lens;
}

namespace {

// One packed batch (cu_seqlens): its forward on random inputs (Q, K, V uniform in [-1, 1]), or for a
// backward kernel its backward as time_backward calls it; max_seq_q computed by check_varlen once,
// outside the timing. FLOPs entry by entry, bytes over the packed tensors.
void time_packed(benchmark::State& state, const DeviceInfo& dev, const KernelDesc& k, const PackedBatch& batch) {
  const bool backward = k.is_attention_bwd();
  const std::vector<int32_t> lens = packed_lengths(batch);
  std::vector<int32_t> cu{0};
  double flops = 0.0;
  for (int32_t n : lens) {
    cu.push_back(cu.back() + n);
    const AttentionParams entry = attention_shape(1, batch.heads, n, n, batch.d, batch.dtype, batch.causal);
    flops += backward ? attention_bwd_flops(entry) : attention_fwd_flops(entry);
  }
  // The packed tensors are [H, total, D]: a dense problem of one entry of `total` rows has their sizes.
  const AttentionParams one = attention_shape(1, batch.heads, cu.back(), cu.back(), batch.d, batch.dtype, batch.causal);
  DeviceBuffer<int32_t> cu_q(cu), cu_k(cu);
  auto pack = [&](AttentionParams& p) {  // the dense problem's tensors, read as the batch's entries
    p.batch = batch.entries;
    p.cu_seqlens_q = cu_q.get();
    p.cu_seqlens_k = cu_k.get();
    FS_CHECK_STATUS(check_varlen(&p, nullptr));
  };
  if (backward) {
    const BackwardTensors tensors(one);
    AttentionBwdParams p = tensors.params();
    pack(p.fwd);
    if (const Status st = launch(k, p, nullptr); st != Status::Success) {
      state.SkipWithError(status_name(st));
      return;
    }
    timed_loop(state, dev, flops, attention_bwd_min_bytes(one), [&] { launch(k, p, nullptr); });
    state.counters["extra_bytes"] = double(k.bwd_extra_bytes(p.fwd, false));
    return;
  }
  const std::size_t e = dtype_size(batch.dtype);
  DeviceBuffer<unsigned char> q(q_elems(one) * e), kb(kv_elems(one) * e), v(kv_elems(one) * e), o(q_elems(one) * e);
  DeviceBuffer<float> lse(lse_elems(one));
  FS_CHECK_STATUS(fill_random_device(q.get(), q_elems(one), batch.dtype, 1));
  FS_CHECK_STATUS(fill_random_device(kb.get(), kv_elems(one), batch.dtype, 2));
  FS_CHECK_STATUS(fill_random_device(v.get(), kv_elems(one), batch.dtype, 3));
  AttentionParams p = attention_on(one, q.get(), kb.get(), v.get(), o.get(), lse.get());
  pack(p);
  if (const Status st = launch(k, p, nullptr); st != Status::Success) {
    state.SkipWithError(status_name(st));
    return;
  }
  timed_loop(state, dev, flops, attention_fwd_min_bytes(one), [&] { launch(k, p, nullptr); });
}

}  // namespace

void register_attention_packed(const DeviceInfo& dev, const KernelDesc& kernel,
                               const std::vector<PackedBatch>& batches) {
  if (!runs_on(kernel, dev)) return;
  for (const PackedBatch& batch : batches) {
    if (!in_set(kernel.attention.dtypes, int32_t(batch.dtype)) || !kernel.attention.varlen) continue;
    const std::string lengths =
        std::to_string(batch.lo) + (batch.hi != batch.lo ? "-" + std::to_string(batch.hi) : std::string());
    const std::string name = kernel.qualified() + "/" + dtype_name(batch.dtype) + "/D:" + std::to_string(batch.d) +
                             "/H:" + std::to_string(batch.heads) + "/packed:" + std::to_string(batch.entries) + "x" +
                             lengths + "/causal:" + std::to_string(int(batch.causal));
    const KernelDesc* k = &kernel;
    configure(benchmark::RegisterBenchmark(name.c_str(), [&dev, k, batch](benchmark::State& state) {
      time_packed(state, dev, *k, batch);
    }));
  }
}

void register_attention_stage(const DeviceInfo& dev, const char* stage, const AttentionGrid& grid) {
  for (const KernelDesc* k : find_kernels(stage)) register_attention(dev, *k, grid);
}

void register_timed(const DeviceInfo& dev, const std::string& name, std::function<TimedWork()> make) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), [&dev, make](benchmark::State& state) {
    TimedWork w = make();
    if (w.setup) w.setup();
    timed_loop(state, dev, w.flops, w.bytes, w.launch);
  });
  configure(b);
}

}  // namespace fs::bench
