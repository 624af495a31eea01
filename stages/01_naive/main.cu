// Stage 01 executable: checks naive attention against the fp64 reference, then times it.
//   stage01_naive --seq 4096 --dim 64 [--causal] [--dtype fp16]      (--help lists every flag)
#include "common/tools/runner.h"

int main(int argc, char** argv) {
  return fs::run_stage(argc, argv, {"stage 01 — naive attention (S in DRAM)", {"stage01"}, {}, nullptr});
}
