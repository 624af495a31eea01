// A host-side tuner: the first time a launcher meets a kind of problem (its key: device, head_dim,
// dtype, ...), it times a few candidate configurations on the caller's stream and remembers the
// fastest for the rest of the process, like the autotuners of Triton and CUTLASS's profiler.
//
// FLASHSTAGES_AUTOTUNE=0 in the environment skips the timing and takes candidate 0 (for
// compute-sanitizer runs, and to reproduce the untuned version); FLASHSTAGES_AUTOTUNE=verbose prints
// every timing and choice on stderr. While the caller's stream is capturing a CUDA graph nothing can
// be timed: the launch then takes candidate 0 and remembers nothing, so that a later call outside
// the capture still tunes (tune before capturing to put the tuned choice into a graph).
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "common/lib/status.h"

namespace fs {

class Tuner {
 public:
  struct Candidates {
    int count = 0;
    std::function<bool(int)> usable;       // can candidate i run on this GPU? (candidate 0 must)
    std::function<std::string(int)> name;  // for the verbose lines
    std::function<Status(int)> run;        // enqueue candidate i once on the tuning problem
  };

  explicit Tuner(const char* what) : what_(what) {}

  // The candidate for `key`: remembered, or timed now on `stream`. `make` sets up the candidates and
  // their problem; it is called only when timing happens. Each usable candidate runs once to warm
  // up, then once per round for kRounds rounds, each run timed with CUDA events; the lowest median
  // wins.
  Status choose(const std::string& key, cudaStream_t stream, const std::function<Status(Candidates*)>& make,
                int* index);

  // The candidate remembered for `key`, without timing anything: false when there is none yet.
  bool remembered(const std::string& key, int* index);

 private:
  static constexpr int kRounds = 9;
  Status time_candidates(const std::string& key, cudaStream_t stream, const Candidates& c, int* index) const;

  const char* what_;
  std::mutex mutex_;
  std::map<std::string, int> chosen_;
};

}  // namespace fs
