// Stage 01 benchmarks: naive attention in fp32 over the project's grid (B·N = 16384, H = 2048 / D),
// as far as the N×N buffer fits in device memory.
#include "common/tools/bench.h"

void fs::bench::register_benchmarks(const DeviceInfo& dev) {
  register_attention_stage(dev, "stage01", AttentionGrid{});
}
