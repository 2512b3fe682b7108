#pragma once
// Wall-clock helpers shared by runtime/'s .cpp files (not installed).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace halo::runtime::detail {

using Clock = std::chrono::steady_clock;

/// Seconds from `t` until now.
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// The median of `v` (the mean of the middle two for an even count); 0 when empty.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace halo::runtime::detail
