#pragma once
// The two products every layer with weights needs, for dense and for sparse inputs.

#include <variant>

#include <halo/kernels/features.hpp>
#include <halo/kernels/resources.hpp>
#include <halo/kernels/tensor.hpp>

namespace halo::nn::detail {

/// A module's dense output `out`, made a tensor and (re)shaped to rows x cols (allocating only
/// when it grows).
template <class T>
kernels::Tensor<T>& dense_output(const kernels::Resources& res, kernels::FeatureMatrix<T>& out,
                                 std::int64_t rows, std::int64_t cols) {
  if (!std::holds_alternative<kernels::Tensor<T>>(out)) out = kernels::Tensor<T>();
  auto& t = std::get<kernels::Tensor<T>>(out);
  kernels::ensure_shape(res, t, rows, cols);
  return t;
}

/// out = x w (out overwritten). x dense (gemm) or sparse (CSR x dense). With rows >= 0 only the
/// first `rows` rows of x take part (the destinations of a block, see SAGEConv).
template <class T>
void multiply(const kernels::Resources& res, const kernels::FeatureMatrix<T>& x,
              const kernels::Tensor<T>& w, kernels::Tensor<T>& out, std::int64_t rows = -1);

/// grad_w = x^T dy (overwritten), the weight gradient of `multiply` (same `rows`).
template <class T>
void multiply_transposed(const kernels::Resources& res, const kernels::FeatureMatrix<T>& x,
                         const kernels::Tensor<T>& dy, kernels::Tensor<T>& grad_w,
                         std::int64_t rows = -1);

/// The dense alternative of x, or a LogicError naming `layer` when x is sparse.
template <class T>
const kernels::Tensor<T>& dense(const kernels::FeatureMatrix<T>& x, const char* layer);

/// Glorot/Xavier uniform init U(-a, a), a = sqrt(6 / (rows + cols)), keyed by (seed, param_id).
template <class T>
void glorot_uniform(const kernels::Resources& res, kernels::Tensor<T>& w, std::uint64_t seed,
                    std::uint64_t param_id);

}  // namespace halo::nn::detail
