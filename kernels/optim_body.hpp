#pragma once
// Single-source bodies of the optimizer updates.

#include <cstdint>

#include <halo/kernels/hd.hpp>
#include <halo/kernels/hd_math.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels::detail {

/// PyTorch's Adam (not AdamW): g = grad + wd * p; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
/// p -= lr * (m / c1) / (sqrt(v / c2) + eps), with c1 = 1 - b1^t, c2 = 1 - b2^t from the host.
template <class T>
struct AdamBody {
  T lr, beta1, beta2, eps, weight_decay, c1, c2;
  Span<T> param;
  Span<const T> grad;
  Span<T> m;
  Span<T> v;
  HALO_HD void operator()(std::int64_t i) const {
    const T g = grad[i] + weight_decay * param[i];
    m[i] = beta1 * m[i] + (T(1) - beta1) * g;
    v[i] = beta2 * v[i] + (T(1) - beta2) * g * g;
    param[i] -= lr * (m[i] / c1) / (hd::sqrt(v[i] / c2) + eps);
  }
};

/// PyTorch's SparseAdam on the rows of a table that a step touched: element (k, c) updates
/// param(rows[k], c), m and v at the same place, from grad(k, c); no weight decay. ε sits
/// where PyTorch's rule puts it, on the uncorrected root: p -= step_size * m / (sqrt(v) + eps)
/// with step_size = lr * sqrt(1 - beta2^t) / (1 - beta1^t) (dense Adam adds ε to the corrected
/// root instead). `rows` holds distinct ids, so no two threads write one element.
template <class Idx, class T>
struct SparseAdamBody {
  T step_size, beta1, beta2, eps;
  MatrixView<T> param;
  MatrixView<const T> grad;
  Span<const Idx> rows;
  MatrixView<T> m;
  MatrixView<T> v;
  /// One element's step: the rule both layouts apply.
  HALO_HD static void update(T step_size, T beta1, T beta2, T eps, T g, T& m, T& v, T& p) {
    m = beta1 * m + (T(1) - beta1) * g;
    v = beta2 * v + (T(1) - beta2) * g * g;
    p -= step_size * m / (hd::sqrt(v) + eps);
  }
  HALO_HD void operator()(std::int64_t i) const {
    const std::int64_t k = i / grad.cols;
    const std::int64_t c = i % grad.cols;
    const auto r = static_cast<std::int64_t>(rows[k]);
    update(step_size, beta1, beta2, eps, grad(k, c), m(r, c), v(r, c), param(r, c));
  }
};

/// SparseAdamBody's CPU layout: one index = one row of the gradient (no division per element,
/// the columns vectorised), the same arithmetic per element.
template <class Idx, class T>
struct SparseAdamRowsBody {
  SparseAdamBody<Idx, T> p;
  HALO_HD void operator()(std::int64_t k) const {
    // Locals, not members, in the loop: stores through the rows could alias the members.
    const T step_size = p.step_size, beta1 = p.beta1, beta2 = p.beta2, eps = p.eps;
    const std::int64_t cols = p.grad.cols;
    const auto r = static_cast<std::int64_t>(p.rows[k]);
    const T* g = p.grad.row(k);
    T* m = p.m.row(r);
    T* v = p.v.row(r);
    T* w = p.param.row(r);
    for (std::int64_t c = 0; c < cols; ++c)
      SparseAdamBody<Idx, T>::update(step_size, beta1, beta2, eps, g[c], m[c], v[c], w[c]);
  }
};

/// PyTorch's SGD: g = grad + wd * p; with momentum buf = mu * buf + g (buf starts at 0, which
/// equals PyTorch's buf = g on the first step with dampening 0); p -= lr * buf (or lr * g).
template <class T>
struct SgdBody {
  T lr, momentum, weight_decay;
  Span<T> param;
  Span<const T> grad;
  Span<T> buf;  // empty without momentum
  HALO_HD void operator()(std::int64_t i) const {
    T g = grad[i] + weight_decay * param[i];
    if (buf.size != 0) {
      buf[i] = momentum * buf[i] + g;
      g = buf[i];
    }
    param[i] -= lr * g;
  }
};

}  // namespace halo::kernels::detail
