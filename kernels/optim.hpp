#pragma once
// Optimizer updates on one parameter tensor (flattened). Instantiated for T in {float, double}.

#include <cstdint>

#include <halo/kernels/resources.hpp>
#include <halo/kernels/views.hpp>

namespace halo::kernels {

struct AdamConfig {
  double lr = 0.01;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // L2, added to the gradient (PyTorch Adam, not AdamW)
};

struct SgdConfig {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
};

/// One Adam step (PyTorch semantics) for step number `step` >= 1. m and v are the moment
/// buffers (zero before the first step). All spans have one size, on res's device.
template <class T>
void adam_step(const Resources& res, const AdamConfig& config, std::int64_t step, Span<T> param,
               ConstSpan<T> grad, Span<T> m, Span<T> v);

/// One SparseAdam step (PyTorch's torch.optim.SparseAdam) for step number `step` >= 1 of the
/// table `param` (n x d): only the rows listed in `rows` (distinct, in [0, n)) change, each
/// from its gradient row grad(k, :) for rows[k]; their moments m and v (n x d, zero before the
/// first step) are updated as Adam's and the row moves by lr sqrt(1 - beta2^t) / (1 - beta1^t)
/// * m / (sqrt(v) + eps) with t the table's step count (PyTorch's placement of eps, on the
/// uncorrected root: not dense Adam's); the other rows and their moments are untouched. No
/// weight decay (SparseAdam has none). Instantiated
/// for Idx in {int32_t, int64_t} and T in {float, double}.
template <class Idx, class T>
void sparse_adam_step(const Resources& res, const AdamConfig& config, std::int64_t step,
                      MatrixView<T> param, ConstMatrixView<T> grad, Span<const Idx> rows,
                      MatrixView<T> m, MatrixView<T> v);

/// One SGD step (PyTorch semantics). `momentum_buf` is empty when config.momentum == 0, else the
/// size of param and zero before the first step.
template <class T>
void sgd_step(const Resources& res, const SgdConfig& config, Span<T> param, ConstSpan<T> grad,
              Span<T> momentum_buf);

}  // namespace halo::kernels
