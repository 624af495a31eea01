// Stage 02 executable: runs stage 01 and stage 02 on the same problem, checks both, times both.
//   stage02_tiled --seq 4096 --dim 64 [--causal]      (--help lists every flag)
#include "common/tools/runner.h"

int main(int argc, char** argv) {
  return fs::run_stage(argc, argv,
                       {"stage 02 — tiled products (S still in DRAM)", {"stage02"}, {"stage01"}, nullptr});
}
