#pragma once
// The byte sizes the plans count in (plan.cpp, hetero_plan.cpp, link_plan.cpp).

#include <cmath>
#include <cstdint>

namespace halo::cluster::detail {

inline constexpr std::int64_t kF = 4;  // bytes of a float, of a 32-bit id
inline constexpr std::int64_t kI = 8;  // bytes of a 64-bit offset

/// Bytes of a count computed in floating point, rounded up.
inline std::int64_t as_bytes(double v) { return static_cast<std::int64_t>(std::ceil(v)); }

}  // namespace halo::cluster::detail
