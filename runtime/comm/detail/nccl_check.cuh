#pragma once
// NCCL error checks: halo::CommError at the API, a logged error in destructors.

#include <nccl.h>
#include <string>

#include <halo/kernels/error.hpp>
#include <halo/kernels/log.hpp>

/// Throws halo::CommError naming the NCCL call, NCCL's error string and its last error message
/// (which tells, e.g., which peer or transport failed), with file:line and the rank.
#define HALO_NCCL_CHECK(expr)                                                           \
  do {                                                                                  \
    const ncclResult_t halo_nccl_status_ = (expr);                                      \
    if (halo_nccl_status_ != ncclSuccess)                                               \
      throw ::halo::CommError(::halo::detail::format_error(                             \
          (std::string("NCCL error: ") + ncclGetErrorString(halo_nccl_status_) + " (" + \
           ncclGetLastError(nullptr) + ")")                                             \
              .c_str(),                                                                 \
          #expr, __FILE__, __LINE__));                                                  \
  } while (0)

#define HALO_NCCL_CHECK_NO_THROW(expr)                                                         \
  do {                                                                                         \
    const ncclResult_t halo_nccl_status_ = (expr);                                             \
    if (halo_nccl_status_ != ncclSuccess)                                                      \
      HALO_LOG_ERROR("NCCL error " << ncclGetErrorString(halo_nccl_status_) << " in " << #expr \
                                   << " at " << __FILE__ << ":" << __LINE__);                  \
  } while (0)
