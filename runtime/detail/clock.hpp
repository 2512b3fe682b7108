#pragma once
// Wall-clock intervals for the trainers' timers.

#include <chrono>

namespace halo::runtime::detail {

/// Seconds from `start` until now (steady clock).
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace halo::runtime::detail
