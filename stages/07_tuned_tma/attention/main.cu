// Stage 07 attention executable: runs the naive stage (the fp16/bf16 baseline of the error check),
// stage 04's v5 (FlashAttention-2 on mma.sync, tuned: the speed to beat) and every stage 07 attention
// version on the same problem, checks each against the fp64 reference, times them. Hopper only.
//   stage07_attention --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 [--causal] [--version v1]
//   (--help: every flag)
#include "common/tools/runner.h"

int main(int argc, char** argv) {
  return fs::run_stage(argc, argv,
                       {"stage 07 — FlashAttention forward on Hopper: TMA, mbarriers and wgmma",
                        {"stage07/attention"},
                        {"stage01/v1", "stage04/v5"},
                        nullptr});
}
