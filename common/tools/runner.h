// The body of every stage's executable, one runner over the library's kernel descriptors: read the
// problem from the command line and check it (before looking for a GPU), then run every version on
// the same inputs — each checked against the fp64 reference, then timed — and print one row per
// version. Exit codes (ExitCode below; --help lists them): 0 when every version passed, 1 when one was
// wrong or failed, 2 on a bad flag, 77 when the flags were fine but no usable GPU was found (nothing
// run: the tests' and benchmarks' "skipped").
//
// Attention stages:  --batch --heads --kv-heads --seq --seq-k --dim --causal --scale --dtype --check-heads
// Backward stages:   the same, and --deterministic (the backward of that problem is run)
// GEMM stages:       --m --n --k --dtype --c-dtype --trans-a --trans-b --alpha --beta --check-rows
// Both:              --check 0|1  --repeats R  --version vN|stageNN/vN  --help
// (The README's table of flags says the same; common/test_cli.py holds both to --help.)
// Integers are read as decimal, switches (--causal, --deterministic, --check) as 0, 1, false or true
// (a bare --causal is true); any other value is a bad flag. Defaults follow the benchmarks (attention:
// N = 4096, D = 64, B = 16384 / N, H = 2048 / D; GEMM: 4096³); --help lists every flag with its default.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/lib/gemm.h"

namespace CLI {
class App;
class Validator;
}

namespace fs {

// A vendor library run beside the GEMM versions on the same problem ("kernel 0").
class GemmPeer {
 public:
  virtual ~GemmPeer() = default;
  virtual const char* name() const = 0;  // "cublas": the row's name and the benchmark-name prefix
  virtual void run(const GemmParams& p, cudaStream_t stream) = 0;
};

struct StageRun {
  const char* title;                   // "stage 04 — FlashAttention-2 forward on tensor cores (mma.sync)"
  std::vector<std::string> kernels;    // the stage's own versions, as the registry names them: "stage04"
  std::vector<std::string> baselines;  // earlier stages run on the same problem: "stage01/v1"
  // GEMM stages: makes the vendor peer for a problem (null: none); it may throw when the library has
  // no kernel for the problem, and the run goes on without it.
  std::function<std::unique_ptr<GemmPeer>(const GemmParams&)> gemm_peer;
};

// The exit codes of every executable of the project (the stages', stage06_cublaslt_algos).
enum ExitCode : int {
  kExitPassed = 0,  // every version checked passed (or, unchecked, ran)
  kExitFailed = 1,  // a wrong result, or a launch that failed
  kExitUsage = 2,   // a bad flag or combination of flags, refused before any GPU is looked for
  kExitNoGpu = 77,  // the flags were fine, but no usable GPU was found: nothing was run
};

int run_stage(int argc, char** argv, const StageRun& stage);

// The command line into `app`, as every executable of the project reads it: --help prints the options
// with their defaults and the exit codes (exit code 0), a bad flag "error: ..." naming it (kExitUsage).
// -1 when the program goes on.
int parse_command_line(CLI::App& app, int argc, char** argv);

// The values a flag takes, the same in every executable. CLI11 alone reads 010 as octal 8 and 0x10 as
// 16 (and, in newer versions, 1_000 as 1000), and a bool from 2, -1, yes or on.
// A decimal integer in [lo, hi]: digits alone, with a minus sign for a negative number. Give it to
// ->transform(), not ->check(): it rewrites the value as CLI11 reads it next (010 as 10).
CLI::Validator decimal_in(int64_t lo, int64_t hi);
// A switch: 0, 1, false or true; a bare flag (--causal) reaches it as true.
const CLI::Validator& switch_value();

}  // namespace fs
