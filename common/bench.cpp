#include "bench.h"

#include <cstdio>
#include <memory>

#include "device_buffer.h"
#include "flops.h"
#include "random.h"
#include "timer.h"

namespace fs::bench {

namespace {

constexpr int kRepetitions = 5;
constexpr double kMinTimeSeconds = 0.05;

// Times `launch` in the benchmark loop: L2 flushed before each run, CUDA events around it.
void timed_loop(benchmark::State& state, const DeviceInfo& dev, double flops, double bytes,
                const std::function<void()>& launch) {
  for (int i = 0; i < 2; ++i) launch();  // warm-up: module load, first-touch of pools
  FS_CUDA_CHECK(cudaDeviceSynchronize());
  L2Flusher flusher(dev.l2_bytes);
  GpuTimer timer;
  double total_s = 0.0;
  for (auto _ : state) {
    flusher.flush();
    timer.begin();
    launch();
    const double s = timer.end_ms() * 1e-3;
    state.SetIterationTime(s);
    total_s += s;
  }
  // Rates are computed here from the event time: Google Benchmark's kIsRate divides by CPU time.
  const double iters = double(state.iterations());
  state.counters["TFLOPS"] = flops * iters / total_s * 1e-12;
  state.counters["GB/s"] = bytes * iters / total_s * 1e-9;
}

benchmark::internal::Benchmark* configure(benchmark::internal::Benchmark* b) {
  return b->UseManualTime()
      ->Unit(benchmark::kMillisecond)
      ->Repetitions(kRepetitions)
      ->ReportAggregatesOnly(true)
      ->MinTime(kMinTimeSeconds);
}

}  // namespace

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

void register_attention(const DeviceInfo& dev, const AttentionKernel& kernel, const AttentionGrid& grid) {
  for (DType dtype : grid.dtypes) {
    if (!(kernel.dtypes & dtype_bit(dtype))) continue;
    for (int64_t d : grid.dims)
      for (int64_t n : grid.seqs)
        for (bool causal : grid.causal) {
          const AttentionParams shape = grid_params(dtype, d, n, causal);
          const double need = attention_fwd_min_bytes(shape) + double(kernel.extra_bytes(shape));
          if (need > 0.9 * double(dev.global_mem)) continue;
          const std::string name = std::string(kernel.stage) + "/" + kernel.version + "/" + dtype_name(dtype) +
                                   "/D:" + std::to_string(d) + "/N:" + std::to_string(n) +
                                   "/causal:" + std::to_string(int(causal));
          auto* b = benchmark::RegisterBenchmark(name.c_str(), [&dev, kernel, shape](benchmark::State& state) {
            const std::size_t e = dtype_size(dtype_of(shape));
            DeviceBuffer<unsigned char> q(q_elems(shape) * e), k(kv_elems(shape) * e), v(kv_elems(shape) * e),
                o(q_elems(shape) * e);
            DeviceBuffer<float> lse(lse_elems(shape));
            fill_uniform_device(q.get(), q_elems(shape), dtype_of(shape), 1);
            fill_uniform_device(k.get(), kv_elems(shape), dtype_of(shape), 2);
            fill_uniform_device(v.get(), kv_elems(shape), dtype_of(shape), 3);
            AttentionParams p = shape;
            p.q = q.get();
            p.k = k.get();
            p.v = v.get();
            p.o = o.get();
            p.lse = lse.get();
            if (const Status st = kernel.launch(p, nullptr); st != Status::Success) {
              state.SkipWithError(status_name(st));
              return;
            }
            const double traffic = kernel.traffic_bytes ? kernel.traffic_bytes(p) : attention_fwd_min_bytes(p);
            timed_loop(state, dev, attention_fwd_flops(p), traffic, [&] { kernel.launch(p, nullptr); });
            state.counters["extra_bytes"] = double(kernel.extra_bytes(p));
          });
          configure(b);
        }
  }
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
