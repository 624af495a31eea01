// Stage 05 executable: runs the naive backward (v0) and the stage 05 versions on the backward of the
// same problem, checks each against the fp64 reference (dQ, dK, dV, delta), times them.
//   stage05_flash_bwd --seq 4096 --dim 64 [--causal] [--deterministic] [--dtype fp16 --version v0]
#include "common/tools/runner.h"

int main(int argc, char** argv) {
  return fs::run_stage(argc, argv, {"stage 05 — FlashAttention backward (delta once, K/V resident)", {"stage05"}, {},
                                    nullptr});
}
