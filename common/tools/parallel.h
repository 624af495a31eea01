// Splitting host work over the CPU's threads: the fp64 references are the slow part of every check.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace fs {

// Runs body(begin, end) on contiguous chunks of [0, count), one chunk per hardware thread, and waits.
inline void parallel_for(std::size_t count, const std::function<void(std::size_t, std::size_t)>& body) {
  const std::size_t width = std::max<std::size_t>(1, std::thread::hardware_concurrency());
  const std::size_t per = (count + width - 1) / width;
  std::vector<std::thread> workers;
  for (std::size_t first = 0; first < count; first += per)
    workers.emplace_back(body, first, std::min(count, first + per));
  for (auto& t : workers) t.join();
}

}  // namespace fs
