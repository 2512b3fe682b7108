#pragma once
// CsrMatrix: the owning CSR type (graphs, normalised adjacencies, sparse feature matrices).

#include <cstdint>

#include <halo/kernels/tensor.hpp>

namespace halo::kernels {

/// num_rows x num_cols sparse matrix. `indptr` has num_rows + 1 entries (64-bit), `indices` one
/// column per stored entry, `values` one value per entry or nothing (all ones: a plain graph).
template <class Idx, class T>
struct CsrMatrix {
  Tensor<std::int64_t> indptr;
  Tensor<Idx> indices;
  Tensor<T> values;
  std::int64_t num_cols = 0;
  bool symmetric = false;  // A == A^T, see CsrView::symmetric

  std::int64_t num_rows() const { return indptr.numel() == 0 ? 0 : indptr.numel() - 1; }
  std::int64_t num_edges() const { return indices.numel(); }
  Device device() const { return indptr.device(); }

  CsrView<Idx, T> view() const {
    return {indptr.data(), indices.data(), values.empty() ? nullptr : values.data(),
            num_rows(),    num_cols,       symmetric,
            num_edges()};
  }
  CsrMatrix clone(const Resources& res) const {
    return {indptr.clone(res), indices.clone(res), values.clone(res), num_cols, symmetric};
  }
  CsrMatrix copy_to(const Resources& res, Device target) const {
    return {indptr.copy_to(res, target), indices.copy_to(res, target), values.copy_to(res, target),
            num_cols, symmetric};
  }
};

}  // namespace halo::kernels
