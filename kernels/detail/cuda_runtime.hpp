#pragma once
// Host-callable wrappers of the few CUDA runtime calls the core types need. Implemented in
// cuda_runtime.cu when HALO_WITH_CUDA, and by throwing stubs in cuda_runtime_none.cpp otherwise,
// so host code never includes cuda_runtime.h.

#include <cstddef>

#include <halo/kernels/resources.hpp>

namespace halo::kernels::detail {

int cuda_device_count_impl();
void* cuda_create_stream(int device_id);
void cuda_destroy_stream(void* stream) noexcept;
void cuda_synchronize(void* stream);
/// Stream-ordered allocation from the device's default memory pool.
void* cuda_malloc_async(std::size_t bytes, void* stream);
void cuda_free_async(void* ptr, void* stream) noexcept;
/// cudaMemcpyAsync with cudaMemcpyDefault (unified addressing tells the direction), then a
/// synchronisation of `stream` when `sync` is set.
void cuda_memcpy(void* dst, const void* src, std::size_t bytes, void* stream, bool sync);
/// cudaMemsetAsync: every byte of dst[0, bytes) becomes `value`, in stream order.
void cuda_memset(void* dst, unsigned char value, std::size_t bytes, void* stream);
/// Sets the release threshold of the device's default pool to "never": memory freed with
/// cudaFreeAsync stays in the pool for the next allocation instead of going back to the driver.
void cuda_keep_pool_memory(int device_id);
DeviceMemoryStats cuda_pool_stats(int device_id);
/// Page-locked host memory (cudaMallocHost) and its release.
void* cuda_malloc_pinned(std::size_t bytes);
void cuda_free_pinned(void* ptr) noexcept;
/// cuBLAS / cuSPARSE handles bound to `stream`.
void* cublas_create(void* stream);
void cublas_destroy(void* handle) noexcept;
void* cusparse_create(void* stream);
void cusparse_destroy(void* handle) noexcept;

}  // namespace halo::kernels::detail
