#pragma once
// Host-callable wrappers of the few CUDA runtime calls the core types need. Implemented in
// cuda_runtime.cu when HALO_WITH_CUDA, and by throwing stubs in cuda_runtime_none.cpp otherwise,
// so host code never includes cuda_runtime.h.

#include <cstddef>

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
void cuda_memset_zero(void* dst, std::size_t bytes, void* stream);

}  // namespace halo::kernels::detail
