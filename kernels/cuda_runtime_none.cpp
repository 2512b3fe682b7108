// CPU-only builds: no device exists, and any attempt to use one fails with a clear error.
#include <halo/kernels/detail/cuda_runtime.hpp>
#include <halo/kernels/error.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::kernels {

int cuda_device_count() { return 0; }

namespace detail {
namespace {
[[noreturn]] void no_cuda() {
  HALO_FAIL("this build has no CUDA backend (configure with -DHALO_WITH_CUDA=ON)");
}
}  // namespace

int cuda_device_count_impl() { return 0; }
void* cuda_create_stream(int) { no_cuda(); }
void cuda_destroy_stream(void*) noexcept {}
void cuda_synchronize(void*) { no_cuda(); }
void* cuda_malloc_async(std::size_t, void*) { no_cuda(); }
void cuda_free_async(void*, void*) noexcept {}
void cuda_memcpy(void*, const void*, std::size_t, void*, bool) { no_cuda(); }
void cuda_memset(void*, unsigned char, std::size_t, void*) { no_cuda(); }
void cuda_keep_pool_memory(int) { no_cuda(); }
DeviceMemoryStats cuda_pool_stats(int) { no_cuda(); }
void* cuda_malloc_pinned(std::size_t) { no_cuda(); }
void cuda_free_pinned(void*) noexcept {}
void* cublas_create(void*) { no_cuda(); }
void cublas_destroy(void*) noexcept {}
void* cusparse_create(void*) { no_cuda(); }
void cusparse_destroy(void*) noexcept {}
}  // namespace detail
}  // namespace halo::kernels
