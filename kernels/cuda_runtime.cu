// The CUDA runtime calls behind Resources and Buffer.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cublas_v2.h>
#include <cusparse.h>

#include <halo/kernels/cuda_check.cuh>
#include <halo/kernels/detail/cuda_runtime.hpp>
#include <halo/kernels/resources.hpp>

namespace halo::kernels {

int cuda_device_count() { return detail::cuda_device_count_impl(); }

bool debug_sync() {
  static const bool on = [] {
    const char* v = std::getenv("HALO_DEBUG_SYNC");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

namespace detail {

int cuda_device_count_impl() {
  int count = 0;
  // Without a driver this returns cudaErrorInsufficientDriver or cudaErrorNoDevice: no GPU.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return count;
}

void* cuda_create_stream(int device_id) {
  HALO_CUDA_CHECK(cudaSetDevice(device_id));
  cudaStream_t stream = nullptr;
  HALO_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

void cuda_destroy_stream(void* stream) noexcept {
  HALO_CUDA_CHECK_NO_THROW(cudaStreamDestroy(static_cast<cudaStream_t>(stream)));
}

void cuda_synchronize(void* stream) {
  HALO_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
}

void* cuda_malloc_async(std::size_t bytes, void* stream) {
  void* ptr = nullptr;
  HALO_CUDA_CHECK(cudaMallocAsync(&ptr, bytes, static_cast<cudaStream_t>(stream)));
  return ptr;
}

void cuda_free_async(void* ptr, void* stream) noexcept {
  HALO_CUDA_CHECK_NO_THROW(cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream)));
}

void cuda_memcpy(void* dst, const void* src, std::size_t bytes, void* stream, bool sync) {
  const auto s = static_cast<cudaStream_t>(stream);
  HALO_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s));
  if (sync) HALO_CUDA_CHECK(cudaStreamSynchronize(s));
}

void cuda_memset(void* dst, unsigned char value, std::size_t bytes, void* stream) {
  HALO_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, static_cast<cudaStream_t>(stream)));
}

void cuda_keep_pool_memory(int device_id) {
  cudaMemPool_t pool = nullptr;
  HALO_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device_id));
  std::uint64_t never = UINT64_MAX;
  HALO_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &never));
}

DeviceMemoryStats cuda_pool_stats(int device_id) {
  cudaMemPool_t pool = nullptr;
  HALO_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device_id));
  std::uint64_t reserved = 0, used = 0;
  HALO_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved));
  HALO_CUDA_CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used));
  return {static_cast<std::size_t>(reserved), static_cast<std::size_t>(used)};
}

void* cuda_malloc_pinned(std::size_t bytes) {
  void* ptr = nullptr;
  HALO_CUDA_CHECK(cudaMallocHost(&ptr, bytes));
  return ptr;
}

void cuda_free_pinned(void* ptr) noexcept { HALO_CUDA_CHECK_NO_THROW(cudaFreeHost(ptr)); }

void* cublas_create(void* stream) {
  cublasHandle_t handle = nullptr;
  HALO_CUBLAS_CHECK(cublasCreate(&handle));
  HALO_CUBLAS_CHECK(cublasSetStream(handle, static_cast<cudaStream_t>(stream)));
  return handle;
}

void cublas_destroy(void* handle) noexcept {
  if (cublasDestroy(static_cast<cublasHandle_t>(handle)) != CUBLAS_STATUS_SUCCESS)
    HALO_LOG_ERROR("cublasDestroy failed");
}

void* cusparse_create(void* stream) {
  cusparseHandle_t handle = nullptr;
  HALO_CUSPARSE_CHECK(cusparseCreate(&handle));
  HALO_CUSPARSE_CHECK(cusparseSetStream(handle, static_cast<cudaStream_t>(stream)));
  return handle;
}

void cusparse_destroy(void* handle) noexcept {
  if (cusparseDestroy(static_cast<cusparseHandle_t>(handle)) != CUSPARSE_STATUS_SUCCESS)
    HALO_LOG_ERROR("cusparseDestroy failed");
}

}  // namespace detail
}  // namespace halo::kernels
