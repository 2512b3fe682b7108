#include <chrono>
#include <cmath>
#include <utility>

#include <halo/kernels/attention.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/reduce.hpp>
#include <halo/nn/detail/products.hpp>
#include <halo/nn/hgt.hpp>

namespace halo::nn {

using kernels::ConstMatrixView;
using kernels::MatrixView;
using kernels::NodeId;
using kernels::Span;
using kernels::Tensor;
using kernels::Trans;

namespace {

template <class T>
Parameter<T> glorot(const kernels::Resources& res, std::string name, std::int64_t rows,
                    std::int64_t cols, std::uint64_t seed, std::uint64_t param_id) {
  Parameter<T> p{std::move(name), Tensor<T>(res, rows, cols), Tensor<T>::zeros(res, rows, cols)};
  detail::glorot_uniform(res, p.value, seed, param_id);
  return p;
}

template <class T>
Parameter<T> constant(const kernels::Resources& res, std::string name, std::int64_t rows,
                      std::int64_t cols, T value) {
  Parameter<T> p{std::move(name), Tensor<T>(res, rows, cols), Tensor<T>::zeros(res, rows, cols)};
  kernels::fill(res, p.value.span(), value);
  return p;
}

/// d x d matrices per head, Glorot-uniform for a d x d matrix, stored as heads x (d * d).
template <class T>
Parameter<T> head_matrices(const kernels::Resources& res, std::string name, std::int64_t heads,
                           std::int64_t d, std::uint64_t seed, std::uint64_t param_id) {
  Parameter<T> p = glorot<T>(res, std::move(name), d, d * heads, seed, param_id);
  // The bound sqrt(6 / (d + d)) of one head's matrix, not of the d x (d * heads) draw.
  const T rescale = static_cast<T>(std::sqrt((d + d * heads) / (2.0 * static_cast<double>(d))));
  kernels::axpy(res, rescale - T(1), Span<const T>(p.value.span()), p.value.span());
  p.value.reshape_within(heads, d * d);
  p.grad.reshape_within(heads, d * d);
  return p;
}

/// The first `rows` rows of an input tensor (of `cols` columns; an input without rows may be an
/// empty tensor).
template <class T>
ConstMatrixView<T> rows_of(const Tensor<T>& x, std::int64_t rows, std::int64_t cols) {
  return {x.data(), rows, cols};
}
template <class T>
MatrixView<T> rows_of(Tensor<T>& x, std::int64_t rows, std::int64_t cols) {
  return {x.data(), rows, cols};
}

/// y = x w + b over the given rows of x; `zero`: x is zeros, y the bias in every row (no product).
template <class T>
void linear(const kernels::Resources& res, ConstMatrixView<T> x, const Parameter<T>& w,
            const Parameter<T>& b, Tensor<T>& y, bool zero = false) {
  kernels::ensure_shape(res, y, x.rows, w.value.cols());
  if (zero)
    kernels::fill(res, y.span(), T(0));
  else
    kernels::gemm(res, Trans::No, Trans::No, T(1), x, w.value.view(), T(0), y.view());
  kernels::add_bias(res, y.view(), b.value.span());
}

/// dW = x^T dy (zeros for a zero x), db = column sums of dy, and dx += dy W^T when dx has data.
template <class T>
void linear_backward(const kernels::Resources& res, ConstMatrixView<T> x, const Tensor<T>& dy,
                     Parameter<T>& w, Parameter<T>& b, MatrixView<T> dx, bool zero = false) {
  if (zero)
    kernels::fill(res, w.grad.span(), T(0));
  else
    kernels::gemm(res, Trans::Yes, Trans::No, T(1), x, dy.view(), T(0), w.grad.view());
  kernels::column_sum(res, dy.view(), b.grad.span());
  if (dx.data != nullptr)
    kernels::gemm(res, Trans::No, Trans::Yes, T(1), dy.view(), w.value.view(), T(1), dx);
}

/// Adds the host wall time since the last lap to a stage's counter, after waiting for the
/// device, when the graph asks for stage times.
class StageClock {
 public:
  StageClock(const kernels::Resources& res, HeteroStageTimes* times) : m_res(res), m_times(times) {
    if (m_times != nullptr) m_res.synchronize();
    m_last = std::chrono::steady_clock::now();
  }
  void lap(double HeteroStageTimes::*stage) {
    if (m_times == nullptr) return;
    m_res.synchronize();
    const auto now = std::chrono::steady_clock::now();
    m_times->*stage += std::chrono::duration<double>(now - m_last).count();
    m_last = now;
  }

 private:
  const kernels::Resources& m_res;
  HeteroStageTimes* m_times;
  std::chrono::steady_clock::time_point m_last;
};

/// The key of the output dropout's mask for type t: the global id of destination i is
/// source_ids[t][i] when the graph gives ids for t, else type_offset[t] + i (as HeteroModel).
template <class T>
kernels::DropoutKey dropout_key(const Context& ctx, const HeteroGraphView<T>& graph, std::size_t t,
                                std::uint64_t layer) {
  kernels::DropoutKey key{
      ctx.seed, ctx.epoch, layer, graph.type_offset.empty() ? 0 : graph.type_offset[t], {}};
  if (t < graph.source_ids.size() && graph.source_ids[t].size > 0)
    key.row_ids = {graph.source_ids[t].data, graph.num_dst[t]};  // destinations come first
  return key;
}

constexpr auto kProjection = &HeteroStageTimes::feature_projection_s;
constexpr auto kNeighbor = &HeteroStageTimes::neighbor_aggregation_s;
constexpr auto kSemantic = &HeteroStageTimes::semantic_aggregation_s;

}  // namespace

template <class T>
HGTConv<T>::HGTConv(const kernels::Resources& res, HgtConfig config, std::uint64_t seed,
                    std::uint64_t param_id)
    : m_config(std::move(config)) {
  const std::int64_t width = m_config.out_width, heads = m_config.heads;
  HALO_EXPECTS(heads >= 1 && width >= 1 && width % heads == 0,
               "hgt_conv: out_width (" + std::to_string(width) +
                   ") must be a positive multiple of heads (" + std::to_string(heads) + ")");
  HALO_EXPECTS(m_config.dropout >= 0.f && m_config.dropout < 1.f,
               "hgt_conv: dropout must be in [0, 1)");
  m_head_width = width / heads;
  const auto num_types = static_cast<std::int32_t>(m_config.in_widths.size());
  std::uint64_t id = param_id;
  for (std::int32_t t = 0; t < num_types; ++t) {
    const std::int64_t in = m_config.in_widths[static_cast<std::size_t>(t)];
    HALO_EXPECTS(in >= 1,
                 "hgt_conv: input width of node type " + std::to_string(t) + " must be >= 1");
    const std::string s = ".t" + std::to_string(t);
    TypeState ts;
    ts.k_weight = glorot<T>(res, "k_weight" + s, in, width, seed, id++);
    ts.k_bias = constant<T>(res, "k_bias" + s, width, 1, T(0));
    ts.q_weight = glorot<T>(res, "q_weight" + s, in, width, seed, id++);
    ts.q_bias = constant<T>(res, "q_bias" + s, width, 1, T(0));
    ts.v_weight = glorot<T>(res, "v_weight" + s, in, width, seed, id++);
    ts.v_bias = constant<T>(res, "v_bias" + s, width, 1, T(0));
    ts.a_weight = glorot<T>(res, "a_weight" + s, width, width, seed, id++);
    ts.a_bias = constant<T>(res, "a_bias" + s, width, 1, T(0));
    if (m_config.skip && in == width) ts.gate = constant<T>(res, "skip" + s, 1, 1, T(1));
    m_types.push_back(std::move(ts));
  }
  for (std::size_t r = 0; r < m_config.relations.size(); ++r) {
    const auto [src, dst] = m_config.relations[r];
    HALO_EXPECTS(src >= 0 && src < num_types && dst >= 0 && dst < num_types,
                 "hgt_conv: relation " + std::to_string(r) + " names a node type outside [0, " +
                     std::to_string(num_types) + ")");
    const std::string s = ".r" + std::to_string(r);
    RelationState rs;
    rs.att = head_matrices<T>(res, "att" + s, heads, m_head_width, seed, id++);
    rs.msg = head_matrices<T>(res, "msg" + s, heads, m_head_width, seed, id++);
    rs.prior = constant<T>(res, "prior" + s, heads, 1, T(1));
    m_relations.push_back(std::move(rs));
  }
  m_output.resize(m_types.size());
  m_dx.resize(m_types.size());
  m_no_grad.resize(m_types.size());
}

template <class T>
bool HGTConv<T>::gated(std::size_t t) const {
  return !m_types[t].gate.value.empty();
}

template <class T>
std::vector<Parameter<T>*> HGTConv<T>::parameters() {
  std::vector<Parameter<T>*> out;
  for (auto& ts : m_types) {
    for (auto* p : {&ts.k_weight, &ts.k_bias, &ts.q_weight, &ts.q_bias, &ts.v_weight, &ts.v_bias,
                    &ts.a_weight, &ts.a_bias})
      out.push_back(p);
    if (!ts.gate.value.empty()) out.push_back(&ts.gate);
  }
  for (auto& rs : m_relations)
    for (auto* p : {&rs.att, &rs.msg, &rs.prior}) out.push_back(p);
  return out;
}

template <class T>
void HGTConv<T>::check_graph(const HeteroGraphView<T>& graph) const {
  const auto num_types = static_cast<std::size_t>(graph.num_types());
  HALO_EXPECTS(num_types == m_types.size() && graph.num_dst.size() == num_types,
               "hgt_conv: the graph has " + std::to_string(num_types) +
                   " node types, the layer was built for " + std::to_string(m_types.size()));
  HALO_EXPECTS(graph.relations.size() == m_relations.size(),
               "hgt_conv: the graph has " + std::to_string(graph.relations.size()) +
                   " relations, the layer was built for " + std::to_string(m_relations.size()));
  for (std::size_t t = 0; t < num_types; ++t) {
    HALO_EXPECTS(graph.num_dst[t] >= 0 && graph.num_dst[t] <= graph.num_src[t],
                 "hgt_conv: node type " + std::to_string(t) + " has more destinations than inputs");
    HALO_EXPECTS(t >= graph.source_ids.size() || graph.source_ids[t].size == 0 ||
                     graph.source_ids[t].size == graph.num_src[t],
                 "hgt_conv: source_ids of node type " + std::to_string(t) +
                     " must be empty or hold one id per input row");
  }
  HALO_EXPECTS(graph.type_offset.empty() || graph.type_offset.size() == num_types,
               "hgt_conv: type_offset needs one entry per node type");
  for (std::size_t r = 0; r < m_relations.size(); ++r) {
    const auto& rel = graph.relations[r];
    const auto [src, dst] = m_config.relations[r];
    HALO_EXPECTS(rel.src_type == src && rel.dst_type == dst,
                 "hgt_conv: relation " + std::to_string(r) + " (" + rel.name +
                     ") does not connect the node types the layer was built for");
    HALO_EXPECTS(rel.adj.num_rows == graph.num_dst[static_cast<std::size_t>(dst)] &&
                     rel.adj.num_cols == graph.num_src[static_cast<std::size_t>(src)],
                 "hgt_conv: relation " + rel.name +
                     " needs one row per destination and one column per input of its source type");
    HALO_EXPECTS(
        rel.adj.num_entries >= 0 || rel.adj.num_rows == 0,
        "hgt_conv: relation " + rel.name + " must carry its entry count (CsrMatrix::view)");
  }
}

template <class T>
const std::vector<Tensor<T>>& HGTConv<T>::forward(const Context& ctx,
                                                  const HeteroGraphView<T>& graph,
                                                  std::span<const Tensor<T>> x) {
  const auto& res = *ctx.res;
  check_graph(graph);
  HALO_EXPECTS(x.size() == m_types.size(), "hgt_conv: one input tensor per node type");
  const std::int64_t width = m_config.out_width, heads = m_config.heads;
  for (std::size_t t = 0; t < m_types.size(); ++t)
    HALO_EXPECTS(x[t].rows() == graph.num_src[t] &&
                     (x[t].cols() == m_config.in_widths[t] || graph.num_src[t] == 0),
                 "hgt_conv: the input of node type " + std::to_string(t) + " must be " +
                     std::to_string(graph.num_src[t]) + " x " +
                     std::to_string(m_config.in_widths[t]));
  m_input = x;
  StageClock clock(res, graph.times);

  // Feature projection: K and V of every input row, Q of the destinations.
  for (std::size_t t = 0; t < m_types.size(); ++t) {
    TypeState& ts = m_types[t];
    const std::int64_t in = m_config.in_widths[t];
    const auto all = rows_of(x[t], graph.num_src[t], in);
    const bool zero = zero_input(t);
    linear(res, all, ts.k_weight, ts.k_bias, ts.keys, zero);
    linear(res, all, ts.v_weight, ts.v_bias, ts.values, zero);
    linear(res, rows_of(x[t], graph.num_dst[t], in), ts.q_weight, ts.q_bias, ts.queries, zero);
  }
  clock.lap(kProjection);

  // Neighbour aggregation, first half: per-relation keys and messages, and the edge scores.
  const T inv_sqrt_d = T(1) / std::sqrt(static_cast<T>(m_head_width));
  for (std::size_t r = 0; r < m_relations.size(); ++r) {
    RelationState& rs = m_relations[r];
    const auto& rel = graph.relations[r];
    const TypeState& src = m_types[static_cast<std::size_t>(rel.src_type)];
    kernels::ensure_shape(res, rs.att_block, width, width);
    kernels::block_diagonal<T>(res, rs.att.value.view(), rs.prior.value.span(), inv_sqrt_d,
                               rs.att_block.view());
    kernels::ensure_shape(res, rs.msg_block, width, width);
    kernels::block_diagonal<T>(res, rs.msg.value.view(), {}, T(1), rs.msg_block.view());
    kernels::ensure_shape(res, rs.rel_keys, src.keys.rows(), width);
    kernels::gemm(res, Trans::No, Trans::No, T(1), src.keys.view(), rs.att_block.view(), T(0),
                  rs.rel_keys.view());
    kernels::ensure_shape(res, rs.rel_messages, src.values.rows(), width);
    kernels::gemm(res, Trans::No, Trans::No, T(1), src.values.view(), rs.msg_block.view(), T(0),
                  rs.rel_messages.view());
    kernels::ensure_shape(res, rs.alpha, rel.adj.num_rows == 0 ? 0 : rel.adj.num_entries, heads);
    kernels::sddmm(res, rel.adj, m_types[static_cast<std::size_t>(rel.dst_type)].queries.view(),
                   rs.rel_keys.view(), rs.alpha.view());
  }
  clock.lap(kNeighbor);

  // Semantic aggregation: every destination's scores normalised over all its relations.
  for (std::size_t t = 0; t < m_types.size(); ++t) {
    TypeState& ts = m_types[t];
    kernels::ensure_shape(res, ts.row_max, graph.num_dst[t], heads);
    kernels::ensure_shape(res, ts.row_sum, graph.num_dst[t], heads);
    m_parts.clear();
    for (std::size_t r = 0; r < m_relations.size(); ++r)
      if (graph.relations[r].dst_type == static_cast<std::int32_t>(t))
        m_parts.push_back({graph.relations[r].adj, m_relations[r].alpha.view()});
    if (!m_parts.empty())
      kernels::segment_softmax<NodeId, T>(res, m_parts, ts.row_max.view(), ts.row_sum.view());
  }
  clock.lap(kSemantic);

  // Neighbour aggregation, second half: the weighted messages of every relation, summed.
  std::vector<bool> started(m_types.size(), false);
  for (std::size_t t = 0; t < m_types.size(); ++t)
    kernels::ensure_shape(res, m_types[t].agg, graph.num_dst[t], width);
  for (std::size_t r = 0; r < m_relations.size(); ++r) {
    const auto& rel = graph.relations[r];
    const auto dst = static_cast<std::size_t>(rel.dst_type);
    kernels::weighted_aggregate(res, rel.adj, m_relations[r].alpha.view(),
                                m_relations[r].rel_messages.view(), m_types[dst].agg.view(),
                                /*accumulate=*/started[dst]);
    started[dst] = true;
  }
  for (std::size_t t = 0; t < m_types.size(); ++t)
    if (!started[t]) kernels::fill(res, m_types[t].agg.span(), T(0));
  clock.lap(kNeighbor);

  // Feature projection: gelu, the output projection, dropout and the gated residual.
  m_dropout_active = ctx.training && m_config.dropout > 0.f;
  for (std::size_t t = 0; t < m_types.size(); ++t) {
    TypeState& ts = m_types[t];
    const std::int64_t rows = graph.num_dst[t];
    kernels::ensure_shape(res, ts.act, rows, width);
    kernels::gelu(res, Span<const T>(ts.agg.span()), ts.act.span());
    Tensor<T>& lin = gated(t) ? ts.lin : m_output[t];
    linear(res, ConstMatrixView<T>(ts.act.view()), ts.a_weight, ts.a_bias, lin);
    if (m_dropout_active) {
      kernels::dropout(res, dropout_key(ctx, graph, t, m_config.layer_id), m_config.dropout,
                       ConstMatrixView<T>(lin.view()), lin.view());
    }
    if (gated(t)) {
      kernels::ensure_shape(res, m_output[t], rows, width);
      kernels::sigmoid_gate<T>(res, ts.gate.value.span(), lin.span(),
                               Span<const T>{x[t].data(), rows * width}, m_output[t].span());
    }
  }
  clock.lap(kProjection);
  m_forward_done = true;
  return m_output;
}

template <class T>
const std::vector<Tensor<T>>& HGTConv<T>::backward(const Context& ctx,
                                                   const HeteroGraphView<T>& graph,
                                                   std::span<const Tensor<T>> dy,
                                                   bool need_input_grad) {
  const auto& res = *ctx.res;
  HALO_EXPECTS(m_forward_done, "hgt_conv: backward called before forward");
  check_graph(graph);
  HALO_EXPECTS(dy.size() == m_types.size(), "hgt_conv: one output gradient per node type");
  const std::int64_t width = m_config.out_width;
  for (std::size_t t = 0; t < m_types.size(); ++t)
    HALO_EXPECTS(dy[t].rows() == graph.num_dst[t] && (dy[t].cols() == width || dy[t].empty()),
                 "hgt_conv: the output gradient of node type " + std::to_string(t) + " must be " +
                     std::to_string(graph.num_dst[t]) + " x " + std::to_string(width));
  const auto x = m_input;
  StageClock clock(res, graph.times);

  // Feature projection (output side): gate, dropout, output projection, gelu -> d_act = dL/d(agg).
  for (std::size_t t = 0; t < m_types.size(); ++t) {
    TypeState& ts = m_types[t];
    const std::int64_t rows = graph.num_dst[t], in = m_config.in_widths[t];
    const bool grad = need_input_grad && !zero_input(t);  // a zero type gets none
    if (grad) {
      kernels::ensure_shape(res, m_dx[t], graph.num_src[t], x[t].cols());  // the input's shape
      kernels::fill(res, m_dx[t].span(), T(0));
    } else if (need_input_grad) {
      m_dx[t] = Tensor<T>();
    }
    kernels::ensure_shape(res, ts.d_lin, rows, width);
    const Span<const T> dout{dy[t].data(), rows * width};
    if (gated(t)) {
      kernels::sigmoid_gate_backward<T>(
          res, ts.gate.value.span(), ts.lin.span(), Span<const T>{x[t].data(), rows * width}, dout,
          ts.d_lin.span(), grad ? Span<T>{m_dx[t].data(), rows * in} : Span<T>{},
          ts.gate.grad.span(), /*accumulate_dx=*/true);
    } else {
      kernels::copy_bytes_async(res, ts.d_lin.data(), res.device(), dout.data, res.device(),
                                ts.d_lin.bytes());
    }
    if (m_dropout_active) {
      kernels::dropout(res, dropout_key(ctx, graph, t, m_config.layer_id), m_config.dropout,
                       ConstMatrixView<T>(ts.d_lin.view()), ts.d_lin.view());
    }
    kernels::ensure_shape(res, ts.d_act, rows, width);
    kernels::gemm(res, Trans::Yes, Trans::No, T(1), ts.act.view(), ts.d_lin.view(), T(0),
                  ts.a_weight.grad.view());
    kernels::column_sum(res, ts.d_lin.view(), ts.a_bias.grad.span());
    kernels::gemm(res, Trans::No, Trans::Yes, T(1), ts.d_lin.view(), ts.a_weight.value.view(), T(0),
                  ts.d_act.view());
    kernels::gelu_backward(res, Span<const T>(ts.agg.span()), Span<const T>(ts.d_act.span()),
                           ts.d_act.span());
    kernels::ensure_shape(res, ts.d_keys, graph.num_src[t], width);
    kernels::fill(res, ts.d_keys.span(), T(0));
    kernels::ensure_shape(res, ts.d_values, graph.num_src[t], width);
    kernels::fill(res, ts.d_values.span(), T(0));
    kernels::ensure_shape(res, ts.d_queries, rows, width);
    kernels::fill(res, ts.d_queries.span(), T(0));
  }
  clock.lap(kProjection);

  // Neighbour aggregation: the messages' gradients, through W_msg to V.
  for (std::size_t r = 0; r < m_relations.size(); ++r) {
    RelationState& rs = m_relations[r];
    const auto& rel = graph.relations[r];
    TypeState& src = m_types[static_cast<std::size_t>(rel.src_type)];
    kernels::ensure_shape(res, rs.d_alpha, rs.alpha.rows(), rs.alpha.cols());
    kernels::ensure_shape(res, m_d_rel_messages, src.values.rows(), width);
    kernels::weighted_aggregate_backward(
        res, rel.adj, ConstMatrixView<T>(rs.alpha.view()), rs.rel_messages.view(),
        m_types[static_cast<std::size_t>(rel.dst_type)].d_act.view(), rs.d_alpha.view(),
        m_d_rel_messages.view());
    kernels::ensure_shape(res, m_d_block, width, width);
    kernels::gemm(res, Trans::Yes, Trans::No, T(1), src.values.view(), m_d_rel_messages.view(),
                  T(0), m_d_block.view());
    kernels::block_diagonal_backward<T>(res, rs.msg.value.view(), {}, T(1), m_d_block.view(),
                                        rs.msg.grad.view(), {});
    kernels::gemm(res, Trans::No, Trans::Yes, T(1), m_d_rel_messages.view(), rs.msg_block.view(),
                  T(1), src.d_values.view());
  }
  clock.lap(kNeighbor);

  // Semantic aggregation: the softmax's adjoint over all relations of each destination type.
  for (std::size_t t = 0; t < m_types.size(); ++t) {
    m_parts.clear();
    m_grad_parts.clear();
    for (std::size_t r = 0; r < m_relations.size(); ++r) {
      if (graph.relations[r].dst_type != static_cast<std::int32_t>(t)) continue;
      m_parts.push_back({graph.relations[r].adj, m_relations[r].alpha.view()});
      m_grad_parts.push_back({graph.relations[r].adj, m_relations[r].d_alpha.view()});
    }
    if (!m_parts.empty())
      kernels::segment_softmax_backward<NodeId, T>(res, m_parts, m_grad_parts,
                                                   m_types[t].row_sum.view());
  }
  clock.lap(kSemantic);

  // Neighbour aggregation: the scores' gradients, to Q and through W_att and the priors to K.
  const T inv_sqrt_d = T(1) / std::sqrt(static_cast<T>(m_head_width));
  for (std::size_t r = 0; r < m_relations.size(); ++r) {
    RelationState& rs = m_relations[r];
    const auto& rel = graph.relations[r];
    TypeState& src = m_types[static_cast<std::size_t>(rel.src_type)];
    TypeState& dst = m_types[static_cast<std::size_t>(rel.dst_type)];
    kernels::ensure_shape(res, m_d_rel_keys, src.keys.rows(), width);
    kernels::sddmm_backward(res, rel.adj, ConstMatrixView<T>(dst.queries.view()),
                            rs.rel_keys.view(), rs.d_alpha.view(), dst.d_queries.view(),
                            m_d_rel_keys.view(), /*accumulate_da=*/true, /*accumulate_db=*/false);
    kernels::gemm(res, Trans::Yes, Trans::No, T(1), src.keys.view(), m_d_rel_keys.view(), T(0),
                  m_d_block.view());
    kernels::block_diagonal_backward<T>(res, rs.att.value.view(), rs.prior.value.span(), inv_sqrt_d,
                                        m_d_block.view(), rs.att.grad.view(), rs.prior.grad.span());
    kernels::gemm(res, Trans::No, Trans::Yes, T(1), m_d_rel_keys.view(), rs.att_block.view(), T(1),
                  src.d_keys.view());
  }
  clock.lap(kNeighbor);

  // Feature projection: the K, Q, V weights and the input.
  for (std::size_t t = 0; t < m_types.size(); ++t) {
    TypeState& ts = m_types[t];
    const std::int64_t in = m_config.in_widths[t];
    const auto all = rows_of(x[t], graph.num_src[t], in);
    const auto dst = rows_of(x[t], graph.num_dst[t], in);
    const bool zero = zero_input(t), grad = need_input_grad && !zero;
    const MatrixView<T> dx_all = grad ? rows_of(m_dx[t], graph.num_src[t], in) : MatrixView<T>{};
    const MatrixView<T> dx_dst = grad ? rows_of(m_dx[t], graph.num_dst[t], in) : MatrixView<T>{};
    linear_backward(res, all, ts.d_keys, ts.k_weight, ts.k_bias, dx_all, zero);
    linear_backward(res, all, ts.d_values, ts.v_weight, ts.v_bias, dx_all, zero);
    linear_backward(res, dst, ts.d_queries, ts.q_weight, ts.q_bias, dx_dst, zero);
  }
  clock.lap(kProjection);
  return need_input_grad ? m_dx : m_no_grad;
}

template class HGTConv<float>;
template class HGTConv<double>;

}  // namespace halo::nn
