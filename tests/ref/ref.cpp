#include "ref/ref.hpp"

#include <halo/kernels/rng.hpp>

namespace halo::ref {

bool dropout_keep(const DropoutKey& key, float p, std::int64_t r, std::int64_t c,
                  std::int64_t cols) {
  namespace rng = kernels::rng;
  const std::uint64_t stream = rng::stream_id(rng::kStreamDropout, key.epoch, key.layer);
  const std::int64_t row = key.row_ids.size > 0 ? key.row_ids[r] : key.row_offset + r;
  const auto index = static_cast<std::uint64_t>(row * cols + c);
  return rng::uniform(key.seed, stream, index) >= p;
}

// Written in the order of torch.optim.Adam's single-tensor loop.
void adam_step(const kernels::AdamConfig& config, std::int64_t step, std::vector<double>& param,
               const std::vector<double>& grad, std::vector<double>& m, std::vector<double>& v) {
  const double bias_correction1 = 1 - std::pow(config.beta1, static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(config.beta2, static_cast<double>(step));
  const double step_size = config.lr / bias_correction1;
  for (std::size_t i = 0; i < param.size(); ++i) {
    const double g = grad[i] + config.weight_decay * param[i];
    m[i] += (g - m[i]) * (1 - config.beta1);
    v[i] = v[i] * config.beta2 + (1 - config.beta2) * g * g;
    const double denom = std::sqrt(v[i]) / std::sqrt(bias_correction2) + config.eps;
    param[i] -= step_size * m[i] / denom;
  }
}

// Written in the order of torch.optim.SGD: the momentum buffer is created as a copy of the
// first step's gradient.
void sgd_step(const kernels::SgdConfig& config, std::vector<double>& param,
              const std::vector<double>& grad, std::vector<double>& buf) {
  std::vector<double> d(param.size());
  for (std::size_t i = 0; i < param.size(); ++i) d[i] = grad[i] + config.weight_decay * param[i];
  if (config.momentum != 0) {
    if (buf.empty()) {
      buf = d;
    } else {
      for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = config.momentum * buf[i] + d[i];
    }
    d = buf;
  }
  for (std::size_t i = 0; i < param.size(); ++i) param[i] -= config.lr * d[i];
}

std::vector<double> finite_difference_gradient(
    const std::function<double(const std::vector<double>&)>& f, std::vector<double> x, double eps) {
  std::vector<double> grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + eps;
    const double up = f(x);
    x[i] = saved - eps;
    const double down = f(x);
    x[i] = saved;
    grad[i] = (up - down) / (2 * eps);
  }
  return grad;
}

}  // namespace halo::ref
