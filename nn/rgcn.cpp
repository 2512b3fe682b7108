#include <chrono>

#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/gemm.hpp>
#include <halo/kernels/reduce.hpp>
#include <halo/kernels/spmm.hpp>
#include <halo/nn/detail/products.hpp>
#include <halo/nn/rgcn.hpp>

namespace halo::nn {

using kernels::Aggregate;
using kernels::ConstMatrixView;
using kernels::MatrixView;
using kernels::Tensor;
using kernels::Trans;

namespace {

/// Adds the host wall time of f() to the stage `field` of `times` (when set), the device
/// synchronised on both sides so that the stage's work is inside the interval.
template <class F>
void timed(const kernels::Resources& res, HeteroStageTimes* times, double HeteroStageTimes::*field,
           const F& f) {
  if (times == nullptr) return f();
  res.synchronize();
  const auto start = std::chrono::steady_clock::now();
  f();
  res.synchronize();
  times->*field += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class T>
Parameter<T> glorot(const kernels::Resources& res, std::string name, std::int64_t rows,
                    std::int64_t cols, std::uint64_t seed, std::uint64_t id) {
  Parameter<T> p{std::move(name), Tensor<T>(res, rows, cols), Tensor<T>::zeros(res, rows, cols)};
  detail::glorot_uniform(res, p.value, seed, id);
  return p;
}

template <class T>
MatrixView<const T> first_rows(const Tensor<T>& x, std::int64_t rows) {
  return {x.data(), rows, x.cols()};
}

}  // namespace

template <class T>
RGCNConv<T>::RGCNConv(const kernels::Resources& res, std::vector<std::int64_t> in_width,
                      std::int64_t out,
                      std::vector<std::pair<std::int32_t, std::int32_t>> relations, int num_bases,
                      std::uint64_t seed, std::uint64_t param_id)
    : m_in(std::move(in_width)), m_out(out), m_rel(std::move(relations)), m_num_bases(num_bases) {
  const auto num_types = static_cast<std::int32_t>(m_in.size());
  HALO_EXPECTS(num_types >= 1 && out >= 1, "rgcn_conv: needs a node type and out >= 1");
  HALO_EXPECTS(num_bases >= 0, "rgcn_conv: the number of bases must be >= 0");
  for (const auto w : m_in) HALO_EXPECTS(w >= 1, "rgcn_conv: input widths must be >= 1");
  for (const auto& [s, d] : m_rel)
    HALO_EXPECTS(s >= 0 && s < num_types && d >= 0 && d < num_types,
                 "rgcn_conv: a relation names a node type out of range");
  std::uint64_t id = param_id;
  for (std::int32_t t = 0; t < num_types; ++t) {
    m_self.push_back(glorot<T>(res, "weight_self_" + std::to_string(t),
                               m_in[static_cast<std::size_t>(t)], out, seed, id++));
    m_bias.push_back({"bias_" + std::to_string(t), Tensor<T>::zeros(res, out, 1),
                      Tensor<T>::zeros(res, out, 1)});
  }
  const auto num_rel = static_cast<std::int64_t>(m_rel.size());
  if (num_bases == 0) {
    for (std::size_t r = 0; r < m_rel.size(); ++r)
      m_weight.push_back(glorot<T>(res, "weight_rel_" + std::to_string(r),
                                   m_in[static_cast<std::size_t>(m_rel[r].first)], out, seed,
                                   id++));
  } else if (num_rel > 0) {
    const std::int64_t in = m_in[static_cast<std::size_t>(m_rel[0].first)];
    for (const auto& rel : m_rel)
      HALO_EXPECTS(m_in[static_cast<std::size_t>(rel.first)] == in,
                   "rgcn_conv: basis decomposition needs one source width for every relation");
    // Each basis initialised as an in x out Glorot weight, the coefficients as an R x B one.
    m_basis = {"basis", Tensor<T>(res, num_bases, in * out),
               Tensor<T>::zeros(res, num_bases, in * out)};
    for (int b = 0; b < num_bases; ++b) {
      Tensor<T> v(res, in, out);
      detail::glorot_uniform(res, v, seed, id++);
      kernels::copy_bytes(res, m_basis.value.data() + b * in * out, res.device(), v.data(),
                          res.device(), v.bytes());
    }
    m_coef = glorot<T>(res, "basis_coefficients", num_rel, num_bases, seed, id++);
    m_w = Tensor<T>(res, num_rel, in * out);
    m_dw = Tensor<T>(res, num_rel, in * out);
  }
  m_agg.resize(m_rel.size());
  m_msg.resize(m_rel.size());
  m_y.resize(m_in.size());
  m_dx.resize(m_in.size());
}

template <class T>
std::vector<Parameter<T>*> RGCNConv<T>::parameters() {
  std::vector<Parameter<T>*> p;
  for (auto& w : m_self) p.push_back(&w);
  for (auto& b : m_bias) p.push_back(&b);
  for (auto& w : m_weight) p.push_back(&w);
  if (m_num_bases > 0 && !m_rel.empty()) {
    p.push_back(&m_basis);
    p.push_back(&m_coef);
  }
  return p;
}

template <class T>
MatrixView<const T> RGCNConv<T>::relation_weight(std::size_t r) const {
  const std::int64_t in = m_in[static_cast<std::size_t>(m_rel[r].first)];
  if (m_num_bases == 0) return m_weight[r].value.view();
  return {m_w.data() + static_cast<std::int64_t>(r) * in * m_out, in, m_out};
}

template <class T>
bool RGCNConv<T>::zero_input(std::size_t type) const {
  return type < m_zero.size() && m_zero[type];
}

template <class T>
const std::vector<Tensor<T>>& RGCNConv<T>::forward(const Context& ctx,
                                                   const HeteroGraphView<T>& graph,
                                                   std::span<const Tensor<T>> x) {
  const auto& res = *ctx.res;
  const std::int32_t nt = graph.num_types();
  HALO_EXPECTS(nt == static_cast<std::int32_t>(m_in.size()) &&
                   static_cast<std::int64_t>(x.size()) == nt &&
                   graph.relations.size() == m_rel.size(),
               "rgcn_conv: the graph's node types or relations differ from the layer's");
  for (std::int32_t t = 0; t < nt; ++t) {
    const auto ut = static_cast<std::size_t>(t);
    HALO_EXPECTS(graph.num_dst[ut] <= graph.num_src[ut] &&
                     (graph.num_src[ut] == 0 ||
                      (x[ut].rows() == graph.num_src[ut] && x[ut].cols() == m_in[ut])),
                 "rgcn_conv: type " + std::to_string(t) + "'s input must be num_src x in_width");
  }
  m_x = x;
  HeteroStageTimes* times = graph.times;
  timed(res, times, &HeteroStageTimes::feature_projection_s, [&] {
    if (m_num_bases > 0 && !m_rel.empty())  // W = coefficients x bases
      kernels::gemm(res, Trans::No, Trans::No, T(1), m_coef.value.view(), m_basis.value.view(),
                    T(0), m_w.view());
    for (std::int32_t t = 0; t < nt; ++t) {
      const auto ut = static_cast<std::size_t>(t);
      kernels::ensure_shape(res, m_y[ut], graph.num_dst[ut], m_out);
      if (graph.num_dst[ut] == 0) continue;
      if (zero_input(ut)) {  // zeros times the self weight
        kernels::fill(res, m_y[ut].span(), T(0));
        continue;
      }
      kernels::gemm(res, Trans::No, Trans::No, T(1), first_rows(x[ut], graph.num_dst[ut]),
                    m_self[ut].value.view(), T(0), m_y[ut].view());
    }
  });
  for (std::size_t r = 0; r < m_rel.size(); ++r) {
    const HeteroRelation<T>& rel = graph.relations[r];
    HALO_EXPECTS(rel.src_type == m_rel[r].first && rel.dst_type == m_rel[r].second,
                 "rgcn_conv: relation '" + rel.name + "' has other types than the layer's");
    const auto s = static_cast<std::size_t>(rel.src_type);
    const auto d = static_cast<std::size_t>(rel.dst_type);
    const std::int64_t nd = graph.num_dst[d];
    if (nd == 0 || zero_input(s)) continue;  // a zero type's messages are zeros
    HALO_EXPECTS(rel.adj.num_rows == nd && rel.adj.num_cols == graph.num_src[s],
                 "rgcn_conv: relation '" + rel.name + "' must be num_dst(dst) x num_src(src)");
    kernels::ensure_shape(res, m_agg[r], nd, m_in[s]);
    kernels::ensure_shape(res, m_msg[r], nd, m_out);
    timed(res, times, &HeteroStageTimes::neighbor_aggregation_s, [&] {
      if (graph.num_src[s] == 0)
        kernels::fill(res, m_agg[r].span(), T(0));
      else
        kernels::spmm(res, rel.adj, ConstMatrixView<T>(x[s].view()), m_agg[r].view(),
                      Aggregate::Mean);
    });
    timed(res, times, &HeteroStageTimes::feature_projection_s, [&] {
      kernels::gemm(res, Trans::No, Trans::No, T(1), ConstMatrixView<T>(m_agg[r].view()),
                    relation_weight(r), T(0), m_msg[r].view());
    });
  }
  timed(res, times, &HeteroStageTimes::semantic_aggregation_s, [&] {
    for (std::size_t r = 0; r < m_rel.size(); ++r) {
      const auto d = static_cast<std::size_t>(graph.relations[r].dst_type);
      if (graph.num_dst[d] == 0 || zero_input(static_cast<std::size_t>(m_rel[r].first))) continue;
      kernels::axpy(res, T(1), kernels::ConstSpan<T>(m_msg[r].span()), m_y[d].span());
    }
    for (std::int32_t t = 0; t < nt; ++t)
      if (graph.num_dst[static_cast<std::size_t>(t)] > 0)
        kernels::add_bias(res, m_y[static_cast<std::size_t>(t)].view(),
                          kernels::ConstSpan<T>(m_bias[static_cast<std::size_t>(t)].value.span()));
  });
  return m_y;
}

template <class T>
const std::vector<Tensor<T>>& RGCNConv<T>::backward(const Context& ctx,
                                                    const HeteroGraphView<T>& graph,
                                                    std::span<const Tensor<T>> dy,
                                                    bool need_input_grad) {
  const auto& res = *ctx.res;
  const std::int32_t nt = graph.num_types();
  HALO_EXPECTS(
      m_x.size() == static_cast<std::size_t>(nt) && dy.size() == static_cast<std::size_t>(nt),
      "rgcn_conv: backward needs a forward and one gradient per node type");
  HeteroStageTimes* times = graph.times;
  // Semantic aggregation's adjoint: every relation and the self term see dy of their type.
  timed(res, times, &HeteroStageTimes::semantic_aggregation_s, [&] {
    for (std::int32_t t = 0; t < nt; ++t) {
      const auto ut = static_cast<std::size_t>(t);
      HALO_EXPECTS(
          dy[ut].rows() == graph.num_dst[ut] && (graph.num_dst[ut] == 0 || dy[ut].cols() == m_out),
          "rgcn_conv: dy of type " + std::to_string(t) + " must be num_dst x out");
      if (graph.num_dst[ut] == 0)
        kernels::fill(res, m_bias[ut].grad.span(), T(0));
      else
        kernels::column_sum(res, ConstMatrixView<T>(dy[ut].view()), m_bias[ut].grad.span());
    }
  });
  timed(res, times, &HeteroStageTimes::feature_projection_s, [&] {
    for (std::int32_t t = 0; t < nt; ++t) {
      const auto ut = static_cast<std::size_t>(t);
      const std::int64_t nd = graph.num_dst[ut];
      if (nd == 0 || zero_input(ut)) {
        kernels::fill(res, m_self[ut].grad.span(), T(0));
      } else {
        kernels::gemm(res, Trans::Yes, Trans::No, T(1), first_rows(m_x[ut], nd),
                      ConstMatrixView<T>(dy[ut].view()), T(0), m_self[ut].grad.view());
      }
      if (!need_input_grad || zero_input(ut)) {
        m_dx[ut] = Tensor<T>();
        continue;
      }
      kernels::ensure_shape(res, m_dx[ut], graph.num_src[ut], m_in[ut]);
      kernels::fill(res, m_dx[ut].span(), T(0));
      if (nd > 0)
        kernels::gemm(res, Trans::No, Trans::Yes, T(1), ConstMatrixView<T>(dy[ut].view()),
                      ConstMatrixView<T>(m_self[ut].value.view()), T(0),
                      MatrixView<T>{m_dx[ut].data(), nd, m_in[ut]});
    }
  });
  for (std::size_t r = 0; r < m_rel.size(); ++r) {
    const HeteroRelation<T>& rel = graph.relations[r];
    const auto s = static_cast<std::size_t>(rel.src_type);
    const auto d = static_cast<std::size_t>(rel.dst_type);
    const std::int64_t nd = graph.num_dst[d];
    const std::int64_t in = m_in[s];
    MatrixView<T> dw =
        m_num_bases == 0
            ? m_weight[r].grad.view()
            : MatrixView<T>{m_dw.data() + static_cast<std::int64_t>(r) * in * m_out, in, m_out};
    if (nd == 0 || zero_input(s)) {
      kernels::fill(res, kernels::Span<T>(dw.data, in * m_out), T(0));
      continue;
    }
    timed(res, times, &HeteroStageTimes::feature_projection_s, [&] {
      kernels::gemm(res, Trans::Yes, Trans::No, T(1), ConstMatrixView<T>(m_agg[r].view()),
                    ConstMatrixView<T>(dy[d].view()), T(0), dw);
      if (need_input_grad) {
        kernels::ensure_shape(res, m_agg[r], nd, in);  // reused: d(mean_r x_src)
        kernels::gemm(res, Trans::No, Trans::Yes, T(1), ConstMatrixView<T>(dy[d].view()),
                      relation_weight(r), T(0), m_agg[r].view());
      }
    });
    if (!need_input_grad || graph.num_src[s] == 0) continue;
    timed(res, times, &HeteroStageTimes::neighbor_aggregation_s, [&] {
      kernels::spmm_transposed_accumulate(res, rel.adj, ConstMatrixView<T>(m_agg[r].view()),
                                          m_dx[s].view(), Aggregate::Mean);
    });
  }
  if (m_num_bases > 0 && !m_rel.empty()) {
    timed(res, times, &HeteroStageTimes::feature_projection_s, [&] {
      // W = A V: dV = A^T dW, dA = dW V^T.
      kernels::gemm(res, Trans::Yes, Trans::No, T(1), ConstMatrixView<T>(m_coef.value.view()),
                    ConstMatrixView<T>(m_dw.view()), T(0), m_basis.grad.view());
      kernels::gemm(res, Trans::No, Trans::Yes, T(1), ConstMatrixView<T>(m_dw.view()),
                    ConstMatrixView<T>(m_basis.value.view()), T(0), m_coef.grad.view());
    });
  }
  m_x = {};
  return m_dx;
}

template class RGCNConv<float>;
template class RGCNConv<double>;

}  // namespace halo::nn
