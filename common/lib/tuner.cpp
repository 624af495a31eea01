#include "common/lib/tuner.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common/lib/cuda_check.h"
#include "common/lib/timer.h"

namespace fs {

namespace {

const char* autotune_env() {
  const char* env = std::getenv("FLASHSTAGES_AUTOTUNE");
  return env ? env : "";
}

}  // namespace

Status Tuner::choose(const std::string& key, cudaStream_t stream, const std::function<Status(Candidates*)>& make,
                     int* index) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = chosen_.find(key); it != chosen_.end()) {
    *index = it->second;
    return Status::Success;
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  FS_RETURN_IF_CUDA_ERROR(cudaStreamIsCapturing(stream, &capture));
  if (capture != cudaStreamCaptureStatusNone) {
    *index = 0;  // not remembered: the next call outside the capture tunes
    return Status::Success;
  }
  const bool verbose = std::strcmp(autotune_env(), "verbose") == 0;
  if (std::strcmp(autotune_env(), "0") == 0) {
    *index = 0;
  } else {
    Candidates c;
    FS_RETURN_IF_ERROR(make(&c));
    FS_RETURN_IF_ERROR(time_candidates(key, stream, c, index));  // on failure nothing is remembered
    if (verbose) std::fprintf(stderr, "%s: %s -> %s\n", what_, key.c_str(), c.name(*index).c_str());
  }
  chosen_[key] = *index;
  return Status::Success;
}

bool Tuner::remembered(const std::string& key, int* index) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = chosen_.find(key);
  if (it == chosen_.end()) return false;
  *index = it->second;
  return true;
}

Status Tuner::time_candidates(const std::string& key, cudaStream_t stream, const Candidates& c, int* index) const {
  const bool verbose = std::strcmp(autotune_env(), "verbose") == 0;
  std::vector<int> usable;
  for (int i = 0; i < c.count; ++i)
    if (c.usable(i)) usable.push_back(i);
  for (int i : usable) FS_RETURN_IF_ERROR(c.run(i));  // warm-up: module load, first touch
  // Round-robin: one timed run of each candidate per round, so that a clock or temperature drift
  // during the tuning falls on every candidate alike instead of on whichever runs first.
  std::vector<std::vector<float>> ms(c.count);
  GpuTimer timer;
  for (int round = 0; round < kRounds; ++round)
    for (int i : usable) {
      FS_RETURN_IF_ERROR(timer.begin(stream));
      FS_RETURN_IF_ERROR(c.run(i));
      float t = 0.0f;
      FS_RETURN_IF_ERROR(timer.end(stream, &t));
      ms[i].push_back(t);
    }
  float best = 0.0f;
  *index = 0;
  for (int i : usable) {
    const float t = median(ms[i]);
    if (verbose) std::fprintf(stderr, "%s: %s  %-36s %.3f ms\n", what_, key.c_str(), c.name(i).c_str(), t);
    if (i == usable.front() || t < best) best = t, *index = i;
  }
  return Status::Success;
}

}  // namespace fs
