#pragma once
// HALO_HD marks single-source bodies: __host__ __device__ under nvcc, nothing under g++.

#if defined(__CUDACC__)
#define HALO_HD __host__ __device__
#else
#define HALO_HD
#endif

#include <cstdint>

namespace halo::kernels {

/// *address += value as one indivisible update: atomicAdd on the GPU, an OpenMP atomic on the
/// CPU. For bodies whose indices may update the same element (scatters).
template <class T>
HALO_HD inline void atomic_add(T* address, T value) {
#if defined(__CUDA_ARCH__)
  atomicAdd(address, value);
#elif defined(_OPENMP)
#pragma omp atomic
  *address += value;
#else
  *address += value;
#endif
}

/// *p = min(*p, v), atomically.
HALO_HD inline void atomic_min(std::int64_t* p, std::int64_t v) {
#if defined(__CUDA_ARCH__)
  atomicMin(reinterpret_cast<long long*>(p), static_cast<long long>(v));
#else
  std::int64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (v < cur && !__atomic_compare_exchange_n(p, &cur, v, /*weak=*/true, __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED)) {
  }
#endif
}

/// *p, read whole while other threads may be writing it.
HALO_HD inline std::uint64_t atomic_load(const std::uint64_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const volatile unsigned long long*>(p);
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/// Replaces *p by `desired` if it still holds `expected`; true on success.
HALO_HD inline bool atomic_cas(std::uint64_t* p, std::uint64_t expected, std::uint64_t desired) {
#if defined(__CUDA_ARCH__)
  return atomicCAS(reinterpret_cast<unsigned long long*>(p), expected, desired) == expected;
#else
  return __atomic_compare_exchange_n(p, &expected, desired, /*weak=*/false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED);
#endif
}

}  // namespace halo::kernels
