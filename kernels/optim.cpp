#include <cmath>

#include <halo/kernels/exec.hpp>
#include <halo/kernels/optim.hpp>
#include <halo/kernels/optim_body.hpp>

namespace halo::kernels {

template <class T>
void adam_step(const Resources& res, const AdamConfig& c, std::int64_t step, Span<T> param,
               ConstSpan<T> grad, Span<T> m, Span<T> v) {
  HALO_EXPECTS(step >= 1, "adam_step: step numbers start at 1");
  HALO_EXPECTS(grad.size == param.size && m.size == param.size && v.size == param.size,
               "adam_step: size mismatch");
  const T c1 = static_cast<T>(1.0 - std::pow(c.beta1, static_cast<double>(step)));
  const T c2 = static_cast<T>(1.0 - std::pow(c.beta2, static_cast<double>(step)));
  launch(res, param.size,
         detail::AdamBody<T>{static_cast<T>(c.lr), static_cast<T>(c.beta1), static_cast<T>(c.beta2),
                             static_cast<T>(c.eps), static_cast<T>(c.weight_decay), c1, c2, param,
                             grad, m, v});
}

template <class T>
void sgd_step(const Resources& res, const SgdConfig& c, Span<T> param, ConstSpan<T> grad,
              Span<T> momentum_buf) {
  HALO_EXPECTS(grad.size == param.size, "sgd_step: size mismatch");
  HALO_EXPECTS(c.momentum == 0.0 ? momentum_buf.size == 0 : momentum_buf.size == param.size,
               "sgd_step: momentum buffer must be empty without momentum, else param-sized");
  launch(res, param.size,
         detail::SgdBody<T>{static_cast<T>(c.lr), static_cast<T>(c.momentum),
                            static_cast<T>(c.weight_decay), param, grad, momentum_buf});
}

template void adam_step<float>(const Resources&, const AdamConfig&, std::int64_t, Span<float>,
                               Span<const float>, Span<float>, Span<float>);
template void adam_step<double>(const Resources&, const AdamConfig&, std::int64_t, Span<double>,
                                Span<const double>, Span<double>, Span<double>);
template void sgd_step<float>(const Resources&, const SgdConfig&, Span<float>, Span<const float>,
                              Span<float>);
template void sgd_step<double>(const Resources&, const SgdConfig&, Span<double>, Span<const double>,
                               Span<double>);

}  // namespace halo::kernels
