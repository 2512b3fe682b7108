#pragma once
// Single-source bodies of the reductions: per-block partial sums, then a combine.

#include <cstdint>

#include <halo/kernels/hd.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels::detail {

/// partial(b, :) = sum of x's rows [b * rows_per_block, (b + 1) * rows_per_block). Rows are read
/// contiguously, which a column-at-a-time sum would not do.
template <class T>
struct ColumnPartialSumBody {
  MatrixView<const T> x;
  std::int64_t rows_per_block;
  MatrixView<T> partial;
  HALO_HD void operator()(std::int64_t b) const {
    T* p = partial.row(b);
    for (std::int64_t j = 0; j < x.cols; ++j) p[j] = T(0);
    const std::int64_t end = (b + 1) * rows_per_block < x.rows ? (b + 1) * rows_per_block : x.rows;
    for (std::int64_t r = b * rows_per_block; r < end; ++r) {
      const T* row = x.row(r);
      for (std::int64_t j = 0; j < x.cols; ++j) p[j] += row[j];
    }
  }
};

/// The GPU variant: one (block, column) pair per index, so neighbouring threads read neighbouring
/// columns of a row (coalesced); index k is block k / cols, column k % cols.
template <class T>
struct ColumnPartialSumByColumnBody {
  MatrixView<const T> x;
  std::int64_t rows_per_block;
  MatrixView<T> partial;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t b = k / x.cols;
    const std::int64_t j = k - b * x.cols;
    const std::int64_t end = (b + 1) * rows_per_block < x.rows ? (b + 1) * rows_per_block : x.rows;
    T acc = T(0);
    for (std::int64_t r = b * rows_per_block; r < end; ++r) acc += x(r, j);
    partial(b, j) = acc;
  }
};

/// out[j] = sum_b partial(b, j) (+ out[j] when accumulating).
template <class T>
struct ColumnCombineBody {
  MatrixView<const T> partial;
  Span<T> out;
  bool accumulate;
  HALO_HD void operator()(std::int64_t j) const {
    T acc = accumulate ? out[j] : T(0);
    for (std::int64_t b = 0; b < partial.rows; ++b) acc += partial(b, j);
    out[j] = acc;
  }
};

}  // namespace halo::kernels::detail
