// Stage 07 attention backward executable: runs the naive backward (stage 05's v0: the fp16/bf16
// baseline of the error check), stage 05's v10 (FlashAttention-2's backward on mma.sync, tuned: the
// speed to beat) and every version of this rung on the backward of the same problem, checks each
// against the fp64 reference (dQ, dK, dV, delta), times them. Hopper only.
//   stage07_attention_bwd --dtype fp16 --seq 4096 --dim 128 --batch 2 --heads 16 [--causal] [--deterministic] [--version v1]
//   (--help: every flag)
#include "common/tools/runner.h"

int main(int argc, char** argv) {
  return fs::run_stage(argc, argv,
                       {"stage 07 — FlashAttention backward on Hopper: TMA, mbarriers and wgmma",
                        {"stage07/attention_bwd"},
                        {"stage05/v0", "stage05/v10"},
                        nullptr});
}
