// Stage 02 benchmarks: tiled attention in fp32 over the project's grid, as far as S fits.
#include "bench.h"
#include "tiled.h"

void fs::bench::register_benchmarks(const DeviceInfo& dev) { register_attention(dev, kTiledV1, AttentionGrid{}); }
