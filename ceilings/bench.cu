// Ceilings benchmarks: one per instruction, named ceiling/<instruction>/<dtype>, timed like every stage
// (CUDA events, 5 repetitions, the median reported). Counters: the rate in its unit — TFLOPS (TOPS
// under the same key for int8, as stage 06 reports its int8 GEMMs), Gop/s for the exponential, GB/s
// for the memory ceilings — and per_sm_clk, the work per SM per clock at the SM clock the runtime
// reports, to set beside the per-SM unit counts of the datasheet. Inputs are uniform random values
// from the project's generator: what the tensor cores multiply can change how much power they draw.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <functional>
#include <memory>
#include <string>

#include "ceilings/ceilings.h"
#include "common/lib/random.h"
#include "common/tools/bench.h"
#include "common/tools/check.h"
#include "common/tools/device_buffer.h"

namespace fs::bench {

namespace {

using namespace ceilings;

// Trips per launch, chosen so that one launch of each takes a few milliseconds on an H100 (far above
// the launch overhead and the event resolution).
constexpr int kFfmaIters = 65536;
constexpr int kMmaIters = 16384;
constexpr int kMmaS8Iters = 32768;
constexpr int kEx2Iters = 8192;
constexpr int kLds32Iters = 16384;
constexpr int kLds128Iters = 4096;
constexpr int64_t kCopyFloat4s = int64_t(1) << 26;  // 1 GiB read and 1 GiB written per launch

// How a ceiling reports: the counter its rate goes under and the factor from work per second to it.
struct Unit {
  const char* counter;
  double scale;
};
constexpr Unit kTflops{"TFLOPS", 1e-12}, kGops{"Gop/s", 1e-9}, kGbps{"GB/s", 1e-9};

// One benchmark: `make` allocates and fills the inputs (untimed) and returns the launch and its work.
struct Setup {
  std::function<void()> launch;
  double work = 0;
};
void add(const DeviceInfo& dev, const std::string& name, Unit unit, std::function<Setup()> make) {
  auto* b = benchmark::RegisterBenchmark(("ceiling/" + name).c_str(), [&dev, unit, make](benchmark::State& state) {
    const Setup s = make();
    const double seconds = seconds_per_run(state, dev, s.launch);
    state.counters[unit.counter] = s.work / seconds * unit.scale;
    state.counters["per_sm_clk"] = s.work / seconds / (double(dev.sms) * dev.sm_clock_mhz * 1e6);
  });
  configure(b);
}

// Buffers that live as long as the benchmark's launches: kept in the lambda's captures.
template <class T>
std::shared_ptr<DeviceBuffer<T>> buffer(std::size_t count) {
  return std::make_shared<DeviceBuffer<T>>(count);
}

// The mma ceilings on grid g: a full wave, or one_block_per_sm (2 warps per scheduler).
template <class T>
Setup mma_f16_setup(const Grid& g) {
  auto a = buffer<T>(g.threads() * 8), b = buffer<T>(g.threads() * 4);  // 4 and 2 registers of 2 values per lane
  auto d_in = buffer<float>(g.threads() * kChains * 4), d_out = buffer<float>(g.threads() * kChains * 4);
  FS_CHECK_STATUS(fill_uniform_device(a->get(), a->size(), 1));
  FS_CHECK_STATUS(fill_uniform_device(b->get(), b->size(), 2));
  FS_CHECK_STATUS(fill_uniform_device(d_in->get(), d_in->size(), 3));
  return {[=] {
            mma_m16n8k16<T>(g, reinterpret_cast<const uint32_t*>(a->get()),
                            reinterpret_cast<const uint32_t*>(b->get()), d_in->get(), d_out->get());
          },
          mma_m16n8k16_flops(g)};
}

Setup mma_s8_setup(const Grid& g) {
  auto a = buffer<int8_t>(g.threads() * 16), b = buffer<int8_t>(g.threads() * 8);  // 4 values per register
  auto d_in = buffer<int32_t>(g.threads() * kChains * 4), d_out = buffer<int32_t>(g.threads() * kChains * 4);
  FS_CHECK_STATUS(fill_ints_device(a->get(), a->size(), 1, -128, 127));
  FS_CHECK_STATUS(fill_ints_device(b->get(), b->size(), 2, -128, 127));
  FS_CHECK_STATUS(fill_ints_device(d_in->get(), d_in->size(), 3, -1000, 1000));
  return Setup{[=] {
                 mma_m16n8k32_s8(g, reinterpret_cast<const uint32_t*>(a->get()),
                                 reinterpret_cast<const uint32_t*>(b->get()), d_in->get(), d_out->get());
               },
               mma_m16n8k32_ops(g)};
}

}  // namespace

void register_benchmarks(const DeviceInfo& dev) {
  add(dev, "ffma/fp32", kTflops, [] {
    const Grid g{full_wave_blocks(Kernel::Ffma), kFfmaIters};
    auto in = buffer<float>(g.threads() * kChains), out = buffer<float>(g.threads() * kChains);
    FS_CHECK_STATUS(fill_uniform_device(in->get(), in->size(), 1));
    return Setup{[=] { ffma(g, in->get(), 1.0f, 1e-3f, out->get()); }, ffma_flops(g)};
  });
  add(dev, "mma_m16n8k16/fp16", kTflops,
      [] { return mma_f16_setup<__half>(Grid{full_wave_blocks(Kernel::MmaF16), kMmaIters}); });
  add(dev, "mma_m16n8k16/bf16", kTflops,
      [] { return mma_f16_setup<__nv_bfloat16>(Grid{full_wave_blocks(Kernel::MmaBf16), kMmaIters}); });
  add(dev, "mma_m16n8k16/fp16/warps_per_scheduler:2", kTflops,
      [] { return mma_f16_setup<__half>(one_block_per_sm(kMmaIters)); });
  add(dev, "mma_m16n8k32/int8", kTflops,
      [] { return mma_s8_setup(Grid{full_wave_blocks(Kernel::MmaS8), kMmaS8Iters}); });
  add(dev, "mma_m16n8k32/int8/warps_per_scheduler:2", kTflops,
      [] { return mma_s8_setup(one_block_per_sm(kMmaS8Iters)); });
  add(dev, "ex2/fp32", kGops, [] {
    const Grid g{full_wave_blocks(Kernel::Ex2), kEx2Iters};
    auto in = buffer<float>(g.threads() * kChains), out = buffer<float>(g.threads() * kChains);
    FS_CHECK_STATUS(fill_uniform_device(in->get(), in->size(), 1, 0.0f, 1.0f));
    return Setup{[=] { ex2(g, in->get(), out->get()); }, ex2_ops(g)};
  });
  add(dev, "lds32/fp32", kGbps, [] {
    const Grid g{full_wave_blocks(Kernel::Lds32), kLds32Iters};
    auto values = buffer<float>(kThreads * kChains), out = buffer<float>(g.threads());
    FS_CHECK_STATUS(fill_uniform_device(values->get(), values->size(), 1));
    return Setup{[=] { lds32(g, values->get(), out->get()); }, lds32_bytes(g)};
  });
  add(dev, "lds128/fp32", kGbps, [] {
    const Grid g{full_wave_blocks(Kernel::Lds128), kLds128Iters};
    auto values = buffer<float>(kThreads * kChains * 4), out = buffer<float>(g.threads());
    FS_CHECK_STATUS(fill_uniform_device(values->get(), values->size(), 1));
    return Setup{[=] { lds128(g, values->get(), out->get()); }, lds128_bytes(g)};
  });
  add(dev, "dram_copy/fp32", kGbps, [] {
    const int64_t blocks = full_wave_blocks(Kernel::Copy);
    auto in = buffer<float4>(kCopyFloat4s), out = buffer<float4>(kCopyFloat4s);
    FS_CHECK_STATUS(fill_uniform_device(reinterpret_cast<float*>(in->get()), 4 * in->size(), 1));
    return Setup{[=] { copy(blocks, in->get(), out->get(), kCopyFloat4s); }, copy_bytes(kCopyFloat4s)};
  });
}

}  // namespace fs::bench
