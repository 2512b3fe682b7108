#pragma once
// The few CUDA runtime and CUB calls of the sampler's GPU pipeline, defined in sampler_cuda.cu
// (built only with HALO_WITH_CUDA), so that neighbor_sampler.cpp needs no CUDA header. Streams
// are cudaStream_t passed as void*. Call only when HALO_WITH_CUDA.

#include <cstddef>
#include <cstdint>

namespace halo::sampler::detail {

/// Bytes of temporary storage an in-place inclusive sum of `n` int64 entries needs (CUB).
std::size_t cuda_scan_temp_bytes(std::int64_t n);
/// a[0, n) becomes its inclusive prefix sums, in place, asynchronously on `stream`, using
/// `temp` (device, at least cuda_scan_temp_bytes(n) bytes). No allocation, no synchronisation.
void cuda_inclusive_sum(std::int64_t* a, std::int64_t n, void* temp, std::size_t temp_bytes,
                        void* stream);
}  // namespace halo::sampler::detail
