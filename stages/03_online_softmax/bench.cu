// Stage 03 benchmarks: fused online-softmax attention in fp32 over the project's grid. Without an
// N×N buffer every N fits.
#include "common/tools/bench.h"

void fs::bench::register_benchmarks(const DeviceInfo& dev) {
  register_attention_stage(dev, "stage03", AttentionGrid{});
}
