// Size arithmetic that cannot wrap: a product of sizes that overflowed 64 bits would make a huge
// problem look small to every check after it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>

namespace fs {

// Is the product of these positive factors at most INT64_MAX?
constexpr bool fits_product(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t f : factors) {
    if (f <= 0) return false;
    if (product > std::numeric_limits<int64_t>::max() / f) return false;
    product *= f;
  }
  return true;
}

}  // namespace fs
