#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/reduce.hpp>
#include <halo/nn/detail/products.hpp>
#include <halo/nn/layers.hpp>

namespace halo::nn {

using kernels::Tensor;
using kernels::Trans;

namespace {

template <class T>
Parameter<T> weight(const kernels::Resources& res, const char* name, std::int64_t in,
                    std::int64_t out, std::uint64_t seed, std::uint64_t param_id) {
  HALO_EXPECTS(in >= 1 && out >= 1, std::string(name) + ": layer sizes must be >= 1");
  Parameter<T> p{name, Tensor<T>(res, in, out), Tensor<T>::zeros(res, in, out)};
  detail::glorot_uniform(res, p.value, seed, param_id);
  return p;
}

template <class T>
Parameter<T> bias(const kernels::Resources& res, std::int64_t out) {
  return {"bias", Tensor<T>::zeros(res, out, 1), Tensor<T>::zeros(res, out, 1)};
}

template <class T>
void bias_forward(const kernels::Resources& res, Tensor<T>& y, const Parameter<T>& b) {
  kernels::add_bias(res, y.view(), b.value.span());
}

template <class T>
void bias_backward(const kernels::Resources& res, const Tensor<T>& dy, Parameter<T>& b) {
  kernels::column_sum(res, dy.view(), b.grad.span());
}

template <class T>
const Features<T>& require_input(const Features<T>* input, const char* layer) {
  HALO_EXPECTS(input != nullptr, std::string(layer) + ": backward called before forward");
  return *input;
}

}  // namespace

// ---- Linear ----------------------------------------------------------------------------------

template <class T>
Linear<T>::Linear(const kernels::Resources& res, std::int64_t in, std::int64_t out,
                  std::uint64_t seed, std::uint64_t param_id)
    : m_weight(weight<T>(res, "weight", in, out, seed, param_id)), m_bias(bias<T>(res, out)) {}

template <class T>
const Features<T>& Linear<T>::forward(const Context& ctx, Adjacency<T>, const Features<T>& x) {
  const auto& res = *ctx.res;
  HALO_EXPECTS(kernels::num_cols(x) == m_weight.value.rows(), "linear: input width mismatch");
  m_input = &x;
  Tensor<T>& y = detail::dense_output(res, m_output, kernels::num_rows(x), m_weight.value.cols());
  detail::multiply(res, x, m_weight.value, y);
  bias_forward(res, y, m_bias);
  return m_output;
}

template <class T>
const Tensor<T>& Linear<T>::backward(const Context& ctx, Adjacency<T>, const Tensor<T>& dy,
                                     bool need_input_grad) {
  const auto& res = *ctx.res;
  const Features<T>& x = require_input(m_input, "linear");
  detail::multiply_transposed(res, x, dy, m_weight.grad);
  bias_backward(res, dy, m_bias);
  if (need_input_grad) {
    kernels::ensure_shape(res, m_dx, dy.rows(), m_weight.value.rows());
    kernels::gemm(res, Trans::No, Trans::Yes, T(1), dy.view(), m_weight.value.view(), T(0),
                  m_dx.view());
  }
  return m_dx;
}

// ---- GCNConv ---------------------------------------------------------------------------------

template <class T>
GCNConv<T>::GCNConv(const kernels::Resources& res, std::int64_t in, std::int64_t out,
                    std::uint64_t seed, std::uint64_t param_id)
    : m_weight(weight<T>(res, "weight", in, out, seed, param_id)), m_bias(bias<T>(res, out)) {}

template <class T>
const Features<T>& GCNConv<T>::forward(const Context& ctx, Adjacency<T> graph,
                                       const Features<T>& x) {
  const auto& res = *ctx.res;
  m_input = &x;
  Tensor<T>& y = detail::dense_output(res, m_output, graph.num_rows, m_weight.value.cols());
  m_agg.forward(res, graph, x, m_weight.value, y, /*accumulate=*/false);
  bias_forward(res, y, m_bias);
  return m_output;
}

template <class T>
const Tensor<T>& GCNConv<T>::backward(const Context& ctx, Adjacency<T> graph, const Tensor<T>& dy,
                                      bool need_input_grad) {
  const auto& res = *ctx.res;
  const Features<T>& x = require_input(m_input, "gcn_conv");
  if (need_input_grad) kernels::ensure_shape(res, m_dx, graph.num_cols, m_weight.value.rows());
  m_agg.backward(res, graph, x, m_weight.value, dy, m_weight.grad, m_dx, need_input_grad,
                 /*accumulate_dx=*/false);
  bias_backward(res, dy, m_bias);
  return m_dx;
}

// ---- SAGEConv --------------------------------------------------------------------------------

template <class T>
SAGEConv<T>::SAGEConv(const kernels::Resources& res, std::int64_t in, std::int64_t out,
                      std::uint64_t seed, std::uint64_t param_id)
    : m_weight_root(weight<T>(res, "weight_root", in, out, seed, param_id)),
      m_weight_neigh(weight<T>(res, "weight_neigh", in, out, seed, param_id + 1)),
      m_bias(bias<T>(res, out)) {}

template <class T>
const Features<T>& SAGEConv<T>::forward(const Context& ctx, Adjacency<T> graph,
                                        const Features<T>& x) {
  const auto& res = *ctx.res;
  // The root term reads row v of x for destination v: destinations are the first rows of x
  // (all of them on the full graph; the first num_rows sources of a block).
  HALO_EXPECTS(kernels::num_rows(x) == graph.num_cols && graph.num_rows <= graph.num_cols,
               "sage_conv: the input needs one row per source node, destinations first");
  m_input = &x;
  Tensor<T>& y = detail::dense_output(res, m_output, graph.num_rows, m_weight_root.value.cols());
  detail::multiply(res, x, m_weight_root.value, y, graph.num_rows);
  m_agg.forward(res, graph, x, m_weight_neigh.value, y, /*accumulate=*/true);
  bias_forward(res, y, m_bias);
  return m_output;
}

template <class T>
const Tensor<T>& SAGEConv<T>::backward(const Context& ctx, Adjacency<T> graph, const Tensor<T>& dy,
                                       bool need_input_grad) {
  const auto& res = *ctx.res;
  const Features<T>& x = require_input(m_input, "sage_conv");
  detail::multiply_transposed(res, x, dy, m_weight_root.grad, graph.num_rows);
  bias_backward(res, dy, m_bias);
  if (need_input_grad) {
    kernels::ensure_shape(res, m_dx, graph.num_cols, m_weight_root.value.rows());
    // Rows of destinations get the root term below; only the other sources start at zero.
    const std::int64_t width = m_dx.cols();
    kernels::fill(res,
                  kernels::Span<T>{m_dx.data() + graph.num_rows * width,
                                   (graph.num_cols - graph.num_rows) * width},
                  T(0));
    const kernels::MatrixView<T> dst_rows{m_dx.data(), graph.num_rows, width};
    kernels::gemm(res, Trans::No, Trans::Yes, T(1), dy.view(), m_weight_root.value.view(), T(0),
                  dst_rows);
  }
  m_agg.backward(res, graph, x, m_weight_neigh.value, dy, m_weight_neigh.grad, m_dx,
                 need_input_grad, /*accumulate_dx=*/true);
  return m_dx;
}

// ---- ReLU ------------------------------------------------------------------------------------

template <class T>
const Features<T>& ReLU<T>::forward(const Context& ctx, Adjacency<T>, const Features<T>& x) {
  const Tensor<T>& in = detail::dense(x, "relu");
  Tensor<T>& y = detail::dense_output(*ctx.res, m_output, in.rows(), in.cols());
  kernels::relu(*ctx.res, in.span(), y.span());
  return m_output;
}

template <class T>
const Tensor<T>& ReLU<T>::backward(const Context& ctx, Adjacency<T>, const Tensor<T>& dy,
                                   bool need_input_grad) {
  if (!need_input_grad) return m_dx;
  const Tensor<T>& y = std::get<Tensor<T>>(m_output);
  kernels::ensure_shape(*ctx.res, m_dx, dy.rows(), dy.cols());
  kernels::relu_backward(*ctx.res, y.span(), dy.span(), m_dx.span());
  return m_dx;
}

// ---- Dropout ---------------------------------------------------------------------------------

namespace {
/// The mask key of dropout `layer_id` on the rows `graph` (the next convolution's) sources.
template <class T>
kernels::DropoutKey dropout_key(const Context& ctx, std::uint64_t layer_id,
                                const Adjacency<T>& graph) {
  return {ctx.seed, ctx.epoch, layer_id, ctx.row_offset, graph.source_ids};
}
}  // namespace

template <class T>
Dropout<T>::Dropout(float p, std::uint64_t layer_id) : m_p(p), m_layer_id(layer_id) {
  HALO_EXPECTS(p >= 0.f && p < 1.f, "dropout: p must be in [0, 1)");
}

template <class T>
const Features<T>& Dropout<T>::forward(const Context& ctx, Adjacency<T> graph,
                                       const Features<T>& x) {
  const auto& res = *ctx.res;
  m_active = ctx.training && m_p > 0.f;
  if (!m_active) return x;
  if (const auto* sparse = std::get_if<kernels::CsrMatrix<std::int32_t, T>>(&x)) {
    if (!std::holds_alternative<kernels::CsrMatrix<std::int32_t, T>>(m_output))
      m_output = kernels::CsrMatrix<std::int32_t, T>();
    // Only the kept entries are stored: the products with it (the next layer's forward and its
    // weight gradient) do half the work at p = 0.5. Buffers are reused within their capacity.
    kernels::dropout_compact(res, dropout_key(ctx, m_layer_id, graph), m_p, sparse->view(),
                             std::get<kernels::CsrMatrix<std::int32_t, T>>(m_output), m_compact);
  } else {
    const Tensor<T>& in = std::get<Tensor<T>>(x);
    Tensor<T>& y = detail::dense_output(res, m_output, in.rows(), in.cols());
    kernels::dropout(res, dropout_key(ctx, m_layer_id, graph), m_p, in.view(), y.view());
  }
  return m_output;
}

template <class T>
const Tensor<T>& Dropout<T>::backward(const Context& ctx, Adjacency<T> graph, const Tensor<T>& dy,
                                      bool need_input_grad) {
  if (!need_input_grad) return m_dx;
  kernels::ensure_shape(*ctx.res, m_dx, dy.rows(), dy.cols());
  if (m_active) {
    kernels::dropout(*ctx.res, dropout_key(ctx, m_layer_id, graph), m_p, dy.view(), m_dx.view());
  } else {
    kernels::copy_async(*ctx.res, m_dx, dy);
  }
  return m_dx;
}

// ---- ReluDropout ---------------------------------------------------------------------------

template <class T>
ReluDropout<T>::ReluDropout(float p, std::uint64_t layer_id) : m_p(p), m_layer_id(layer_id) {
  HALO_EXPECTS(p >= 0.f && p < 1.f, "dropout: p must be in [0, 1)");
}

template <class T>
const Features<T>& ReluDropout<T>::forward(const Context& ctx, Adjacency<T> graph,
                                           const Features<T>& x) {
  const Tensor<T>& in = detail::dense(x, "relu_dropout");
  Tensor<T>& y = detail::dense_output(*ctx.res, m_output, in.rows(), in.cols());
  m_active = ctx.training && m_p > 0.f;
  if (m_active)
    kernels::relu_dropout(*ctx.res, dropout_key(ctx, m_layer_id, graph), m_p, in.view(), y.view());
  else
    kernels::relu(*ctx.res, in.span(), y.span());
  return m_output;
}

template <class T>
const Tensor<T>& ReluDropout<T>::backward(const Context& ctx, Adjacency<T>, const Tensor<T>& dy,
                                          bool need_input_grad) {
  if (!need_input_grad) return m_dx;
  const Tensor<T>& y = std::get<Tensor<T>>(m_output);
  kernels::ensure_shape(*ctx.res, m_dx, dy.rows(), dy.cols());
  const T scale = m_active ? kernels::dropout_scale<T>(m_p) : T(1);
  kernels::relu_backward(*ctx.res, y.span(), dy.span(), m_dx.span(), scale);
  return m_dx;
}

// ---- reserve: the buffers of passes within a mini-batch envelope ---------------------------

namespace {
/// Storage for a dense module output of rows x cols.
template <class T>
void reserve_output(const kernels::Resources& res, Features<T>& out, std::int64_t rows,
                    std::int64_t cols) {
  if (!std::holds_alternative<Tensor<T>>(out)) return;  // sparse outputs follow their input
  kernels::reserve(res, std::get<Tensor<T>>(out), rows * cols);
}
}  // namespace

template <class T>
void Linear<T>::reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t,
                        std::int64_t, std::int64_t) {
  reserve_output(res, m_output, src_rows, m_weight.value.cols());
  kernels::reserve(res, m_dx, src_rows * m_weight.value.rows());
}

template <class T>
void GCNConv<T>::reserve(const kernels::Resources& res, std::int64_t src_rows,
                         std::int64_t dst_rows, std::int64_t, std::int64_t) {
  const std::int64_t in = m_weight.value.rows(), out = m_weight.value.cols();
  reserve_output(res, m_output, dst_rows, out);
  kernels::reserve(res, m_dx, src_rows * in);
  m_agg.reserve(res, src_rows, dst_rows, in, out);
}

template <class T>
void SAGEConv<T>::reserve(const kernels::Resources& res, std::int64_t src_rows,
                          std::int64_t dst_rows, std::int64_t, std::int64_t) {
  const std::int64_t in = m_weight_root.value.rows(), out = m_weight_root.value.cols();
  reserve_output(res, m_output, dst_rows, out);
  kernels::reserve(res, m_dx, src_rows * in);
  m_agg.reserve(res, src_rows, dst_rows, in, out);
}

template <class T>
void ReLU<T>::reserve(const kernels::Resources& res, std::int64_t, std::int64_t dst_rows,
                      std::int64_t in_width, std::int64_t) {
  // After a convolution: one row per destination.
  reserve_output(res, m_output, dst_rows, in_width);
  kernels::reserve(res, m_dx, dst_rows * in_width);
}

template <class T>
void Dropout<T>::reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t,
                         std::int64_t in_width, std::int64_t in_entries) {
  // Before a convolution: one row per source; a sparse input's structure is copied.
  if (in_entries > 0) {
    if (!std::holds_alternative<kernels::CsrMatrix<std::int32_t, T>>(m_output))
      m_output = kernels::CsrMatrix<std::int32_t, T>();
    auto& out = std::get<kernels::CsrMatrix<std::int32_t, T>>(m_output);
    kernels::reserve(res, out.indptr, src_rows + 1);
    kernels::reserve(res, out.indices, in_entries);
    kernels::reserve(res, out.values, in_entries);
    kernels::reserve(res, m_compact.keep, in_entries);
    kernels::reserve(res, m_compact.scan_sums, kernels::dropout_compact_scan_size(src_rows));
  } else {
    reserve_output(res, m_output, src_rows, in_width);
  }
  kernels::reserve(res, m_dx, src_rows * in_width);
}

template <class T>
void ReluDropout<T>::reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t,
                             std::int64_t in_width, std::int64_t) {
  // Before the next convolution: one row per source of its block (the previous one's outputs).
  reserve_output(res, m_output, src_rows, in_width);
  kernels::reserve(res, m_dx, src_rows * in_width);
}

template class Linear<float>;
template class Linear<double>;
template class GCNConv<float>;
template class GCNConv<double>;
template class SAGEConv<float>;
template class SAGEConv<double>;
template class ReLU<float>;
template class ReLU<double>;
template class Dropout<float>;
template class Dropout<double>;
template class ReluDropout<float>;
template class ReluDropout<double>;

}  // namespace halo::nn
