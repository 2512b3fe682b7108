#pragma once
// Optimizers over a model's parameter list; they own the per-parameter state.

#include <vector>

#include <halo/kernels/optim.hpp>
#include <halo/nn/module.hpp>

namespace halo::nn {

/// Adam with PyTorch semantics (L2 weight decay added to the gradient). Keeps pointers to the
/// parameters: they must outlive the optimizer and keep their shapes.
template <class T>
class Adam {
 public:
  Adam(const kernels::Resources& res, std::vector<Parameter<T>*> params,
       const kernels::AdamConfig& config);
  /// One update of every parameter from its current gradient.
  void step(const kernels::Resources& res);
  std::int64_t steps() const { return m_step; }
  /// The state a checkpoint saves and restores: parameter i's first and second moments (same
  /// shape as the parameter) and the step count of the bias correction.
  kernels::Tensor<T>& first_moment(std::size_t i) { return m_m[i]; }
  kernels::Tensor<T>& second_moment(std::size_t i) { return m_v[i]; }
  void set_steps(std::int64_t steps) { m_step = steps; }

 private:
  std::vector<Parameter<T>*> m_params;
  kernels::AdamConfig m_config;
  std::vector<kernels::Tensor<T>> m_m, m_v;
  std::int64_t m_step = 0;
};

/// SGD with optional momentum (PyTorch semantics).
template <class T>
class Sgd {
 public:
  Sgd(const kernels::Resources& res, std::vector<Parameter<T>*> params,
      const kernels::SgdConfig& config);
  void step(const kernels::Resources& res);

 private:
  std::vector<Parameter<T>*> m_params;
  kernels::SgdConfig m_config;
  std::vector<kernels::Tensor<T>> m_momentum;
};

}  // namespace halo::nn
