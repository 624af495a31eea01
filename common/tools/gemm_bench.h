// Google Benchmark registration for the GEMM stages (06, 07): a stage's versions next to its vendor
// peer ("kernel 0"), in the same binary, on the same inputs. Names:
//   <stage>/<version>/<dtype>/M:m/N:n/K:k   (e.g. stage07/gemm/v1/fp16/M:4096/N:4096/K:4096)
//   <peer>/<dtype>/M:m/N:n/K:k              (cublas/fp16/…, cublaslt/int8/…)
// Inputs are uniform [-1, 1] (int8: the whole int8 range), A untransposed, C written only (beta = 0).
// Counters: TFLOPS (TOPS for int8) and GB/s of the least traffic.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "common/lib/kernel.h"
#include "common/tools/device_info.h"
#include "common/tools/runner.h"

namespace fs::bench {

struct GemmShape {
  int64_t m, n, k;
};

// Makes the peer for a problem, outside timing (it may throw when the library has no kernel for it).
using GemmPeerFactory = std::function<std::unique_ptr<GemmPeer>(const GemmParams&)>;

// The peer (named `peer_name`), then every version of `stage` ("stage06", "stage07/gemm") that takes
// these types and runs on this GPU, at one shape. trans_b: B stored N×K (cuBLASLt's int8 layout).
void register_gemm_stage(const DeviceInfo& dev, const char* stage, const char* peer_name,
                         const GemmPeerFactory& peer, const GemmShape& shape, DType ab, DType c, bool trans_b);

}  // namespace fs::bench
