// Stage 03 executable: runs stages 01, 02 and 03 on the same problem, checks all three, times them.
//   stage03_online_softmax --seq 4096 --dim 64 [--causal]
#include "naive.h"
#include "online_softmax.h"
#include "stage_runner.h"
#include "tiled.h"

int main(int argc, char** argv) {
  return fs::run_attention_stage(argc, argv, "stage 03 — fused kernel, online softmax (no N×N buffer)",
                                 {fs::kNaiveV1, fs::kTiledV1, fs::kOnlineSoftmaxV1});
}
