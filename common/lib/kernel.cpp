#include "common/lib/kernel.h"

#include "common/lib/cuda_check.h"
#include "common/lib/device.h"

namespace fs {

// Written by CMake (kernel_table.cpp in the build tree): one KernelList per stage, in stage order.
extern const KernelList kStageKernels[];
extern const int kStageCount;

Status admits(const KernelDesc& kernel, const AttentionParams& params) {
  if (!kernel.run_attention) return Status::UnsupportedDtype;  // a GEMM or backward kernel takes no forward params
  FS_RETURN_IF_ERROR(validate(params, kernel.attention));
  return check_current_device(kernel.info, largest_tensor_bytes(params));
}

Status admits(const KernelDesc& kernel, const AttentionBwdParams& params) {
  if (!kernel.run_attention_bwd) return Status::UnsupportedDtype;  // not a backward kernel
  FS_RETURN_IF_ERROR(validate(params, kernel.attention));
  FS_RETURN_IF_ERROR(check_current_device(kernel.info, largest_tensor_bytes(params.fwd)));
  // After the device check: sizes no GPU could hold make every span overlap, and are named InvalidSize.
  return check_outputs_apart(params);
}

Status admits(const KernelDesc& kernel, const GemmParams& params) {
  if (!kernel.run_gemm) return Status::UnsupportedDtype;
  FS_RETURN_IF_ERROR(validate(params, kernel.gemm));
  return check_current_device(kernel.info, largest_matrix_bytes(params));
}

Status launch(const KernelDesc& kernel, const AttentionParams& params, cudaStream_t stream) {
  FS_RETURN_IF_ERROR(admits(kernel, params));
  return kernel.run_attention(prepare(params), stream);
}

Status launch(const KernelDesc& kernel, const AttentionBwdParams& params, cudaStream_t stream) {
  FS_RETURN_IF_ERROR(admits(kernel, params));
  return kernel.run_attention_bwd(prepare(params), stream);
}

Status launch(const KernelDesc& kernel, const GemmParams& params, cudaStream_t stream) {
  FS_RETURN_IF_ERROR(admits(kernel, params));
  return kernel.run_gemm(params, stream);
}

const std::vector<const KernelDesc*>& all_kernels() {
  static const std::vector<const KernelDesc*> all = [] {
    std::vector<const KernelDesc*> list;
    for (int s = 0; s < kStageCount; ++s)
      list.insert(list.end(), kStageKernels[s].items, kStageKernels[s].items + kStageKernels[s].count);
    return list;
  }();
  return all;
}

std::vector<const KernelDesc*> find_kernels(std::string_view name) {
  std::vector<const KernelDesc*> found;
  for (const KernelDesc* k : all_kernels()) {
    const std::string q = k->qualified();
    if (q == name || (q.size() > name.size() && q.compare(0, name.size(), name) == 0 && q[name.size()] == '/'))
      found.push_back(k);
  }
  return found;
}

namespace detail {

int export_call(const KernelDesc& kernel, const fs_attention_params* params, void* stream) {
  if (!params) return FS_ERR_NULL_POINTER;
  return static_cast<int>(launch(kernel, *params, static_cast<cudaStream_t>(stream)));
}

int export_call(const KernelDesc& kernel, const fs_attention_bwd_params* params, void* stream) {
  if (!params) return FS_ERR_NULL_POINTER;
  return static_cast<int>(launch(kernel, *params, static_cast<cudaStream_t>(stream)));
}

int export_call(const KernelDesc& kernel, const fs_gemm_params* params, void* stream) {
  if (!params) return FS_ERR_NULL_POINTER;
  return static_cast<int>(launch(kernel, *params, static_cast<cudaStream_t>(stream)));
}

}  // namespace detail

}  // namespace fs

extern "C" FS_API int fs_kernel_count(void) { return static_cast<int>(fs::all_kernels().size()); }

extern "C" FS_API const fs_kernel_info* fs_kernel_at(int index) {
  const auto& all = fs::all_kernels();
  return index >= 0 && index < static_cast<int>(all.size()) ? &all[index]->info : nullptr;
}

extern "C" FS_API int fs_kernel_check_device(const fs_kernel_info* kernel, int device) {
  if (!kernel) return FS_ERR_NULL_POINTER;
  int current = 0;
  if (const cudaError_t err = cudaGetDevice(&current); err != cudaSuccess)
    return static_cast<int>(fs::record_cuda_error(err));
  if (const cudaError_t err = cudaSetDevice(device); err != cudaSuccess)
    return static_cast<int>(fs::record_cuda_error(err));
  fs::DeviceProps props;
  const fs::Status st = fs::current_device(&props);
  cudaSetDevice(current);
  if (st != fs::Status::Success) return static_cast<int>(st);
  return static_cast<int>(fs::device_supports(*kernel, props));
}

extern "C" FS_API int fs_check_varlen(fs_attention_params* params, void* stream) {
  if (!params) return FS_ERR_NULL_POINTER;
  return static_cast<int>(fs::check_varlen(params, static_cast<cudaStream_t>(stream)));
}
