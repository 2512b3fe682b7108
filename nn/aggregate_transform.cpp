#include <algorithm>

#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/nn/aggregate_transform.hpp>
#include <halo/nn/detail/products.hpp>

namespace halo::nn {

using kernels::Tensor;
using kernels::Trans;

namespace {
template <class T>
void aggregate(const kernels::Resources& res, Adjacency<T> a, kernels::Aggregate kind,
               kernels::ConstMatrixView<T> x, kernels::MatrixView<T> out) {
  if (a.propagation != nullptr) return a.propagation->forward(res, kind, x, out);
  kernels::spmm(res, a.csr, x, out, kind);
}

template <class T>
void aggregate_adjoint(const kernels::Resources& res, Adjacency<T> a, kernels::Aggregate kind,
                       kernels::ConstMatrixView<T> dy, kernels::MatrixView<T> out) {
  if (a.propagation != nullptr) return a.propagation->backward(res, kind, dy, out);
  kernels::spmm_transposed(res, a.csr, dy, out, kind);
}
/// A device graph whose host does not know its entries counts them as none: then only the rows
/// decide, and equal rows the widths. A propagation (a partition's halo exchange) moves the
/// aggregated width between ranks: the narrower side, as on the full graph.
template <class T>
bool aggregate_first(const kernels::Resources& res, const Adjacency<T>& a, std::int64_t in,
                     std::int64_t out) {
  if (a.propagation != nullptr) return in < out;
  const std::int64_t entries = a.csr.num_entries >= 0
                                   ? a.csr.num_entries
                                   : (res.device() == kernels::Device::Cpu ? a.csr.num_edges() : 0);
  return aggregate_first_is_cheaper(a.num_rows, a.num_cols, entries, in, out);
}
}  // namespace

bool aggregate_first_is_cheaper(std::int64_t rows, std::int64_t cols, std::int64_t entries,
                                std::int64_t in, std::int64_t out) {
  constexpr double kSpmmWeight = 8;  // multiply-adds per SpMM entry and column
  const auto e = static_cast<double>(entries), fi = static_cast<double>(in),
             fo = static_cast<double>(out);
  const double first = kSpmmWeight * e * fi + static_cast<double>(rows) * fi * fo;
  const double second = static_cast<double>(cols) * fi * fo + kSpmmWeight * e * fo;
  return first < second || (first == second && in < out);
}

template <class T>
void AggregateTransform<T>::forward(const kernels::Resources& res, Adjacency<T> a,
                                    const Features<T>& x, const Tensor<T>& w, Tensor<T>& out,
                                    bool accumulate) {
  HALO_EXPECTS(kernels::num_rows(x) == a.num_cols && kernels::num_cols(x) == w.rows(),
               "graph layer: input rows must match the graph's columns and features the weights");
  HALO_EXPECTS(out.rows() == a.num_rows && out.cols() == w.cols(), "graph layer: bad output");
  const auto* dense_x = std::get_if<Tensor<T>>(&x);
  m_aggregate_first = dense_x != nullptr && (m_order == AggregationOrder::Cheaper
                                                 ? aggregate_first(res, a, w.rows(), w.cols())
                                                 : m_order == AggregationOrder::AggregateFirst);
  if (m_aggregate_first) {
    kernels::ensure_shape(res, m_cached, a.num_rows, w.rows());
    aggregate(res, a, m_aggregate, dense_x->view(), m_cached.view());
    kernels::gemm(res, Trans::No, Trans::No, T(1), m_cached.view(), w.view(),
                  accumulate ? T(1) : T(0), out.view());
  } else {
    kernels::ensure_shape(res, m_cached, kernels::num_rows(x), w.cols());
    detail::multiply(res, x, w, m_cached);
    if (!accumulate) {
      aggregate(res, a, m_aggregate, m_cached.view(), out.view());
    } else {
      kernels::ensure_shape(res, m_tmp_out, out.rows(), out.cols());
      aggregate(res, a, m_aggregate, m_cached.view(), m_tmp_out.view());
      kernels::axpy(res, T(1), m_tmp_out.span(), out.span());
    }
  }
}

template <class T>
void AggregateTransform<T>::backward(const kernels::Resources& res, Adjacency<T> a,
                                     const Features<T>& x, const Tensor<T>& w, const Tensor<T>& dy,
                                     Tensor<T>& grad_w, Tensor<T>& dx, bool need_dx,
                                     bool accumulate_dx) {
  const std::int64_t n_src = a.num_cols;
  if (m_aggregate_first) {
    // out = H W with H = Agg(A, X): dW = H^T dy; dX = Agg^T(dy W^T).
    kernels::gemm(res, Trans::Yes, Trans::No, T(1), m_cached.view(), dy.view(), T(0),
                  grad_w.view());
    if (!need_dx) return;
    kernels::ensure_shape(res, m_tmp, a.num_rows, w.rows());
    kernels::gemm(res, Trans::No, Trans::Yes, T(1), dy.view(), w.view(), T(0), m_tmp.view());
    if (!accumulate_dx) {
      aggregate_adjoint(res, a, m_aggregate, m_tmp.view(), dx.view());
      return;
    }
    kernels::ensure_shape(res, m_tmp_dx, n_src, w.rows());
    aggregate_adjoint(res, a, m_aggregate, m_tmp.view(), m_tmp_dx.view());
    kernels::axpy(res, T(1), m_tmp_dx.span(), dx.span());
  } else {
    // out = Agg(A, X W): dH = Agg^T(dy); dW = X^T dH; dX = dH W^T.
    kernels::ensure_shape(res, m_tmp, n_src, w.cols());
    aggregate_adjoint(res, a, m_aggregate, dy.view(), m_tmp.view());
    detail::multiply_transposed(res, x, m_tmp, grad_w);
    if (!need_dx) return;
    kernels::gemm(res, Trans::No, Trans::Yes, T(1), m_tmp.view(), w.view(),
                  accumulate_dx ? T(1) : T(0), dx.view());
  }
}

template <class T>
void AggregateTransform<T>::reserve(const kernels::Resources& res, std::int64_t src_rows,
                                    std::int64_t dst_rows, std::int64_t in, std::int64_t out) {
  // Either order of aggregate and transform may be chosen per pass.
  const std::int64_t either = std::max(dst_rows * in, src_rows * out);
  kernels::reserve(res, m_cached, either);
  kernels::reserve(res, m_tmp, either);
  kernels::reserve(res, m_tmp_dx, src_rows * in);
  kernels::reserve(res, m_tmp_out, dst_rows * out);
}

template class AggregateTransform<float>;
template class AggregateTransform<double>;

}  // namespace halo::nn
