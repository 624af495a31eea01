// Stage 03 benchmarks: fused online-softmax attention in fp32 over the project's grid. Without an
// N×N buffer every N fits.
#include "bench.h"
#include "online_softmax.h"

void fs::bench::register_benchmarks(const DeviceInfo& dev) {
  register_attention(dev, kOnlineSoftmaxV1, AttentionGrid{});
}
