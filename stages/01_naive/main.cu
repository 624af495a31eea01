// Stage 01 executable: checks naive attention against the fp64 reference, then times it.
//   stage01_naive --seq 4096 --dim 64 [--causal] [--dtype fp16]
#include "naive.h"
#include "stage_runner.h"

int main(int argc, char** argv) {
  return fs::run_attention_stage(argc, argv, "stage 01 — naive attention (S in DRAM)", {fs::kNaiveV1});
}
