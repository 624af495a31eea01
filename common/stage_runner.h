// The body of every attention stage's executable: parse the problem from the command line, check
// each version against the fp64 reference, time it, print one row per version. Exit code 1 when any
// version is wrong or fails, 2 on bad arguments or no usable GPU.
//
//   --batch B --heads H --seq Nq --seq-k Nk --dim D --causal --scale S --dtype fp32|fp16|bf16
//   --check 0|1 (default 1) --check-heads K --repeats R --version vN|stageNN/vN (run only that one)
// Defaults follow the benchmarks: N = 4096, D = 64, B = 16384 / N, H = 2048 / D; the dtype defaults to
// the first one the stage's own kernel (the last version listed) takes. Versions that do not take the
// chosen dtype are skipped with a note.
#pragma once

#include <initializer_list>

#include "attention_kernel.h"

namespace fs {

int run_attention_stage(int argc, char** argv, const char* title, std::initializer_list<AttentionKernel> versions);

}  // namespace fs
