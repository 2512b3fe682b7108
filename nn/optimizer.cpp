#include <halo/nn/optimizer.hpp>

namespace halo::nn {

using kernels::Tensor;

template <class T>
Adam<T>::Adam(const kernels::Resources& res, std::vector<Parameter<T>*> params,
              const kernels::AdamConfig& config)
    : m_params(std::move(params)), m_config(config) {
  HALO_EXPECTS(config.lr > 0, "adam: learning rate must be > 0");
  HALO_EXPECTS(config.weight_decay >= 0, "adam: weight decay must be >= 0");
  for (auto* p : m_params) {
    m_m.push_back(Tensor<T>::zeros(res, p->value.rows(), p->value.cols()));
    m_v.push_back(Tensor<T>::zeros(res, p->value.rows(), p->value.cols()));
  }
}

template <class T>
void Adam<T>::step(const kernels::Resources& res) {
  ++m_step;
  for (std::size_t i = 0; i < m_params.size(); ++i)
    kernels::adam_step(res, m_config, m_step, m_params[i]->value.span(),
                       kernels::Span<const T>(m_params[i]->grad.span()), m_m[i].span(),
                       m_v[i].span());
}

template <class T>
Sgd<T>::Sgd(const kernels::Resources& res, std::vector<Parameter<T>*> params,
            const kernels::SgdConfig& config)
    : m_params(std::move(params)), m_config(config) {
  HALO_EXPECTS(config.lr > 0, "sgd: learning rate must be > 0");
  for (auto* p : m_params)
    m_momentum.push_back(config.momentum == 0.0
                             ? Tensor<T>()
                             : Tensor<T>::zeros(res, p->value.rows(), p->value.cols()));
}

template <class T>
void Sgd<T>::step(const kernels::Resources& res) {
  for (std::size_t i = 0; i < m_params.size(); ++i)
    kernels::sgd_step(res, m_config, m_params[i]->value.span(),
                      kernels::Span<const T>(m_params[i]->grad.span()), m_momentum[i].span());
}

template class Adam<float>;
template class Adam<double>;
template class Sgd<float>;
template class Sgd<double>;

}  // namespace halo::nn
