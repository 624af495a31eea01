// Stage 04 executable: runs the naive stage (the fp16/bf16 baseline) and the six stage 04 versions
// on the same problem, checks each against the fp64 reference, times them.
//   stage04_flash_fwd --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 [--causal] [--version v5]
//   stage04_flash_fwd --dtype fp16 --seq 512 --seq-k 16384 --dim 128 --batch 1 --heads 16 --version v6
#include "common/tools/runner.h"

int main(int argc, char** argv) {
  return fs::run_stage(argc, argv,
                       {"stage 04 — FlashAttention-2 forward on tensor cores (mma.sync)", {"stage04"}, {"stage01/v1"},
                        nullptr});
}
