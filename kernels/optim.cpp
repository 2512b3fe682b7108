#include <cmath>

#include <halo/kernels/detail/instantiate.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/optim.hpp>
#include <halo/kernels/optim_body.hpp>
#include <halo/kernels/profile.hpp>

namespace halo::kernels {

template <class T>
void adam_step(const Resources& res, const AdamConfig& c, std::int64_t step, Span<T> param,
               ConstSpan<T> grad, Span<T> m, Span<T> v) {
  HALO_EXPECTS(step >= 1, "adam_step: step numbers start at 1");
  HALO_EXPECTS(grad.size == param.size && m.size == param.size && v.size == param.size,
               "adam_step: size mismatch");
  // Reads the parameter, its gradient and both moments; writes the parameter and the moments.
  const OpTimer timer(res, Op::Optimizer, 7.0 * static_cast<double>(param.size) * sizeof(T),
                      12.0 * static_cast<double>(param.size));
  const T c1 = static_cast<T>(1.0 - std::pow(c.beta1, static_cast<double>(step)));
  const T c2 = static_cast<T>(1.0 - std::pow(c.beta2, static_cast<double>(step)));
  launch(res, param.size,
         detail::AdamBody<T>{static_cast<T>(c.lr), static_cast<T>(c.beta1), static_cast<T>(c.beta2),
                             static_cast<T>(c.eps), static_cast<T>(c.weight_decay), c1, c2, param,
                             grad, m, v},
         param.size);
}

template <class Idx, class T>
void sparse_adam_step(const Resources& res, const AdamConfig& c, std::int64_t step,
                      MatrixView<T> param, ConstMatrixView<T> grad, Span<const Idx> rows,
                      MatrixView<T> m, MatrixView<T> v) {
  HALO_EXPECTS(step >= 1, "sparse_adam_step: step numbers start at 1");
  HALO_EXPECTS(grad.rows == rows.size && grad.cols == param.cols && m.rows == param.rows &&
                   m.cols == param.cols && v.rows == param.rows && v.cols == param.cols,
               "sparse_adam_step: shape mismatch");
  HALO_EXPECTS(c.weight_decay == 0.0, "sparse_adam_step: SparseAdam has no weight decay");
  const double cells = static_cast<double>(grad.rows) * static_cast<double>(grad.cols);
  const OpTimer timer(res, Op::Optimizer, 7.0 * cells * sizeof(T), 12.0 * cells);
  const double c1 = 1.0 - std::pow(c.beta1, static_cast<double>(step));
  const double c2 = 1.0 - std::pow(c.beta2, static_cast<double>(step));
  const detail::SparseAdamBody<Idx, T> body{static_cast<T>(c.lr * std::sqrt(c2) / c1),
                                            static_cast<T>(c.beta1),
                                            static_cast<T>(c.beta2),
                                            static_cast<T>(c.eps),
                                            param,
                                            grad,
                                            rows,
                                            m,
                                            v};
  launch_by_device(res, grad.rows, detail::SparseAdamRowsBody<Idx, T>{body}, grad.rows * grad.cols,
                   body, grad.rows * grad.cols);
}

template <class T>
void sgd_step(const Resources& res, const SgdConfig& c, Span<T> param, ConstSpan<T> grad,
              Span<T> momentum_buf) {
  HALO_EXPECTS(grad.size == param.size, "sgd_step: size mismatch");
  HALO_EXPECTS(c.momentum == 0.0 ? momentum_buf.size == 0 : momentum_buf.size == param.size,
               "sgd_step: momentum buffer must be empty without momentum, else param-sized");
  const OpTimer timer(res, Op::Optimizer,
                      static_cast<double>(param.size) * sizeof(T) * (momentum_buf.size > 0 ? 5 : 3),
                      4.0 * static_cast<double>(param.size));
  launch(res, param.size,
         detail::SgdBody<T>{static_cast<T>(c.lr), static_cast<T>(c.momentum),
                            static_cast<T>(c.weight_decay), param, grad, momentum_buf},
         param.size);
}

template void adam_step<float>(const Resources&, const AdamConfig&, std::int64_t, Span<float>,
                               Span<const float>, Span<float>, Span<float>);
template void adam_step<double>(const Resources&, const AdamConfig&, std::int64_t, Span<double>,
                                Span<const double>, Span<double>, Span<double>);
#define HALO_INSTANTIATE(Idx, T)                                                             \
  template void sparse_adam_step<Idx, T>(const Resources&, const AdamConfig&, std::int64_t,  \
                                         MatrixView<T>, ConstMatrixView<T>, Span<const Idx>, \
                                         MatrixView<T>, MatrixView<T>);
HALO_FOR_INDEX_AND_VALUE_TYPES(HALO_INSTANTIATE)
#undef HALO_INSTANTIATE
template void sgd_step<float>(const Resources&, const SgdConfig&, Span<float>, Span<const float>,
                              Span<float>);
template void sgd_step<double>(const Resources&, const SgdConfig&, Span<double>, Span<const double>,
                               Span<double>);

}  // namespace halo::kernels
