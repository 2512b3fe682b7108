#pragma once
// Single-source bodies of row gather and scatter-add.

#include <cstdint>

#include <halo/kernels/hd.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels::detail {

template <class Idx, class T>
struct GatherRowsBody {  // out(i, :) = x(idx[i], :)
  MatrixView<const T> x;
  Span<const Idx> idx;
  MatrixView<T> out;
  HALO_HD void operator()(std::int64_t i) const {
    const T* src = x.row(static_cast<std::int64_t>(idx[i]));
    T* dst = out.row(i);
    for (std::int64_t j = 0; j < out.cols; ++j) dst[j] = src[j];
  }
};

/// out(idx[i], :) += x(i, :). One index = one block of `width` columns, so repeated targets in
/// idx never race (no atomics).
template <class Idx, class T>
struct ScatterAddRowsBody {
  MatrixView<const T> x;
  Span<const Idx> idx;
  MatrixView<T> out;
  std::int64_t width;
  HALO_HD void operator()(std::int64_t block) const {
    const std::int64_t j0 = block * width;
    const std::int64_t j1 = j0 + width < out.cols ? j0 + width : out.cols;
    for (std::int64_t i = 0; i < idx.size; ++i) {
      const T* src = x.row(i);
      T* dst = out.row(static_cast<std::int64_t>(idx[i]));
      for (std::int64_t j = j0; j < j1; ++j) dst[j] += src[j];
    }
  }
};

/// GPU variants, one element per index so neighbouring threads touch neighbouring columns
/// (coalesced): index k is row k / cols, column k % cols.
template <class Idx, class T>
struct GatherElementsBody {  // out(i, j) = x(idx[i], j)
  MatrixView<const T> x;
  Span<const Idx> idx;
  MatrixView<T> out;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t i = k / out.cols;
    const std::int64_t j = k - i * out.cols;
    out(i, j) = x(static_cast<std::int64_t>(idx[i]), j);
  }
};

template <class Idx, class T>
struct ScatterAddElementsBody {  // out(idx[i], j) += x(i, j), atomically: targets may repeat
  MatrixView<const T> x;
  Span<const Idx> idx;
  MatrixView<T> out;
  HALO_HD void operator()(std::int64_t k) const {
    const std::int64_t i = k / x.cols;
    const std::int64_t j = k - i * x.cols;
    atomic_add(&out(static_cast<std::int64_t>(idx[i]), j), x(i, j));
  }
};

}  // namespace halo::kernels::detail
