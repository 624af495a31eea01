// flashstages · stage 04 · v4 — v3's kernel with the tile shape chosen per head_dim by a small tuner
// that times a few candidate shapes on the current GPU at first use and remembers the fastest.
//
// What changes from v3: nothing inside the kernel. v3 runs one shape (Br = 64, four warps of 16 rows)
// everywhere; the best shape depends on the head_dim and the GPU, through registers per thread (rO alone
// is D/2 fp32 registers per 16 rows), shared memory per block (Q plus two K and V buffers), blocks per
// SM, and how often a K or V fragment read from shared memory is reused (once per 16-row tile a warp
// owns). So, like the autotuner the Triton tutorials lean on, v4 keeps a short list of shapes per
// head_dim (the first is v3's) and, the first time it meets a (GPU, head_dim, dtype, mask), times each
// on a synthetic problem (B·H = 16, N = 8192) and keeps the fastest for the rest of the process.
//   Br×Bc, warps    the query rows per block and keys per block; warps of 16 or 32 rows (kMT = 1, 2)
//   Q: regs / smem  Q fragments held in registers for the whole key loop, or re-read at every block
// FLASHSTAGES_AUTOTUNE=0 in the environment skips the timing and takes the first candidate (for
// compute-sanitizer runs and for reproducing v3); FLASHSTAGES_AUTOTUNE=verbose prints every timing and
// choice on stderr. Tuning costs a few milliseconds per key and
// allocates its problem from the device's memory pool; it runs on the legacy default stream and
// synchronizes the device, so the first call of a key cannot be captured into a CUDA graph.
//
// Run: build/h100/stages/04_flash_fwd/stage04_flash_fwd --dtype fp16 --seq 8192 --dim 128 --batch 2 --heads 16 --version v4
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "launch.cuh"
#include "random.h"
#include "v3_cp_async_ldmatrix.cuh"
#include "workspace.h"

namespace fs::flash::v4 {

using v3::TileConfig;

// One candidate shape, with its launch (either dtype).
struct Candidate {
  int br, bc, warps, min_blocks;
  bool q_in_regs;
  std::size_t smem_bytes;
  Status (*launch)(const Problem&, cudaStream_t);
};

template <class C>
Status launch_candidate(const Problem& pr, cudaStream_t stream) {
  constexpr int D = C::kHeadDim;
  if (dtype_of(pr.p) == DType::FP16) return launch_kernel<C>(v3::flash_fwd_v3_kernel<__half, D, C>, pr, stream);
  return launch_kernel<C>(v3::flash_fwd_v3_kernel<__nv_bfloat16, D, C>, pr, stream);
}

template <class C>
Candidate candidate() {
  return {C::kBr, C::kBc, C::kWarps, C::kMinBlocks, C::kQInRegs, C::kSmemBytes, launch_candidate<C>};
}

// The shapes per head_dim, v3's first; the others won somewhere in a wider sweep on an H100 (the
// stage README lists it). Registers bound them: 32 rows per warp (kMT = 2) at D = 128 would need 128
// registers for rO, 64 for S and 64 for Q, so those shapes re-read Q from shared memory
// (FlashAttention-2's own choice for D = 128: Br = 128, Bc = 64, four warps); the last D = 128 and
// D = 64 shapes instead cap registers so that three blocks share an SM.
inline const std::vector<Candidate>& candidates(int64_t head_dim) {
  static const std::vector<Candidate> d32{candidate<v3::Config<32>>(), candidate<TileConfig<32, 4, 2, 64, true>>(),
                                          candidate<TileConfig<32, 4, 1, 128, true>>()};
  static const std::vector<Candidate> d64{candidate<v3::Config<64>>(), candidate<TileConfig<64, 4, 2, 64, true>>(),
                                          candidate<TileConfig<64, 4, 1, 128, true>>(),
                                          candidate<TileConfig<64, 4, 1, 64, true, 3>>()};
  static const std::vector<Candidate> d128{candidate<v3::Config<128>>(), candidate<TileConfig<128, 4, 2, 64, false>>(),
                                           candidate<TileConfig<128, 4, 2, 32, false>>(),
                                           candidate<TileConfig<128, 4, 1, 32, true, 3>>()};
  static const std::vector<Candidate> d256{candidate<v3::Config<256>>(), candidate<TileConfig<256, 8, 1, 64, false>>(),
                                           candidate<TileConfig<256, 8, 1, 32, false>>()};
  static const std::vector<Candidate> none;
  switch (head_dim) {
    case 32: return d32;
    case 64: return d64;
    case 128: return d128;
    case 256: return d256;
    default: return none;
  }
}

// Does the candidate's shared memory fit a block on the current GPU (227 KB on H100, 163 KB on A100)?
inline bool fits(const Candidate& c) {
  int device = 0, optin = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device) != cudaSuccess)
    return false;
  return c.smem_bytes <= std::size_t(optin);
}

inline std::string name(const Candidate& c) {
  return "Br=" + std::to_string(c.br) + " Bc=" + std::to_string(c.bc) + " warps=" + std::to_string(c.warps) +
         (c.q_in_regs ? " Q:regs " : " Q:smem ") + std::to_string(c.smem_bytes / 1024) + "KB" +
         (c.min_blocks > 1 ? " " + std::to_string(c.min_blocks) + "/SM" : "");
}

// Uniform values in [-1, 1) for the tuning problem: timing on zeros can flatter a kernel.
template <class T>
__global__ void fill_uniform_kernel(T* x, int64_t n, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    x[i] = from_float<T>(2.0f * uniform01(seed, uint64_t(i)) - 1.0f);
}

class Tuner {
 public:
  // The candidate for (head_dim, dtype, mask) on the current GPU: from memory, or timed now.
  Status choose(int64_t head_dim, DType dtype, bool causal, int* index) {
    int device = 0;
    FS_RETURN_IF_CUDA_ERROR(cudaGetDevice(&device));
    const auto key = std::make_tuple(device, head_dim, dtype, causal);
    std::lock_guard<std::mutex> lock(mutex_);
    if (const auto it = chosen_.find(key); it != chosen_.end()) {
      *index = it->second;
      return Status::Success;
    }
    const char* env = std::getenv("FLASHSTAGES_AUTOTUNE");
    if (env && std::strcmp(env, "0") == 0) {
      *index = 0;
    } else if (const Status st = time_candidates(head_dim, dtype, causal, index); st != Status::Success) {
      return st;  // nothing remembered: the next call tries again
    }
    if (verbose())
      std::fprintf(stderr, "flash_fwd v4: D=%lld %s%s -> %s\n", static_cast<long long>(head_dim), dtype_name(dtype),
                   causal ? " causal" : "", name(candidates(head_dim)[*index]).c_str());
    chosen_[key] = *index;
    return Status::Success;
  }

 private:
  static constexpr int64_t kHeads = 16, kSeq = 8192;
  static constexpr int kRuns = 5;

  // Times every candidate on B = 1, H = 16, N = 8192 in the problem's head_dim, dtype and mask; the
  // fastest mean over kRuns back-to-back launches wins.
  static Status time_candidates(int64_t head_dim, DType dtype, bool causal, int* index) {
    AttentionParams p{};
    p.batch = 1;
    p.heads = kHeads;
    p.seq_q = p.seq_k = kSeq;
    p.head_dim = head_dim;
    p.dtype = static_cast<int32_t>(dtype);
    p.causal = causal;
    const int64_t elems = q_elems(p);
    const std::size_t bytes = std::size_t(elems) * dtype_size(dtype_of(p));
    void* buffers[4] = {};
    Status st = Status::Success;
    for (int i = 0; i < 4 && st == Status::Success; ++i) st = workspace_alloc(&buffers[i], bytes, nullptr);
    cudaEvent_t start = nullptr, stop = nullptr;
    if (st == Status::Success) st = prepare_events(&start, &stop);
    if (st == Status::Success) {
      for (int i = 0; i < 3; ++i) fill(buffers[i], elems, dtype_of(p), 4000 + i);
      if (const cudaError_t err = cudaGetLastError(); err != cudaSuccess) st = record_cuda_error(err);
      p.q = buffers[0];
      p.k = buffers[1];
      p.v = buffers[2];
      p.o = buffers[3];
      Problem pr{p, kSeq, softmax_scale(p) * kLog2e};
      float best_ms = 0.0f;
      const auto& list = candidates(p.head_dim);
      *index = 0;  // v3's shape fits every GPU this build runs on
      for (int c = 0; c < int(list.size()) && st == Status::Success; ++c) {
        if (!fits(list[c])) continue;
        float ms = 0.0f;
        st = time_one(list[c], pr, start, stop, &ms);
        if (st == Status::Success && verbose())
          std::fprintf(stderr, "flash_fwd v4: D=%lld %s%s  %-34s %.3f ms\n", static_cast<long long>(head_dim),
                       dtype_name(dtype), causal ? " causal" : "", name(list[c]).c_str(), ms);
        if (st == Status::Success && (c == 0 || ms < best_ms)) best_ms = ms, *index = c;
      }
    }
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    for (void* b : buffers)
      if (b) workspace_free(b, nullptr);
    if (st == Status::Success) FS_RETURN_IF_CUDA_ERROR(cudaDeviceSynchronize());
    return st;
  }

  static bool verbose() {
    const char* env = std::getenv("FLASHSTAGES_AUTOTUNE");
    return env && std::strcmp(env, "verbose") == 0;
  }

  static Status prepare_events(cudaEvent_t* start, cudaEvent_t* stop) {
    FS_RETURN_IF_CUDA_ERROR(cudaEventCreate(start));
    FS_RETURN_IF_CUDA_ERROR(cudaEventCreate(stop));
    return Status::Success;
  }

  static void fill(void* x, int64_t n, DType t, uint64_t seed) {
    if (t == DType::FP16) fill_uniform_kernel<<<264, 256>>>(static_cast<__half*>(x), n, seed);
    else fill_uniform_kernel<<<264, 256>>>(static_cast<__nv_bfloat16*>(x), n, seed);
  }

  static Status time_one(const Candidate& c, const Problem& pr, cudaEvent_t start, cudaEvent_t stop, float* ms) {
    if (const Status st = c.launch(pr, nullptr); st != Status::Success) return st;  // warm-up
    FS_RETURN_IF_CUDA_ERROR(cudaEventRecord(start, nullptr));
    for (int r = 0; r < kRuns; ++r)
      if (const Status st = c.launch(pr, nullptr); st != Status::Success) return st;
    FS_RETURN_IF_CUDA_ERROR(cudaEventRecord(stop, nullptr));
    FS_RETURN_IF_CUDA_ERROR(cudaEventSynchronize(stop));
    FS_RETURN_IF_CUDA_ERROR(cudaEventElapsedTime(ms, start, stop));
    *ms /= kRuns;
    return Status::Success;
  }

  std::mutex mutex_;
  std::map<std::tuple<int, int64_t, DType, bool>, int> chosen_;  // (device, D, dtype, causal) → candidate
};

}  // namespace fs::flash::v4
