#include <halo/kernels/attention.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/reduce.hpp>
#include <halo/nn/detail/products.hpp>
#include <halo/nn/gat.hpp>

namespace halo::nn {

using kernels::MatrixView;
using kernels::Tensor;
using kernels::Trans;

namespace {

template <class T>
Parameter<T> glorot(const kernels::Resources& res, const char* name, std::int64_t rows,
                    std::int64_t cols, std::uint64_t seed, std::uint64_t param_id) {
  HALO_EXPECTS(rows >= 1 && cols >= 1, std::string("gat_conv: ") + name + " sizes must be >= 1");
  Parameter<T> p{name, Tensor<T>(res, rows, cols), Tensor<T>::zeros(res, rows, cols)};
  detail::glorot_uniform(res, p.value, seed, param_id);
  return p;
}

/// The stored entries of a local CSR: its view's count when known, else read from indptr
/// (host data only).
template <class T>
std::int64_t edges_of(const kernels::Resources& res, kernels::CsrView<kernels::NodeId, T> g) {
  if (g.num_entries >= 0) return g.num_entries;
  HALO_EXPECTS(res.device() == kernels::Device::Cpu,
               "gat_conv: a device graph must carry its entry count (CsrView::num_entries)");
  return g.num_edges();
}

template <class T>
MatrixView<T> rows_of(Tensor<T>& t, std::int64_t rows) {
  return {t.data(), rows, t.cols()};
}

}  // namespace

// ---- GATConv ---------------------------------------------------------------------------------

template <class T>
GATConv<T>::GATConv(const kernels::Resources& res, std::int64_t in, std::int64_t out,
                    std::int64_t heads, bool concat, float attention_dropout,
                    std::uint64_t dropout_layer, std::uint64_t seed, std::uint64_t param_id,
                    T negative_slope)
    : m_weight(glorot<T>(res, "weight", in, heads * out, seed, param_id)),
      m_att_src(glorot<T>(res, "att_src", heads, out, seed, param_id + 1)),
      m_att_dst(glorot<T>(res, "att_dst", heads, out, seed, param_id + 2)),
      m_bias{"bias", Tensor<T>::zeros(res, concat ? heads * out : out, 1),
             Tensor<T>::zeros(res, concat ? heads * out : out, 1)},
      m_out(out),
      m_heads(heads),
      m_concat(concat),
      m_p(attention_dropout),
      m_layer(kAttentionDropoutLayer + dropout_layer),
      m_slope(negative_slope) {
  HALO_EXPECTS(heads >= 1, "gat_conv: at least one head is needed");
  HALO_EXPECTS(attention_dropout >= 0.f && attention_dropout < 1.f,
               "gat_conv: attention dropout must be in [0, 1)");
}

template <class T>
typename GATConv<T>::Local GATConv<T>::local(const Adjacency<T>& graph,
                                             std::int64_t input_rows) const {
  Local g;
  if (graph.propagation != nullptr) {
    g.csr = graph.propagation->local_graph();
    g.ids = graph.propagation->column_ids();
    g.exchange = graph.propagation;
    HALO_EXPECTS(g.csr.num_rows == graph.num_rows && input_rows == graph.num_rows &&
                     g.csr.num_cols >= g.csr.num_rows,
                 "gat_conv: on a partition the input needs one row per owned node");
  } else {
    g.csr = graph.csr;
    g.ids = graph.source_ids;
    HALO_EXPECTS(g.csr.indptr != nullptr || graph.num_rows == 0,
                 "gat_conv: needs a graph (a local CSR or a propagation with local_graph)");
    HALO_EXPECTS(input_rows == graph.num_cols && graph.num_rows <= graph.num_cols,
                 "gat_conv: the input needs one row per source node, destinations first");
  }
  return g;
}

template <class T>
kernels::DropoutKey GATConv<T>::dropout_key(const Context& ctx, const Local& g) const {
  return {ctx.seed, ctx.epoch, m_layer, ctx.row_offset, g.ids};
}

template <class T>
const Features<T>& GATConv<T>::forward(const Context& ctx, Adjacency<T> graph,
                                       const Features<T>& x) {
  const auto& res = *ctx.res;
  HALO_EXPECTS(kernels::num_cols(x) == m_weight.value.rows(),
               "gat_conv: input width " + std::to_string(kernels::num_cols(x)) + ", the layer " +
                   std::to_string(m_weight.value.rows()));
  const std::int64_t in_rows = kernels::num_rows(x);
  const Local g = local(graph, in_rows);
  m_input = &x;
  const std::int64_t n_src = g.csr.num_cols, n_dst = g.csr.num_rows, width = m_heads * m_out;
  const std::int64_t edges = edges_of<T>(res, g.csr);
  // z for the input rows, then (on a partition) the other sources' rows from their owners.
  kernels::ensure_shape(res, m_z, n_src, width);
  m_z.reshape_within(in_rows, width);
  detail::multiply(res, x, m_weight.value, m_z);
  m_z.reshape_within(n_src, width);
  if (g.exchange != nullptr) g.exchange->exchange_rows(res, m_z.view());
  const kernels::ConstMatrixView<T> z = m_z.view();
  const kernels::ConstMatrixView<T> z_dst{m_z.data(), n_dst, width};
  kernels::ensure_shape(res, m_s_src, n_src, m_heads);
  kernels::ensure_shape(res, m_s_dst, n_dst, m_heads);
  kernels::head_dot<T>(res, z, m_att_src.value.view(), m_s_src.view());
  kernels::head_dot<T>(res, z_dst, m_att_dst.value.view(), m_s_dst.view());
  kernels::ensure_shape(res, m_score, edges, m_heads);
  kernels::ensure_shape(res, m_alpha, edges, m_heads);
  kernels::gat_edge_scores<kernels::NodeId, T>(res, g.csr, m_s_dst.view(), m_s_src.view(), m_slope,
                                               m_score.view(), m_alpha.view());
  kernels::ensure_shape(res, m_row_max, n_dst, m_heads);
  kernels::ensure_shape(res, m_row_sum, n_dst, m_heads);
  const kernels::SoftmaxSegments<kernels::NodeId, T> part{g.csr, m_alpha.view()};
  kernels::segment_softmax<kernels::NodeId, T>(res, {&part, 1}, m_row_max.view(), m_row_sum.view());
  m_dropped = ctx.training && m_p > 0.f;
  const Tensor<T>* w = &m_alpha;
  if (m_dropped) {
    kernels::ensure_shape(res, m_alpha_dropped, edges, m_heads);
    kernels::edge_dropout<kernels::NodeId, T>(res, dropout_key(ctx, g), m_p, g.csr, m_alpha.view(),
                                              m_alpha_dropped.view());
    w = &m_alpha_dropped;
  }
  Tensor<T>& y = detail::dense_output(res, m_output, n_dst, this->width());
  if (m_concat) {
    kernels::weighted_aggregate<kernels::NodeId, T>(res, g.csr, w->view(), z, y.view());
  } else {
    kernels::ensure_shape(res, m_heads_out, n_dst, width);
    kernels::weighted_aggregate<kernels::NodeId, T>(res, g.csr, w->view(), z, m_heads_out.view());
    kernels::head_mean<T>(res, m_heads_out.view(), y.view());
  }
  kernels::add_bias<T>(res, y.view(), m_bias.value.span());
  return m_output;
}

template <class T>
const Tensor<T>& GATConv<T>::backward(const Context& ctx, Adjacency<T> graph, const Tensor<T>& dy,
                                      bool need_input_grad) {
  const auto& res = *ctx.res;
  HALO_EXPECTS(m_input != nullptr, "gat_conv: backward called before forward");
  const Features<T>& x = *m_input;
  const std::int64_t in_rows = kernels::num_rows(x);
  const Local g = local(graph, in_rows);
  const std::int64_t n_src = g.csr.num_cols, n_dst = g.csr.num_rows, width = m_heads * m_out;
  const std::int64_t edges = m_alpha.rows();
  HALO_EXPECTS(dy.rows() == n_dst && dy.cols() == this->width(), "gat_conv: dy shape mismatch");
  kernels::column_sum<T>(res, dy.view(), m_bias.grad.span());
  kernels::ConstMatrixView<T> dheads = dy.view();
  if (!m_concat) {
    kernels::ensure_shape(res, m_dheads, n_dst, width);
    kernels::head_mean_backward<T>(res, dy.view(), m_dheads.view());
    dheads = m_dheads.view();
  }
  const kernels::ConstMatrixView<T> z = m_z.view();
  const Tensor<T>& w = m_dropped ? m_alpha_dropped : m_alpha;
  // y = Agg(w, z): dw by an SDDMM, dz by the adjoint aggregation.
  kernels::ensure_shape(res, m_dalpha, edges, m_heads);
  kernels::sddmm<kernels::NodeId, T>(res, g.csr, dheads, z, m_dalpha.view());
  kernels::ensure_shape(res, m_dz, n_src, width);
  kernels::weighted_aggregate_transposed<kernels::NodeId, T>(res, g.csr, w.view(), dheads,
                                                             m_dz.view());
  if (m_dropped)  // the mask is a pure function of its key: the same op drops the gradient
    kernels::edge_dropout<kernels::NodeId, T>(res, dropout_key(ctx, g), m_p, g.csr, m_dalpha.view(),
                                              m_dalpha.view());
  const kernels::SoftmaxSegments<kernels::NodeId, T> alpha{g.csr, m_alpha.view()};
  const kernels::SoftmaxSegments<kernels::NodeId, T> dalpha{g.csr, m_dalpha.view()};
  kernels::segment_softmax_backward<kernels::NodeId, T>(res, {&alpha, 1}, {&dalpha, 1},
                                                        m_row_max.view());  // row_max: scratch
  kernels::ensure_shape(res, m_ds_src, n_src, m_heads);
  kernels::ensure_shape(res, m_ds_dst, n_dst, m_heads);
  kernels::gat_edge_scores_backward<kernels::NodeId, T>(
      res, g.csr, m_score.view(), m_slope, m_dalpha.view(), m_ds_dst.view(), m_ds_src.view());
  kernels::head_dot_backward<T>(res, z, m_att_src.value.view(), m_ds_src.view(), m_dz.view(),
                                m_att_src.grad.view(), /*accumulate_dx=*/true);
  kernels::head_dot_backward<T>(res, kernels::ConstMatrixView<T>{m_z.data(), n_dst, width},
                                m_att_dst.value.view(), m_ds_dst.view(), rows_of(m_dz, n_dst),
                                m_att_dst.grad.view(), /*accumulate_dx=*/true);
  // The other sources' gradients go back to their owners; then z = x W's own rows.
  if (g.exchange != nullptr) g.exchange->reduce_rows(res, m_dz.view());
  m_dz.reshape_within(in_rows, width);
  detail::multiply_transposed(res, x, m_dz, m_weight.grad);
  if (need_input_grad) {
    kernels::ensure_shape(res, m_dx, in_rows, m_weight.value.rows());
    kernels::gemm<T>(res, Trans::No, Trans::Yes, T(1), m_dz.view(), m_weight.value.view(), T(0),
                     m_dx.view());
  }
  return m_dx;
}

template <class T>
void GATConv<T>::reserve(const kernels::Resources& res, std::int64_t src_rows,
                         std::int64_t dst_rows, std::int64_t, std::int64_t) {
  const std::int64_t width = m_heads * m_out;
  if (!std::holds_alternative<Tensor<T>>(m_output)) m_output = Tensor<T>();
  kernels::reserve(res, std::get<Tensor<T>>(m_output), dst_rows * this->width());
  for (Tensor<T>* t : {&m_z, &m_dz}) kernels::reserve(res, *t, src_rows * width);
  for (Tensor<T>* t : {&m_heads_out, &m_dheads}) kernels::reserve(res, *t, dst_rows * width);
  kernels::reserve(res, m_s_src, src_rows * m_heads);
  kernels::reserve(res, m_ds_src, src_rows * m_heads);
  for (Tensor<T>* t : {&m_s_dst, &m_ds_dst, &m_row_max, &m_row_sum})
    kernels::reserve(res, *t, dst_rows * m_heads);
  kernels::reserve(res, m_dx, src_rows * m_weight.value.rows());
  // Edges are not bounded here (the envelope gives rows only): they grow on first use.
}

// ---- EluDropout ------------------------------------------------------------------------------

template <class T>
EluDropout<T>::EluDropout(float p, std::uint64_t layer_id) : m_p(p), m_layer_id(layer_id) {
  HALO_EXPECTS(p >= 0.f && p < 1.f, "dropout: p must be in [0, 1)");
}

template <class T>
const Features<T>& EluDropout<T>::forward(const Context& ctx, Adjacency<T> graph,
                                          const Features<T>& x) {
  const auto& res = *ctx.res;
  const Tensor<T>& in = detail::dense(x, "elu_dropout");
  m_input = &in;
  Tensor<T>& y = detail::dense_output(res, m_output, in.rows(), in.cols());
  kernels::elu(res, in.span(), y.span());
  m_active = ctx.training && m_p > 0.f;
  if (m_active)
    kernels::dropout<T>(res, {ctx.seed, ctx.epoch, m_layer_id, ctx.row_offset, graph.source_ids},
                        m_p, y.view(), y.view());
  return m_output;
}

template <class T>
const Tensor<T>& EluDropout<T>::backward(const Context& ctx, Adjacency<T> graph,
                                         const Tensor<T>& dy, bool need_input_grad) {
  if (!need_input_grad) return m_dx;
  const auto& res = *ctx.res;
  HALO_EXPECTS(m_input != nullptr, "elu_dropout: backward called before forward");
  kernels::ensure_shape(res, m_dx, dy.rows(), dy.cols());
  if (m_active) {
    kernels::dropout<T>(res, {ctx.seed, ctx.epoch, m_layer_id, ctx.row_offset, graph.source_ids},
                        m_p, dy.view(), m_dx.view());
    kernels::elu_backward<T>(res, m_input->span(), m_dx.span(), m_dx.span());
  } else {
    kernels::elu_backward<T>(res, m_input->span(), dy.span(), m_dx.span());
  }
  return m_dx;
}

template <class T>
void EluDropout<T>::reserve(const kernels::Resources& res, std::int64_t src_rows, std::int64_t,
                            std::int64_t in_width, std::int64_t) {
  if (!std::holds_alternative<Tensor<T>>(m_output)) m_output = Tensor<T>();
  kernels::reserve(res, std::get<Tensor<T>>(m_output), src_rows * in_width);
  kernels::reserve(res, m_dx, src_rows * in_width);
}

template class GATConv<float>;
template class GATConv<double>;
template class EluDropout<float>;
template class EluDropout<double>;

}  // namespace halo::nn
