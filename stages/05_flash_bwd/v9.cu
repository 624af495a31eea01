// Stage 05 v9: the launch of v9_tiles_per_head_dim.cuh's K/V kernel on the atomic path (launch.cuh's run_mma;
// the deterministic path is deterministic.cuh's, as for every tensor-core version), its descriptor and C entry.
#include "stages/05_flash_bwd/launch.cuh"
#include "stages/05_flash_bwd/v9_tiles_per_head_dim.cuh"
#include "stages/05_flash_bwd/versions.h"

namespace fs {
namespace bwd::v9 {
namespace {

Status run(const AttentionBwdProblem& pr, cudaStream_t stream) {
  return run_mma<Config>(pr, stream, [](auto type, auto d, auto varlen) {
    return flash_bwd_v9_dkv_kernel<typename decltype(type)::type, decltype(d)::value, decltype(varlen)::value>;
  });
}

}  // namespace
}  // namespace bwd::v9

const KernelDesc kFlashBwdV9 = attention_bwd_kernel(
    {"fs_flash_bwd_v9", "stage05", "v9",
     "v8 with the query tile sized per head_dim: Br = 128 at D = 64 (S, dP warp tiles 64 x 32, dQ 32 x 32), 64 at D = 128"},
    bwd::mma::kSupport, kStageArchs, bwd::mma_smem_bytes<bwd::v9::Config>(), bwd::v9::run, bwd::mma_extra_bytes,
    /*traffic_bytes=*/nullptr, delta_extra_bytes);

// The delta ablation: v9 recomputing delta_i in every key block. Not in the registry's list and no C
// entry: the benchmark and the tests name it. It allocates the dQ workspace alone on the atomic path
// (a delta the caller asks for is still the preprocess's); the deterministic path is every version's.
// Its launch, run_mma over v9's K/V kernel with delta in the loop, compiles in a file of its own
// (instances/v9_delta_in_loop.cu), beside v9's.
namespace bwd::v9 {

Status run_delta_in_loop(const AttentionBwdProblem& pr, cudaStream_t stream);

namespace {

std::size_t delta_in_loop_extra_bytes(const AttentionParams& p) { return std::size_t(q_elems(p)) * sizeof(float); }

}  // namespace
}  // namespace bwd::v9

const KernelDesc kFlashBwdV9DeltaInLoop = attention_bwd_kernel(
    {"fs_flash_bwd_v9_delta_in_loop", "stage05", "v9_delta_in_loop",
     "ablation: v9 without the preprocess's delta, each key block recomputing rowsum(dO_i * O_i) from O_i it streams"},
    bwd::mma::kSupport, kStageArchs, bwd::mma_smem_bytes<bwd::v9::ConfigDeltaInLoop>(), bwd::v9::run_delta_in_loop,
    bwd::v9::delta_in_loop_extra_bytes, /*traffic_bytes=*/nullptr, delta_extra_bytes);

}  // namespace fs

FS_EXPORT_ATTENTION_BWD(fs_flash_bwd_v9, fs::kFlashBwdV9)
