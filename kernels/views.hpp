#pragma once
// Non-owning, trivially copyable views passed by value into ops and single-source bodies.

#include <cstdint>
#include <type_traits>

#include <halo/kernels/hd.hpp>

namespace halo::kernels {

/// A contiguous 1-D range. Never kept past the call that received it.
template <class T>
struct Span {
  T* data = nullptr;
  std::int64_t size = 0;
  HALO_HD T& operator[](std::int64_t i) const { return data[i]; }
  // Implicit by design, and only from a mutable view (a template, so that a view of const
  // elements declares no conversion to its own type, which nvcc warns about; CUDA sources are
  // not compiled as C++20, so no requires-clause).
  template <class U = T, std::enable_if_t<std::is_same_v<U, T> && !std::is_const_v<U>, int> = 0>
  HALO_HD operator Span<const U>() const {  // NOLINT
    return {data, size};
  }
};

/// A dense row-major matrix.
template <class T>
struct MatrixView {
  T* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  HALO_HD T& operator()(std::int64_t r, std::int64_t c) const { return data[r * cols + c]; }
  HALO_HD T* row(std::int64_t r) const { return data + r * cols; }
  HALO_HD std::int64_t size() const { return rows * cols; }
  HALO_HD Span<T> span() const { return {data, rows * cols}; }
  template <class U = T, std::enable_if_t<std::is_same_v<U, T> && !std::is_const_v<U>, int> = 0>
  HALO_HD operator MatrixView<const U>() const {  // NOLINT: implicit by design, as Span's
    return {data, rows, cols};
  }
};

/// A CSR matrix: row r holds entries indptr[r] .. indptr[r+1]-1, column indices[e] and value
/// values[e]. `values == nullptr` means every stored value is 1 (an unweighted graph).
template <class Idx, class T>
struct CsrView {
  const std::int64_t* indptr = nullptr;
  const Idx* indices = nullptr;
  const T* values = nullptr;
  std::int64_t num_rows = 0;
  std::int64_t num_cols = 0;
  /// Set by whoever built the matrix when A == A^T (structure and values): spmm_transposed then
  /// runs as a row-parallel spmm instead of the column-blocked scatter.
  bool symmetric = false;
  /// The number of stored entries when the host knows it (CsrMatrix::view sets it), -1 when not.
  /// Lets host code size library calls (cuSPARSE) without reading indptr back from a device.
  std::int64_t num_entries = -1;
  HALO_HD std::int64_t num_edges() const { return num_rows == 0 ? 0 : indptr[num_rows]; }
  HALO_HD T value(std::int64_t e) const { return values == nullptr ? T(1) : values[e]; }
  HALO_HD std::int64_t degree(std::int64_t r) const { return indptr[r + 1] - indptr[r]; }
};

/// Read-only view parameters of ops whose element type is deduced from another argument: the
/// alias is a non-deduced context, so a mutable view converts implicitly at the call.
template <class T>
struct TypeIdentity {  // std::type_identity, which C++17 (nvcc's dialect here) lacks
  using type = T;
};
template <class T>
using ConstMatrixView = typename TypeIdentity<MatrixView<const T>>::type;
template <class T>
using ConstSpan = typename TypeIdentity<Span<const T>>::type;

}  // namespace halo::kernels
