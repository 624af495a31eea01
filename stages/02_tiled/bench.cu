// Stage 02 benchmarks: tiled attention in fp32 over the project's grid, as far as S fits.
#include "common/tools/bench.h"

void fs::bench::register_benchmarks(const DeviceInfo& dev) {
  register_attention_stage(dev, "stage02", AttentionGrid{});
}
