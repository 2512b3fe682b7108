#pragma once
// Error types and the check macros: exceptions at the API, asserts inside, never in device code.

#include <stdexcept>
#include <string>

namespace halo {

/// Base of every error Halo throws. The message names the failed expression or the input at
/// fault, the source location and, in multi-process runs, the rank.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// A violated precondition or an unsupported request: the caller's mistake.
class LogicError : public Error {
 public:
  using Error::Error;
};
/// Bad or missing data: files, formats, values read from disk.
class IoError : public Error {
 public:
  using Error::Error;
};
/// A CUDA, cuBLAS or cuSPARSE failure.
class CudaError : public Error {
 public:
  using Error::Error;
};
/// A communication failure (MPI, NCCL).
class CommError : public Error {
 public:
  using Error::Error;
};

/// Sets the rank shown in error messages and log lines (-1: single process, no prefix); a
/// program that starts ranks sets it once (halo's CLI does).
void set_error_rank(int rank);
/// The rank set_error_rank set (-1: none).
int error_rank();

namespace detail {
/// Formats "msg (expr at file:line)" with the rank prefix when one is set.
std::string format_error(const char* msg, const char* expr, const char* file, int line);
}  // namespace detail

}  // namespace halo

#define HALO_EXPECTS(cond, msg)                                                                 \
  do {                                                                                          \
    if (!(cond))                                                                                \
      throw ::halo::LogicError(                                                                 \
          ::halo::detail::format_error((std::string(msg)).c_str(), #cond, __FILE__, __LINE__)); \
  } while (0)

#define HALO_FAIL(msg)      \
  throw ::halo::LogicError( \
      ::halo::detail::format_error((std::string(msg)).c_str(), "", __FILE__, __LINE__))

/// Internal invariant, checked when `level` <= HALO_ASSERT_LEVEL (0 = none, 3 = expensive checks).
#define HALO_ASSERT(cond, level)                                                                   \
  do {                                                                                             \
    if constexpr ((level) <= HALO_ASSERT_LEVEL) {                                                  \
      if (!(cond))                                                                                 \
        throw ::halo::LogicError(                                                                  \
            ::halo::detail::format_error("internal assertion failed", #cond, __FILE__, __LINE__)); \
    }                                                                                              \
  } while (0)
