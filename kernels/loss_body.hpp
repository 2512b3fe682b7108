#pragma once
// Single-source bodies of the fused log-softmax + negative log-likelihood loss.

#include <cstdint>

#include <halo/kernels/hd.hpp>
#include <halo/kernels/hd_math.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels::detail {

/// Stable log-sum-exp of one row: m + log(sum exp(x - m)) with m the row's maximum.
template <class T>
HALO_HD T row_logsumexp(const T* x, std::int64_t n) {
  T m = x[0];
  for (std::int64_t j = 1; j < n; ++j) m = hd::max(m, x[j]);
  T s = T(0);
  for (std::int64_t j = 0; j < n; ++j) s += hd::exp(x[j] - m);
  return m + hd::log(s);
}

/// partial[b] = the sum over rows[b * rows_per_block .. (b + 1) * rows_per_block) of
/// -log_softmax(logits(r, :))[labels[r]]: a block's share of the loss.
template <class Idx, class T>
struct NllPartialBody {
  MatrixView<const T> logits;
  Span<const std::int32_t> labels;
  Span<const Idx> rows;
  std::int64_t rows_per_block;
  T* partial;
  HALO_HD void operator()(std::int64_t b) const {
    const std::int64_t end =
        (b + 1) * rows_per_block < rows.size ? (b + 1) * rows_per_block : rows.size;
    T acc = T(0);
    for (std::int64_t i = b * rows_per_block; i < end; ++i) {
      const T* x = logits.row(rows[i]);
      acc += row_logsumexp(x, logits.cols) - x[labels[rows[i]]];
    }
    partial[b] = acc;
  }
};

/// dlogits(rows[i], :) = (softmax(logits(rows[i], :)) - onehot(label)) * scale. Rows not
/// selected keep the zeros written beforehand; `rows` holds distinct rows.
template <class Idx, class T>
struct NllBackwardBody {
  MatrixView<const T> logits;
  Span<const std::int32_t> labels;
  Span<const Idx> rows;
  T scale;
  MatrixView<T> dlogits;
  HALO_HD void operator()(std::int64_t i) const {
    const std::int64_t r = rows[i];
    const T* x = logits.row(r);
    const T lse = row_logsumexp(x, logits.cols);
    T* d = dlogits.row(r);
    for (std::int64_t j = 0; j < logits.cols; ++j) d[j] = hd::exp(x[j] - lse) * scale;
    d[labels[r]] -= scale;
  }
};

/// correct[i] = 1 if the first maximum of logits(rows[i], :) is at the row's label, else 0.
/// Counted in double: exact far beyond float's 2^24.
template <class Idx, class T>
struct CorrectBody {
  MatrixView<const T> logits;
  Span<const std::int32_t> labels;
  Span<const Idx> rows;
  Span<double> correct;
  HALO_HD void operator()(std::int64_t i) const {
    const T* x = logits.row(rows[i]);
    std::int64_t best = 0;
    for (std::int64_t j = 1; j < logits.cols; ++j)
      if (x[j] > x[best]) best = j;
    correct[i] = best == labels[rows[i]] ? 1.0 : 0.0;
  }
};

}  // namespace halo::kernels::detail
