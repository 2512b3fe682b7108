#include <cmath>
#include <numeric>

#include <halo/kernels/gather.hpp>
#include <halo/kernels/rng.hpp>
#include <halo/nn/detail/products.hpp>
#include <halo/nn/embedding.hpp>

namespace halo::nn {

using kernels::NodeId;
using kernels::Tensor;

template <class T>
SparseEmbedding<T>::SparseEmbedding(const kernels::Resources& res, std::string name,
                                    std::int64_t num_rows, std::int64_t dim, std::uint64_t seed,
                                    std::uint64_t param_id)
    : m_name(std::move(name)), m_table(res, num_rows, dim) {
  HALO_EXPECTS(num_rows >= 0 && dim >= 1, "embedding: sizes must be >= 0 rows and >= 1 column");
  if (num_rows > 0) detail::glorot_uniform(res, m_table, seed, param_id);
}

template <class T>
SparseEmbedding<T>::SparseEmbedding(const kernels::Resources& res, std::string name,
                                    std::span<const NodeId> rows, std::int64_t table_rows,
                                    std::int64_t dim, std::uint64_t seed, std::uint64_t param_id)
    : m_name(std::move(name)) {
  HALO_EXPECTS(table_rows >= 0 && dim >= 1, "embedding: sizes must be >= 0 rows and >= 1 column");
  // detail::glorot_uniform's draws for element (r, c) of the whole table: index r * dim + c.
  const double a = std::sqrt(6.0 / static_cast<double>(table_rows + dim));
  const auto stream = kernels::rng::stream_id(kernels::rng::kStreamInit, param_id);
  std::vector<T> host;
  host.reserve(rows.size() * static_cast<std::size_t>(dim));
  for (const NodeId r : rows) {
    HALO_EXPECTS(r >= 0 && r < table_rows, "embedding: a row outside the table");
    for (std::int64_t c = 0; c < dim; ++c)
      host.push_back(
          static_cast<T>((2.0 * kernels::rng::uniform_double(
                                    seed, stream, static_cast<std::uint64_t>(r * dim + c)) -
                          1.0) *
                         a));
  }
  m_table = Tensor<T>::from_host(res, host, static_cast<std::int64_t>(rows.size()), dim);
}

template <class T>
void SparseEmbedding<T>::lookup(const kernels::Resources& res, kernels::Span<const NodeId> ids,
                                Tensor<T>& out) const {
  if (ids.size == 0) {
    kernels::ensure_shape(res, out, m_table.rows(), m_table.cols());
    kernels::copy_async(res, out, m_table);
    return;
  }
  kernels::ensure_shape(res, out, ids.size, m_table.cols());
  kernels::gather_rows(res, m_table.view(), ids, out.view());
}

template <class T>
void SparseEmbedding<T>::set_gradient(const kernels::Resources& res,
                                      kernels::Span<const NodeId> ids, const Tensor<T>& grad) {
  const std::int64_t n = ids.size == 0 ? m_table.rows() : ids.size;
  HALO_EXPECTS(grad.rows() == n && grad.cols() == m_table.cols(),
               "embedding '" + m_name + "': gradient shape mismatch");
  kernels::ensure_shape(res, m_grad, n, m_table.cols());
  kernels::copy_async(res, m_grad, grad);
  if (ids.size == 0) {
    if (!m_all_rows || m_rows.rows() != n) {  // built once, reused by every full-table step
      std::vector<NodeId> all(static_cast<std::size_t>(n));
      std::iota(all.begin(), all.end(), NodeId{0});
      m_rows = Tensor<NodeId>::from_host(res, all);
      m_all_rows = true;
    }
  } else {
    kernels::ensure_shape(res, m_rows, n, 1);
    m_all_rows = false;
    kernels::copy_bytes_async(res, m_rows.data(), res.device(), ids.data, res.device(),
                              static_cast<std::size_t>(n) * sizeof(NodeId));
  }
  m_pending = true;
}

template <class T>
void SparseEmbedding<T>::set_no_gradient(const kernels::Resources& res) {
  kernels::ensure_shape(res, m_grad, 0, m_table.cols());
  m_all_rows = false;
  m_pending = true;
}

template <class T>
SparseAdam<T>::SparseAdam(const kernels::Resources& res, std::vector<SparseEmbedding<T>*> tables,
                          const kernels::AdamConfig& config)
    : m_tables(std::move(tables)), m_config(config) {
  HALO_EXPECTS(config.lr > 0, "sparse adam: learning rate must be > 0");
  m_config.weight_decay = 0;
  for (auto* t : m_tables) {
    m_m.push_back(Tensor<T>::zeros(res, t->num_rows(), t->dim()));
    m_v.push_back(Tensor<T>::zeros(res, t->num_rows(), t->dim()));
  }
  m_steps.assign(m_tables.size(), 0);
}

template <class T>
void SparseAdam<T>::step(const kernels::Resources& res) {
  for (std::size_t i = 0; i < m_tables.size(); ++i) {
    SparseEmbedding<T>& t = *m_tables[i];
    if (!t.m_pending) continue;
    t.m_pending = false;
    ++m_steps[i];
    if (t.m_grad.rows() == 0) continue;
    kernels::sparse_adam_step(
        res, m_config, m_steps[i], t.m_table.view(), kernels::ConstMatrixView<T>(t.m_grad.view()),
        kernels::Span<const NodeId>(t.m_rows.span()), m_m[i].view(), m_v[i].view());
  }
}

template class SparseEmbedding<float>;
template class SparseEmbedding<double>;
template class SparseAdam<float>;
template class SparseAdam<double>;

}  // namespace halo::nn
