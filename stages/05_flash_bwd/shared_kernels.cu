// Stage 05: the kernels every version shares, compiled here once instead of in every version's
// translation unit — delta (common/device/bwd_preprocess.cuh: every version), and for the tensor-core versions v2 to
// v10 the deterministic pair (deterministic.cuh) and the atomic path's dQ conversion (dq_reduce.cuh).
// One explicit instantiation per element type and head_dim the versions take; launch.cuh declares
// each, so that a version's launch calls it without compiling it again.
#include "stages/05_flash_bwd/launch.cuh"

namespace fs::bwd {

template Status launch_delta<float>(const AttentionBwdProblem&, float*, cudaStream_t);  // v0, v1
template Status launch_delta<__half>(const AttentionBwdProblem&, float*, cudaStream_t);
template Status launch_delta<__nv_bfloat16>(const AttentionBwdProblem&, float*, cudaStream_t);

template Status launch_deterministic<__half, 64>(const Args<__half>&, bool, int64_t, int64_t, cudaStream_t);
template Status launch_deterministic<__half, 128>(const Args<__half>&, bool, int64_t, int64_t, cudaStream_t);
template Status launch_deterministic<__nv_bfloat16, 64>(const Args<__nv_bfloat16>&, bool, int64_t, int64_t,
                                                        cudaStream_t);
template Status launch_deterministic<__nv_bfloat16, 128>(const Args<__nv_bfloat16>&, bool, int64_t, int64_t,
                                                         cudaStream_t);

template Status launch_dq_convert<__half, 64>(const Args<__half>&, int64_t, cudaStream_t);
template Status launch_dq_convert<__half, 128>(const Args<__half>&, int64_t, cudaStream_t);
template Status launch_dq_convert<__nv_bfloat16, 64>(const Args<__nv_bfloat16>&, int64_t, cudaStream_t);
template Status launch_dq_convert<__nv_bfloat16, 128>(const Args<__nv_bfloat16>&, int64_t, cudaStream_t);

}  // namespace fs::bwd
