#pragma once
// HALO_HD marks single-source bodies: __host__ __device__ under nvcc, nothing under g++.

#if defined(__CUDACC__)
#define HALO_HD __host__ __device__
#else
#define HALO_HD
#endif

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

}  // namespace halo::kernels
