#include "common/tools/timing.h"

namespace fs {

std::vector<float> time_runs(const std::function<Status()>& launch, const TimingOptions& opt, std::size_t l2_bytes,
                             cudaStream_t stream) {
  L2Flusher flusher(l2_bytes);
  std::vector<float> ms;
  FS_CHECK_STATUS(time_launches(launch, opt, stream, &ms, [&] {
    flusher.flush(stream);
    return Status::Success;
  }));
  return ms;
}

}  // namespace fs
