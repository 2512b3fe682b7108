#pragma once
// Single-source bodies of the CSR x dense products.

#include <cstdint>

#include <halo/kernels/hd.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

enum class Aggregate { Sum, Mean };

namespace detail {

/// out(r, :) = sum_e w(e) * x(col(e), :), divided by the row's entry count for Mean (empty
/// rows give zeros). With `mean_source` each term is divided by the entry count of row col(e)
/// instead: for a symmetric A that is the adjoint of Mean, (D^-1 A)^T y = A D^-1 y.
/// With `accumulate` (Sum only) the products are added to out's rows instead of replacing them.
/// One index = one row: rows write disjoint outputs.
template <class Idx, class T>
struct SpmmRowBody {
  CsrView<Idx, T> a;
  MatrixView<const T> x;
  MatrixView<T> out;
  bool mean;
  bool mean_source = false;
  bool accumulate = false;
  HALO_HD void operator()(std::int64_t r) const {
    // Locals, not members, in the loops: stores through `o` could otherwise alias them and
    // block vectorisation.
    const std::int64_t width = out.cols;
    T* o = out.row(r);
    if (!accumulate)
      for (std::int64_t j = 0; j < width; ++j) o[j] = T(0);
    const std::int64_t begin = a.indptr[r];
    const std::int64_t end = a.indptr[r + 1];
    for (std::int64_t e = begin; e < end; ++e) {
      const auto c = static_cast<std::int64_t>(a.indices[e]);
      const T w = mean_source ? a.value(e) / static_cast<T>(a.degree(c)) : a.value(e);
      const T* xr = x.row(c);
#if !defined(__CUDA_ARCH__)
      // Random rows of a large x are latency-bound: start fetching a later edge's row now.
      constexpr std::int64_t kAhead = 4;
      if (e + kAhead < end) {
        const char* next = reinterpret_cast<const char*>(x.row(a.indices[e + kAhead]));
        for (std::int64_t b = 0; b < width * static_cast<std::int64_t>(sizeof(T)); b += 64)
          __builtin_prefetch(next + b);
      }
#endif
      for (std::int64_t j = 0; j < width; ++j) o[j] += w * xr[j];
    }
    if (mean && end > begin) {
      const T inv = T(1) / static_cast<T>(end - begin);
      for (std::int64_t j = 0; j < width; ++j) o[j] *= inv;
    }
  }
};

/// The adjoint product out = A^T y (out zeroed beforehand). One index = one block of
/// kColumnBlock output columns: every block walks all edges and owns its columns, so no two
/// indices write the same element and no atomics are needed.
template <class Idx, class T>
struct SpmmTransposedBlockBody {
  static constexpr std::int64_t kColumnBlock = 16;
  CsrView<Idx, T> a;
  MatrixView<const T> y;
  MatrixView<T> out;
  bool mean;
  HALO_HD void operator()(std::int64_t block) const {
    const std::int64_t j0 = block * kColumnBlock;
    const std::int64_t j1 = j0 + kColumnBlock < out.cols ? j0 + kColumnBlock : out.cols;
    for (std::int64_t r = 0; r < a.num_rows; ++r) {
      const std::int64_t begin = a.indptr[r];
      const std::int64_t end = a.indptr[r + 1];
      if (begin == end) continue;
      const T scale = mean ? T(1) / static_cast<T>(end - begin) : T(1);
      const T* yr = y.row(r);
      for (std::int64_t e = begin; e < end; ++e) {
        const T w = a.value(e) * scale;
        T* o = out.row(static_cast<std::int64_t>(a.indices[e]));
        for (std::int64_t j = j0; j < j1; ++j) o[j] += w * yr[j];
      }
    }
  }
};

}  // namespace detail
}  // namespace halo::kernels
