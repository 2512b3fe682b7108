#pragma once
// HALO_HD marks single-source bodies: __host__ __device__ under nvcc, nothing under g++.

#if defined(__CUDACC__)
#define HALO_HD __host__ __device__
#else
#define HALO_HD
#endif
