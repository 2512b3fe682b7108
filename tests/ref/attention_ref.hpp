#pragma once
// Reference implementations of the multi-head attention ops (kernels/attention.hpp): plain
// loops in double over host CSR matrices and host tensors, written from the documented
// semantics. Results are flat row-major vectors.

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <halo/kernels/csr.hpp>
#include <halo/kernels/tensor.hpp>

namespace halo::ref {

/// out(e, h) = sum_c a(r, h*d + c) b(col(e), h*d + c), E x heads.
template <class Idx, class T>
std::vector<double> sddmm(const kernels::CsrMatrix<Idx, T>& g, const kernels::Tensor<T>& a,
                          const kernels::Tensor<T>& b, std::int64_t heads) {
  const std::int64_t d = a.cols() / heads;
  std::vector<double> out(static_cast<std::size_t>(g.num_edges() * heads));
  for (std::int64_t r = 0; r < g.num_rows(); ++r)
    for (std::int64_t e = g.indptr(r); e < g.indptr(r + 1); ++e)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t c = 0; c < d; ++c)
          out[e * heads + h] += double(a(r, h * d + c)) * double(b(g.indices(e), h * d + c));
  return out;
}

/// out(r, j) = sum_e w(e, j / d) x(col(e), j), num_rows x x.cols; w is E x heads.
template <class Idx, class T>
std::vector<double> weighted_aggregate(const kernels::CsrMatrix<Idx, T>& g,
                                       const kernels::Tensor<T>& w, const kernels::Tensor<T>& x) {
  const std::int64_t width = x.cols(), d = width / w.cols();
  std::vector<double> out(static_cast<std::size_t>(g.num_rows() * width));
  for (std::int64_t r = 0; r < g.num_rows(); ++r)
    for (std::int64_t e = g.indptr(r); e < g.indptr(r + 1); ++e)
      for (std::int64_t j = 0; j < width; ++j)
        out[r * width + j] += double(w(e, j / d)) * double(x(g.indices(e), j));
  return out;
}

/// out(col(e), j) = sum_e w(e, j / d) y(r, j), num_cols x y.cols.
template <class Idx, class T>
std::vector<double> weighted_aggregate_transposed(const kernels::CsrMatrix<Idx, T>& g,
                                                  const kernels::Tensor<T>& w,
                                                  const kernels::Tensor<T>& y) {
  const std::int64_t width = y.cols(), d = width / w.cols();
  std::vector<double> out(static_cast<std::size_t>(g.num_cols * width));
  for (std::int64_t r = 0; r < g.num_rows(); ++r)
    for (std::int64_t e = g.indptr(r); e < g.indptr(r + 1); ++e)
      for (std::int64_t j = 0; j < width; ++j)
        out[g.indices(e) * width + j] += double(w(e, j / d)) * double(y(r, j));
  return out;
}

/// Softmax per (row, head) over the edges of that row in every part: one E_k x heads result
/// per part. Written as the definition: exp(s) / sum of exp(s') over the union, shifted by the
/// union's maximum so that large scores do not overflow.
template <class Idx, class T>
std::vector<std::vector<double>> segment_softmax(
    const std::vector<const kernels::CsrMatrix<Idx, T>*>& graphs,
    const std::vector<const kernels::Tensor<T>*>& scores, std::int64_t num_rows,
    std::int64_t heads) {
  std::vector<std::vector<double>> out;
  for (const auto* s : scores) out.emplace_back(static_cast<std::size_t>(s->numel()));
  for (std::int64_t r = 0; r < num_rows; ++r) {
    for (std::int64_t h = 0; h < heads; ++h) {
      double m = -std::numeric_limits<double>::infinity();
      for (std::size_t k = 0; k < graphs.size(); ++k)
        for (std::int64_t e = graphs[k]->indptr(r); e < graphs[k]->indptr(r + 1); ++e)
          m = std::max(m, double((*scores[k])(e, h)));
      double total = 0;
      for (std::size_t k = 0; k < graphs.size(); ++k)
        for (std::int64_t e = graphs[k]->indptr(r); e < graphs[k]->indptr(r + 1); ++e)
          total += std::exp(double((*scores[k])(e, h)) - m);
      for (std::size_t k = 0; k < graphs.size(); ++k)
        for (std::int64_t e = graphs[k]->indptr(r); e < graphs[k]->indptr(r + 1); ++e)
          out[k][e * heads + h] = std::exp(double((*scores[k])(e, h)) - m) / total;
    }
  }
  return out;
}

}  // namespace halo::ref
