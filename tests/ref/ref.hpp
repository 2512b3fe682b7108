#pragma once
// Reference implementations: short, sequential, accumulating in double, written from the
// documented semantics of each op and never calling the op itself. Matrices come in as host
// tensors; results go out as flat row-major host vectors.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include <halo/kernels/csr.hpp>
#include <halo/kernels/elementwise_body.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/optim.hpp>
#include <halo/kernels/spmm_body.hpp>
#include <halo/kernels/tensor.hpp>

namespace halo::ref {

using kernels::Aggregate;
using kernels::CsrMatrix;
using kernels::DropoutKey;
using kernels::Tensor;
using kernels::Trans;

namespace detail {
/// Entry e's weight; A(r, :) scaled by 1 / degree for Mean (empty rows have no entries).
template <class Idx, class T>
double weight(const CsrMatrix<Idx, T>& a, std::int64_t r, std::int64_t e, Aggregate aggregate) {
  const double w = a.values.empty() ? 1.0 : static_cast<double>(a.values(e));
  const auto degree = static_cast<double>(a.indptr(r + 1) - a.indptr(r));
  return aggregate == Aggregate::Mean ? w / degree : w;
}
}  // namespace detail

/// alpha * op(a) * op(b) + beta * c, with c's contents ignored when beta == 0.
template <class T>
std::vector<T> gemm(Trans ta, Trans tb, double alpha, const Tensor<T>& a, const Tensor<T>& b,
                    double beta, const Tensor<T>& c) {
  const std::int64_t m = ta == Trans::No ? a.rows() : a.cols();
  const std::int64_t k = ta == Trans::No ? a.cols() : a.rows();
  const std::int64_t n = tb == Trans::No ? b.cols() : b.rows();
  auto op_a = [&](std::int64_t i, std::int64_t l) { return ta == Trans::No ? a(i, l) : a(l, i); };
  auto op_b = [&](std::int64_t l, std::int64_t j) { return tb == Trans::No ? b(l, j) : b(j, l); };
  std::vector<T> out(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t l = 0; l < k; ++l) acc += double(op_a(i, l)) * double(op_b(l, j));
      const double old = beta == 0 ? 0.0 : beta * double(c(i, j));
      out[i * n + j] = static_cast<T>(alpha * acc + old);
    }
  }
  return out;
}

/// The dense form of a (duplicate entries add up).
template <class Idx, class T>
std::vector<T> densify(const CsrMatrix<Idx, T>& a) {
  std::vector<double> d(static_cast<std::size_t>(a.num_rows() * a.num_cols));
  for (std::int64_t r = 0; r < a.num_rows(); ++r)
    for (std::int64_t e = a.indptr(r); e < a.indptr(r + 1); ++e)
      d[r * a.num_cols + a.indices(e)] += a.values.empty() ? 1.0 : double(a.values(e));
  return {d.begin(), d.end()};
}

/// A x (Mean: each row divided by its entry count).
template <class Idx, class T>
std::vector<T> spmm(const CsrMatrix<Idx, T>& a, const Tensor<T>& x,
                    Aggregate aggregate = Aggregate::Sum) {
  const std::int64_t n = x.cols();
  std::vector<double> out(static_cast<std::size_t>(a.num_rows() * n));
  for (std::int64_t r = 0; r < a.num_rows(); ++r)
    for (std::int64_t e = a.indptr(r); e < a.indptr(r + 1); ++e)
      for (std::int64_t j = 0; j < n; ++j)
        out[r * n + j] += detail::weight(a, r, e, aggregate) * double(x(a.indices(e), j));
  return {out.begin(), out.end()};
}

/// A^T y (Mean: A's rows divided by their entry counts first).
template <class Idx, class T>
std::vector<T> spmm_transposed(const CsrMatrix<Idx, T>& a, const Tensor<T>& y,
                               Aggregate aggregate = Aggregate::Sum) {
  const std::int64_t n = y.cols();
  std::vector<double> out(static_cast<std::size_t>(a.num_cols * n));
  for (std::int64_t r = 0; r < a.num_rows(); ++r)
    for (std::int64_t e = a.indptr(r); e < a.indptr(r + 1); ++e)
      for (std::int64_t j = 0; j < n; ++j)
        out[a.indices(e) * n + j] += detail::weight(a, r, e, aggregate) * double(y(r, j));
  return {out.begin(), out.end()};
}

/// x(r, :) + bias.
template <class T>
std::vector<T> add_bias(const Tensor<T>& x, const std::vector<T>& bias) {
  std::vector<T> out(static_cast<std::size_t>(x.numel()));
  for (std::int64_t r = 0; r < x.rows(); ++r)
    for (std::int64_t j = 0; j < x.cols(); ++j) out[r * x.cols() + j] = x(r, j) + bias[j];
  return out;
}

template <class T>
std::vector<T> relu(const std::vector<T>& x) {
  std::vector<T> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = x[i] > 0 ? x[i] : T(0);
  return y;
}

/// dy where the ReLU output y is positive, else 0.
template <class T>
std::vector<T> relu_backward(const std::vector<T>& y, const std::vector<T>& dy) {
  std::vector<T> dx(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) dx[i] = y[i] > 0 ? dy[i] : T(0);
  return dx;
}

/// Whether dropout keeps element (r, c) of a matrix with `cols` columns, straight from the
/// DropoutKey definition in kernels/elementwise_body.hpp (row_ids, when set, in host memory).
bool dropout_keep(const DropoutKey& key, float p, std::int64_t r, std::int64_t c,
                  std::int64_t cols);

/// Inverted dropout of a dense matrix.
template <class T>
std::vector<T> dropout(const DropoutKey& key, float p, const Tensor<T>& x) {
  std::vector<T> y(static_cast<std::size_t>(x.numel()));
  for (std::int64_t r = 0; r < x.rows(); ++r)
    for (std::int64_t c = 0; c < x.cols(); ++c)
      y[r * x.cols() + c] = dropout_keep(key, p, r, c, x.cols())
                                ? static_cast<T>(double(x(r, c)) / (1.0 - double(p)))
                                : T(0);
  return y;
}

/// column sums, in double.
template <class T>
std::vector<double> column_sum(const Tensor<T>& x) {
  std::vector<double> out(static_cast<std::size_t>(x.cols()));
  for (std::int64_t r = 0; r < x.rows(); ++r)
    for (std::int64_t j = 0; j < x.cols(); ++j) out[j] += double(x(r, j));
  return out;
}

template <class T>
double sum(const std::vector<T>& x) {
  double s = 0;
  for (const T v : x) s += double(v);
  return s;
}

/// Mean over `rows` of -log(softmax(logits(r, :))[labels[r]]), in plain double math:
/// log(sum_j exp(x_j)) - x_label, with the row maximum shifted out so exp never overflows.
template <class Idx, class T>
double log_softmax_nll(const Tensor<T>& logits, const std::vector<std::int32_t>& labels,
                       const std::vector<Idx>& rows) {
  if (rows.empty()) return 0;
  double total = 0;
  for (const Idx r : rows) {
    double m = -INFINITY;
    for (std::int64_t j = 0; j < logits.cols(); ++j) m = std::max(m, double(logits(r, j)));
    double s = 0;
    for (std::int64_t j = 0; j < logits.cols(); ++j) s += std::exp(double(logits(r, j)) - m);
    total += m + std::log(s) - double(logits(r, labels[r]));
  }
  return total / static_cast<double>(rows.size());
}

/// Its gradient: (softmax(row) - onehot(label)) / |rows| on the selected rows, 0 elsewhere.
template <class Idx, class T>
std::vector<T> log_softmax_nll_grad(const Tensor<T>& logits,
                                    const std::vector<std::int32_t>& labels,
                                    const std::vector<Idx>& rows) {
  const std::int64_t c = logits.cols();
  std::vector<T> grad(static_cast<std::size_t>(logits.numel()));
  for (const Idx r : rows) {
    double m = -INFINITY;
    for (std::int64_t j = 0; j < c; ++j) m = std::max(m, double(logits(r, j)));
    double s = 0;
    for (std::int64_t j = 0; j < c; ++j) s += std::exp(double(logits(r, j)) - m);
    for (std::int64_t j = 0; j < c; ++j) {
      const double softmax = std::exp(double(logits(r, j)) - m) / s;
      const double target = j == labels[r] ? 1.0 : 0.0;
      grad[r * c + j] = static_cast<T>((softmax - target) / static_cast<double>(rows.size()));
    }
  }
  return grad;
}

/// How many of `rows` have their label at the first maximum of their logits.
template <class Idx, class T>
std::int64_t count_correct(const Tensor<T>& logits, const std::vector<std::int32_t>& labels,
                           const std::vector<Idx>& rows) {
  std::int64_t correct = 0;
  for (const Idx r : rows) {
    std::int64_t best = 0;
    for (std::int64_t j = 1; j < logits.cols(); ++j)
      if (logits(r, j) > logits(r, best)) best = j;
    correct += best == labels[r] ? 1 : 0;
  }
  return correct;
}

/// out(i, :) = x(idx[i], :).
template <class Idx, class T>
std::vector<T> gather_rows(const Tensor<T>& x, const std::vector<Idx>& idx) {
  std::vector<T> out;
  for (const Idx i : idx)
    for (std::int64_t j = 0; j < x.cols(); ++j) out.push_back(x(i, j));
  return out;
}

/// out(idx[i], :) += x(i, :), starting from out's contents.
template <class Idx, class T>
std::vector<T> scatter_add_rows(const Tensor<T>& x, const std::vector<Idx>& idx,
                                const Tensor<T>& out) {
  std::vector<double> acc(out.data(), out.data() + out.numel());
  for (std::size_t i = 0; i < idx.size(); ++i)
    for (std::int64_t j = 0; j < x.cols(); ++j)
      acc[idx[i] * x.cols() + j] += double(x(static_cast<std::int64_t>(i), j));
  return {acc.begin(), acc.end()};
}

/// One step of PyTorch's Adam (L2 weight decay added to the gradient), in double, in place.
void adam_step(const kernels::AdamConfig& config, std::int64_t step, std::vector<double>& param,
               const std::vector<double>& grad, std::vector<double>& m, std::vector<double>& v);

/// One step of PyTorch's SGD (dampening 0, no Nesterov), in double, in place. `buf` is ignored
/// without momentum; with momentum it starts empty and is set to the gradient on the first step.
void sgd_step(const kernels::SgdConfig& config, std::vector<double>& param,
              const std::vector<double>& grad, std::vector<double>& buf);

/// Central differences (f(x + eps e_i) - f(x - eps e_i)) / (2 eps) for every i.
std::vector<double> finite_difference_gradient(
    const std::function<double(const std::vector<double>&)>& f, std::vector<double> x, double eps);

/// <a, b> in double.
template <class T, class U>
double dot(const std::vector<T>& a, const std::vector<U>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

}  // namespace halo::ref
