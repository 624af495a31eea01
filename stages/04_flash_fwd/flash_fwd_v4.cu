// Stage 04 v4: v3's kernel, the tile shape per (head_dim, dtype, mask) chosen by the tuner.
#include "flash_fwd.h"
#include "launch.cuh"
#include "v4_autotune.cuh"

namespace fs {

namespace {

flash::v4::Tuner& tuner() {
  static flash::v4::Tuner t;  // one per process: what it learned serves every later call
  return t;
}

}  // namespace

Status launch_flash_fwd_v4(const AttentionParams& p, cudaStream_t stream) {
  flash::Problem pr;
  if (const Status st = flash::prepare(p, stream, &pr); st != Status::Success) return st;
  int index = 0;
  if (const Status st = tuner().choose(p.head_dim, dtype_of(p), p.causal != 0, &index); st != Status::Success)
    return st;
  return flash::v4::candidates(p.head_dim)[index].launch(pr, stream);
}

int flash_fwd_v4_num_candidates(int64_t head_dim) { return int(flash::v4::candidates(head_dim).size()); }

std::string flash_fwd_v4_candidate_name(int64_t head_dim, int index) {
  const auto& list = flash::v4::candidates(head_dim);
  return index >= 0 && index < int(list.size()) ? flash::v4::name(list[index]) : std::string("none");
}

bool flash_fwd_v4_candidate_fits(int64_t head_dim, int index) {
  const auto& list = flash::v4::candidates(head_dim);
  return index >= 0 && index < int(list.size()) && flash::v4::fits(list[index]);
}

Status launch_flash_fwd_v4_candidate(const AttentionParams& p, int index, cudaStream_t stream) {
  flash::Problem pr;
  if (const Status st = flash::prepare(p, stream, &pr); st != Status::Success) return st;
  const auto& list = flash::v4::candidates(p.head_dim);
  if (index < 0 || index >= int(list.size())) return Status::InvalidSize;  // no such candidate
  return list[index].launch(pr, stream);
}

int flash_fwd_v4_choice(int64_t head_dim, DType dtype, bool causal) {
  int index = -1;
  if (flash::v4::candidates(head_dim).empty() || dtype == DType::FP32) return -1;
  return tuner().choose(head_dim, dtype, causal, &index) == Status::Success ? index : -1;
}

}  // namespace fs
