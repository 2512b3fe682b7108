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

/// One SGD step (PyTorch semantics). `momentum_buf` is empty when config.momentum == 0, else the
/// size of param and zero before the first step.
template <class T>
void sgd_step(const Resources& res, const SgdConfig& config, Span<T> param, ConstSpan<T> grad,
              Span<T> momentum_buf);

}  // namespace halo::kernels
