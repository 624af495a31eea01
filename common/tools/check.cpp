#include "common/tools/check.h"

namespace fs {

void throw_error(const char* what, const std::string& why, const char* file, int line) {
  throw CudaError(std::string(what) + " failed: " + why + " at " + file + ":" + std::to_string(line));
}

}  // namespace fs
