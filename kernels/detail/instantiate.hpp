#pragma once
// The element and index types every op is instantiated for, listed once for the whole library.
// Usage: #define HALO_INSTANTIATE(Idx, T) ...explicit instantiations...;
//        HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)

#include <cstdint>

#define HALO_FOR_VALUE_TYPES(X) X(float) X(double)

#define HALO_FOR_INDEX_AND_VALUE_TYPES(X) \
  X(std::int32_t, float) X(std::int64_t, float) X(std::int32_t, double) X(std::int64_t, double)
