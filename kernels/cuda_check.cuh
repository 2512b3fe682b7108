#pragma once
// CUDA error checks: throwing at the API, logging in destructors.

#include <cuda_runtime.h>
#include <string>

#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>

namespace halo::kernels {
/// HALO_DEBUG_SYNC=1 makes every launch synchronise so a fault is reported at its own op (read
/// once); every component's CUDA code asks this after its launches.
bool debug_sync();
}  // namespace halo::kernels

#define HALO_CUDA_CHECK(expr)                                                   \
  do {                                                                          \
    const cudaError_t halo_status_ = (expr);                                    \
    if (halo_status_ != cudaSuccess)                                            \
      throw ::halo::CudaError(::halo::detail::format_error(                     \
          (std::string("CUDA error ") + cudaGetErrorName(halo_status_) + ": " + \
           cudaGetErrorString(halo_status_))                                    \
              .c_str(),                                                         \
          #expr, __FILE__, __LINE__));                                          \
  } while (0)

#define HALO_CUDA_CHECK_NO_THROW(expr)                                                            \
  do {                                                                                            \
    const cudaError_t halo_status_ = (expr);                                                      \
    if (halo_status_ != cudaSuccess)                                                              \
      HALO_LOG_ERROR("CUDA error " << cudaGetErrorName(halo_status_) << " in " << #expr << " at " \
                                   << __FILE__ << ":" << __LINE__);                               \
  } while (0)

/// cuBLAS / cuSPARSE statuses: a halo::CudaError naming the library's status and the call.
/// (Include <cublas_v2.h> / <cusparse.h> before using them.)
#define HALO_LIBRARY_CHECK(expr, ok, library, name_of)                                       \
  do {                                                                                       \
    const auto halo_status_ = (expr);                                                        \
    if (halo_status_ != (ok))                                                                \
      throw ::halo::CudaError(::halo::detail::format_error(                                  \
          (std::string(library " error ") + name_of(halo_status_)).c_str(), #expr, __FILE__, \
          __LINE__));                                                                        \
  } while (0)
#define HALO_CUBLAS_CHECK(expr) \
  HALO_LIBRARY_CHECK(expr, CUBLAS_STATUS_SUCCESS, "cuBLAS", cublasGetStatusName)
#define HALO_CUSPARSE_CHECK(expr) \
  HALO_LIBRARY_CHECK(expr, CUSPARSE_STATUS_SUCCESS, "cuSPARSE", cusparseGetErrorName)
