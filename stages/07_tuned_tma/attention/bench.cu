// Stage 07 attention benchmarks: the project's attention grid (N = 512 … 16384, B·N = 16384,
// H = 2048 / D; the headline shape B = 2, H = 16, N = 8192, D = 128 is the grid point
// stage07/attention/<version>/fp16/D:128/N:8192/causal:<0|1>) at D = 64 and 128 for every version but
// v5 (split-KV, which is v4 wherever the grid fills the GPU: N = 8192 alone), and at D = 256 for the
// versions that differ there; fp16 and bf16, causal and not. Stage 04's v5 (FlashAttention-2 on
// mma.sync, the speed to beat from below) at N = 8192 in the same run (its whole grid is stage04.json's).
// SDPA's flash and cuDNN backends are timed by plots/sdpa_bench.py, in the same reference-run part as
// each head_dim's grid (scripts/reference_run.py folds them into stage07_attention.json); the plot
// script sets them beside these. Then packed batches (cu_seqlens), fp16, at D = 64 and 128 with the
// grid's H, causal and not, for every version and stage 04's v5: 2 entries of 8192 (the headline's
// work, packed: what the layout itself costs) and 16 entries of 512 to 8192 (sequence ends inside tiles
// and key blocks everywhere). Then where one query tile per (batch entry, head) leaves SMs idle
// (bench::underfilled_attention_shapes: short queries against long keys, decoding, grouped K/V), every
// version and stage 04's v6 (split-KV); v6 (a K/V group's query heads packed into one tile) only there,
// where some shapes have grouped K/V. D = 256 for v1-v4, v7, v8, v10 and v11 on the whole grid, stage
// 04's v5 at N = 8192: v10 only there, being v8 at D = 64 and 128. 7 × 48 (grid: v1-v4, v7, v8, v11)
// + 8 (v5) + 8 (stage 04) + 9 × 8 (packed) + 10 × 26 (underfilled) + 8 × 24 + 4 (D = 256) = 880
// benchmarks of 5 repetitions; then v9 (fp8, D = 128 alone) on the grid's 12 points at D = 128.
#include <string>
#include <vector>

#include "common/tools/attention_check.h"
#include "common/tools/bench.h"

void fs::bench::register_benchmarks(const DeviceInfo& dev) {
  AttentionGrid grid;
  grid.dtypes = {DType::FP16, DType::BF16};
  AttentionGrid headline = grid;
  headline.seqs = {8192};
  // v5 only at N = 8192 on the grid: every grid point has B·H·N/128 = 2048 query tiles, far more than
  // the H100's 132 SMs, so v5 runs one split there and is v4. v6 not at all: the grid has one query
  // head per K/V head, where v6 is v5 (and so are the packed batches below). v10 not either: it runs
  // v8's kernels at D = 64 and 128 (and so in every registration below but D = 256's).
  for (const KernelDesc* k : find_kernels("stage07/attention")) {
    const std::string version = k->info.version;
    if (version != "v6" && version != "v10") register_attention(dev, *k, version == "v5" ? headline : grid);
  }
  for (const KernelDesc* k : find_kernels("stage04/v5")) register_attention(dev, *k, headline);
  // D = 256 over the grid (H = 8): the versions that differ there (v5 and v6 are v4 on a full grid; v7
  // runs v3's block there, timed as its own launch, and so is v8; v10 releases K apart from V there
  // alone), and stage 04's v5 at N = 8192.
  AttentionGrid wide = grid;
  wide.dims = {256};
  for (const KernelDesc* k : find_kernels("stage07/attention")) {
    const std::string version = k->info.version;
    if (version != "v5" && version != "v6") register_attention(dev, *k, wide);
  }
  AttentionGrid wide_headline = headline;
  wide_headline.dims = {256};
  for (const KernelDesc* k : find_kernels("stage04/v5")) register_attention(dev, *k, wide_headline);

  std::vector<PackedBatch> packed;
  for (int64_t d : {64, 128})
    for (bool causal : {false, true}) {
      packed.push_back({DType::FP16, d, 2048 / d, 2, 8192, 8192, causal});
      packed.push_back({DType::FP16, d, 2048 / d, 16, 512, 8192, causal});
    }
  for (const char* stage : {"stage07/attention", "stage04/v5"})
    for (const KernelDesc* k : find_kernels(stage))
      if (std::string(k->info.version) != "v6" && std::string(k->info.version) != "v10")
        register_attention_packed(dev, *k, packed);

  const std::vector<AttentionParams> underfilled = underfilled_attention_shapes();
  for (const char* stage : {"stage07/attention", "stage04/v6"})
    for (const KernelDesc* k : find_kernels(stage))
      if (std::string(k->info.version) != "v10") register_attention_shapes(dev, *k, underfilled);

  // v9 on fp8 (the registrations above take fp16 and bf16, so pass it over): the grid at D = 128, where
  // the 16-bit versions' rows are its peers.
  AttentionGrid fp8;
  fp8.dtypes = {DType::FP8_E4M3};
  fp8.dims = {128};
  for (const KernelDesc* k : find_kernels("stage07/attention/v9")) register_attention(dev, *k, fp8);
}
