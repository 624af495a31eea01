// Stage 03 executable: runs stages 01, 02 and 03 on the same problem, checks all three, times them.
//   stage03_online_softmax --seq 4096 --dim 64 [--causal]      (--help lists every flag)
#include "common/tools/runner.h"

int main(int argc, char** argv) {
  return fs::run_stage(argc, argv,
                       {"stage 03 — fused kernel, online softmax (no N×N buffer)", {"stage03"},
                        {"stage01", "stage02"}, nullptr});
}
