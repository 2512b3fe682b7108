// The HGT layer: forward against a plain double implementation of the paper's equations, every
// parameter's and input's gradient against finite differences, dropout keyed by global ids,
// stage times, and the checks of its graph.

#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/nn/hetero_model.hpp>
#include <halo/nn/hgt.hpp>
#include <halo/nn/optimizer.hpp>

#include "nn_helpers.hpp"
#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::nn_test {
namespace {

/// A small typed graph: 3 node types with fewer destinations than inputs (destinations first,
/// as in a sampled block), 4 relations: 1 -> 0, 0 -> 1, 2 -> 0 and 0 -> 0. Destination 1 of
/// types 0 and 1 has no incoming edge in any relation (random_graph leaves row 1 empty), and
/// type 2 has no incoming relation at all.
template <class T>
struct TypedGraph {
  std::vector<std::int64_t> num_src{8, 6, 5};
  std::vector<std::int64_t> num_dst{6, 4, 3};
  std::vector<std::pair<std::int32_t, std::int32_t>> relations{{1, 0}, {0, 1}, {2, 0}, {0, 0}};
  std::vector<CsrMatrix<NodeId, T>> adj;
  std::vector<NodeId> ids;  // explicit global ids (type offsets 0, 8, 14), when used

  explicit TypedGraph(std::uint64_t seed, std::vector<std::int64_t> src = {8, 6, 5},
                      std::vector<std::int64_t> dst = {6, 4, 3})
      : num_src(std::move(src)), num_dst(std::move(dst)) {
    for (std::size_t r = 0; r < relations.size(); ++r) {
      const auto [src, dst] = relations[r];
      adj.push_back(random_graph<T>(num_dst[dst], num_src[src], 0.45, seed + r, false));
    }
  }
  nn::HeteroGraphView<T> view(bool explicit_ids = false) {
    nn::HeteroGraphView<T> g;
    g.num_src = num_src;
    g.num_dst = num_dst;
    g.type_offset = {0, 8, 14};
    for (std::size_t r = 0; r < relations.size(); ++r)
      g.relations.push_back(
          {"rel" + std::to_string(r), relations[r].first, relations[r].second, adj[r].view()});
    if (explicit_ids) {
      ids.clear();
      for (std::size_t t = 0; t < 3; ++t)
        for (std::int64_t i = 0; i < num_src[t]; ++i)
          ids.push_back(static_cast<NodeId>(g.type_offset[t] + i));
      std::int64_t at = 0;
      for (std::size_t t = 0; t < 3; ++t) {
        g.source_ids.push_back({ids.data() + at, num_src[t]});
        at += num_src[t];
      }
    }
    return g;
  }
};

nn::HgtConfig config(std::int64_t heads, float dropout) {
  nn::HgtConfig c;
  c.in_widths = {4, 3, 4};  // types 0 and 2 match out_width: gated residuals; type 1 not
  c.relations = {{1, 0}, {0, 1}, {2, 0}, {0, 0}};
  c.out_width = 4;
  c.heads = heads;
  c.dropout = dropout;
  c.layer_id = 3;
  return c;
}

template <class T>
void randomize_parameters(nn::HeteroModule<T>& m, std::uint64_t seed) {
  for (auto* p : m.parameters()) randomize(p->value, seed++);
}

template <class T>
std::vector<Tensor<T>> random_inputs(const TypedGraph<T>& g, const nn::HgtConfig& c,
                                     std::uint64_t seed) {
  std::vector<Tensor<T>> x;
  for (std::size_t t = 0; t < 3; ++t)
    x.push_back(testing::random_matrix<T>(g.num_src[t], c.in_widths[t], seed + t));
  return x;
}

/// The layer's equations (see nn/hgt.hpp) as plain loops in double, without dropout.
template <class T>
std::vector<std::vector<double>> reference_forward(nn::HeteroModule<T>& layer,
                                                   const TypedGraph<T>& g, const nn::HgtConfig& c,
                                                   const std::vector<Tensor<T>>& x) {
  std::map<std::string, std::vector<double>> p;
  for (auto* param : layer.parameters()) p[param->name] = to_doubles(param->value);
  const std::int64_t w = c.out_width, heads = c.heads, d = w / heads;
  std::vector<std::vector<double>> keys, queries, values;
  for (std::size_t t = 0; t < 3; ++t) {
    const std::string s = ".t" + std::to_string(t);
    const auto xt = to_doubles(x[t]);
    const std::int64_t in = c.in_widths[t];
    keys.push_back(add_rows(matmul(xt, p["k_weight" + s], g.num_src[t], in, w), p["k_bias" + s]));
    values.push_back(add_rows(matmul(xt, p["v_weight" + s], g.num_src[t], in, w), p["v_bias" + s]));
    const std::vector<double> xd(xt.begin(), xt.begin() + g.num_dst[t] * in);
    queries.push_back(
        add_rows(matmul(xd, p["q_weight" + s], g.num_dst[t], in, w), p["q_bias" + s]));
  }
  // Per edge and head: the score and the message; then per destination the softmax over every
  // relation's edges.
  struct Edge {
    std::int64_t dst_row;
    std::vector<double> score;    // per head
    std::vector<double> message;  // w
  };
  std::vector<std::vector<Edge>> incoming(3);  // per destination type
  for (std::size_t r = 0; r < g.relations.size(); ++r) {
    const auto [src, dst] = g.relations[r];
    const std::string s = ".r" + std::to_string(r);
    const auto& att = p["att" + s];
    const auto& msg = p["msg" + s];
    const auto& prior = p["prior" + s];
    const auto& a = g.adj[r];
    for (std::int64_t i = 0; i < a.num_rows(); ++i) {
      for (std::int64_t e = a.indptr(i); e < a.indptr(i + 1); ++e) {
        const std::int64_t j = a.indices(e);
        Edge edge{i, std::vector<double>(heads), std::vector<double>(w)};
        for (std::int64_t h = 0; h < heads; ++h) {
          for (std::int64_t cc = 0; cc < d; ++cc) {
            double k = 0, m = 0;
            for (std::int64_t b = 0; b < d; ++b) {
              k += keys[src][j * w + h * d + b] * att[h * d * d + b * d + cc];
              m += values[src][j * w + h * d + b] * msg[h * d * d + b * d + cc];
            }
            edge.score[h] += k * queries[dst][i * w + h * d + cc];
            edge.message[h * d + cc] = m;
          }
          edge.score[h] *= prior[h] / std::sqrt(static_cast<double>(d));
        }
        incoming[dst].push_back(edge);
      }
    }
  }
  std::vector<std::vector<double>> out;
  for (std::size_t t = 0; t < 3; ++t) {
    const std::string s = ".t" + std::to_string(t);
    const std::int64_t rows = g.num_dst[t];
    std::vector<double> act(static_cast<std::size_t>(rows * w));
    for (std::int64_t i = 0; i < rows; ++i) {
      for (std::int64_t h = 0; h < heads; ++h) {
        double total = 0;
        for (const Edge& e : incoming[t])
          if (e.dst_row == i) total += std::exp(e.score[h]);
        for (const Edge& e : incoming[t])
          if (e.dst_row == i)
            for (std::int64_t cc = 0; cc < d; ++cc)
              act[i * w + h * d + cc] += std::exp(e.score[h]) / total * e.message[h * d + cc];
      }
    }
    for (double& v : act)
      v = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    auto y = add_rows(matmul(act, p["a_weight" + s], rows, w, w), p["a_bias" + s]);
    if (p.count("skip" + s) > 0) {
      const double gate = 1 / (1 + std::exp(-p["skip" + s][0]));
      const auto xt = to_doubles(x[t]);
      for (std::int64_t i = 0; i < rows * w; ++i) y[i] = gate * y[i] + (1 - gate) * xt[i];
    }
    out.push_back(y);
  }
  return out;
}

TEST(HgtConv, ForwardMatchesReference) {
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    for (const std::int64_t heads : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << heads << " heads");
      TypedGraph<T> g(5);
      const auto c = config(heads, 0.5f);  // eval mode: dropout off
      nn::HGTConv<T> layer(cpu(), c, 7, 0);
      randomize_parameters(layer, 100);
      const auto x = random_inputs(g, c, 200);
      const auto expected = reference_forward(layer, g, c, x);
      const auto view = g.view();
      const auto& y = layer.forward(eval_context(), view, x);
      ASSERT_EQ(y.size(), 3u);
      for (std::size_t t = 0; t < 3; ++t) {
        EXPECT_EQ(y[t].rows(), g.num_dst[t]);
        EXPECT_EQ(y[t].cols(), 4);
        EXPECT_TRUE(testing::all_close(y[t], expected[t], testing::rtol<T>(), testing::atol<T>()))
            << "node type " << t;
      }
    }
  });
}

/// Central differences of L = sum_t <y_t, R_t> against backward, for every parameter (sampled
/// when large) and every input; parameter gradients must not depend on need_input_grad.
void check_hetero_gradients(nn::HeteroModule<double>& module, const nn::Context& ctx,
                            const nn::HeteroGraphView<double>& graph,
                            std::vector<Tensor<double>>& x, std::uint64_t seed) {
  const auto& y0 = module.forward(ctx, graph, x);
  std::vector<Tensor<double>> r;
  std::vector<double> r_flat;
  for (std::size_t t = 0; t < y0.size(); ++t) {
    r.push_back(testing::random_matrix<double>(y0[t].rows(), y0[t].cols(), seed + t));
    const auto v = to_doubles(r.back());
    r_flat.insert(r_flat.end(), v.begin(), v.end());
  }
  module.backward(ctx, graph, r, /*need_input_grad=*/false);
  const auto params = module.parameters();
  std::vector<std::vector<double>> grads_without_dx;
  for (auto* p : params) grads_without_dx.push_back(to_doubles(p->grad));
  const auto& dx = module.backward(ctx, graph, r, /*need_input_grad=*/true);
  std::vector<std::vector<double>> dx_host;
  for (std::size_t t = 0; t < x.size(); ++t) {
    ASSERT_EQ(dx[t].rows(), x[t].rows());
    ASSERT_EQ(dx[t].cols(), x[t].cols());
    dx_host.push_back(to_doubles(dx[t]));
  }
  std::vector<std::vector<double>> grads;
  for (std::size_t k = 0; k < params.size(); ++k) {
    grads.push_back(to_doubles(params[k]->grad));
    EXPECT_EQ(grads[k], grads_without_dx[k]) << params[k]->name;
  }
  const auto objective = [&] {
    std::vector<double> flat;
    for (const auto& y : module.forward(ctx, graph, x)) {
      const auto v = to_doubles(y);
      flat.insert(flat.end(), v.begin(), v.end());
    }
    return ref::dot(flat, r_flat);
  };
  const double eps = 1e-6;
  const auto central_difference = [&](double& v) {
    const double saved = v;
    v = saved + eps;
    const double up = objective();
    v = saved - eps;
    const double down = objective();
    v = saved;
    return (up - down) / (2 * eps);
  };
  for (std::size_t k = 0; k < params.size(); ++k) {
    SCOPED_TRACE("parameter " + params[k]->name);
    std::vector<double> analytic, numeric;
    for (const std::int64_t i : sample_indices(params[k]->value.numel(), 12, seed + k)) {
      analytic.push_back(grads[k][static_cast<std::size_t>(i)]);
      numeric.push_back(central_difference(params[k]->value.data()[i]));
    }
    EXPECT_TRUE(testing::all_close(analytic, numeric, 1e-6, 1e-8));
  }
  for (std::size_t t = 0; t < x.size(); ++t) {
    SCOPED_TRACE("input of node type " + std::to_string(t));
    std::vector<double> analytic, numeric;
    for (std::int64_t i = 0; i < x[t].numel(); ++i) {
      analytic.push_back(dx_host[t][static_cast<std::size_t>(i)]);
      numeric.push_back(central_difference(x[t].data()[i]));
    }
    EXPECT_TRUE(testing::all_close(analytic, numeric, 1e-6, 1e-8));
  }
}

// One head with dropout, two heads without (each check runs a few thousand small passes).
TEST(HgtConv, GradientMatchesFiniteDifferences) {
  for (const auto& [heads, dropout] : {std::pair{1, 0.3f}, std::pair{2, 0.f}}) {
    SCOPED_TRACE(::testing::Message() << heads << " heads, dropout " << dropout);
    TypedGraph<double> g(11);
    const auto c = config(heads, dropout);
    nn::HGTConv<double> layer(cpu(), c, 3, 0);
    randomize_parameters(layer, 300);
    auto x = random_inputs(g, c, 400);
    check_hetero_gradients(layer, train_context(), g.view(), x, 500);
  }
}

// Type 2 has no rows at all (an empty input tensor; relation 2 -> 0 has no columns) and type 1
// no destinations (relation 0 -> 1 has no rows): outputs and gradients stay right.
TEST(HgtConv, HandlesTypesWithoutRows) {
  TypedGraph<double> g(23, {8, 6, 0}, {6, 0, 0});
  const auto c = config(2, 0.3f);
  nn::HGTConv<double> layer(cpu(), c, 3, 0);
  randomize_parameters(layer, 1000);
  auto x = random_inputs(g, c, 1100);
  x[2] = Tensor<double>();
  const auto expected = reference_forward(layer, g, c, x);
  const auto& y = layer.forward(eval_context(), g.view(), x);
  for (std::size_t t = 0; t < 3; ++t) {
    EXPECT_EQ(y[t].rows(), g.num_dst[t]);
    EXPECT_TRUE(testing::all_close(y[t], expected[t], 1e-10, 1e-12)) << "node type " << t;
  }
  check_hetero_gradients(layer, train_context(), g.view(), x, 1200);
}

// A type declared zero (set_zero_inputs; type 2, no gated residual, and type 0, gated): K, Q and
// V are their biases without a product, with the outputs and parameter gradients of the plain
// layer on zero rows, element for element; the zero type gets no input gradient.
TEST(HgtConv, ZeroInputsSkipTheirProductsWithTheSameResults) {
  for (const std::size_t zero_type : {std::size_t{0}, std::size_t{2}}) {
    SCOPED_TRACE("zero type " + std::to_string(zero_type));
    TypedGraph<double> g(29);
    const auto c = config(2, 0.3f);
    nn::HGTConv<double> plain(cpu(), c, 3, 0), skipping(cpu(), c, 3, 0);
    randomize_parameters(plain, 1300);
    randomize_parameters(skipping, 1300);
    std::vector<bool> zero(3, false);
    zero[zero_type] = true;
    skipping.set_zero_inputs(zero);
    auto x = random_inputs(g, c, 1400);
    x[zero_type] = Tensor<double>::zeros(cpu(), g.num_src[zero_type], c.in_widths[zero_type]);
    const auto& y_plain = plain.forward(train_context(), g.view(), x);
    const auto& y_skip = skipping.forward(train_context(), g.view(), x);
    std::vector<Tensor<double>> dy;
    for (std::size_t t = 0; t < 3; ++t) {
      EXPECT_EQ(to_doubles(y_skip[t]), to_doubles(y_plain[t])) << "type " << t;
      dy.push_back(testing::random_matrix<double>(g.num_dst[t], c.out_width, 1500 + t));
    }
    const auto& dx_plain = plain.backward(train_context(), g.view(), dy, true);
    const auto& dx_skip = skipping.backward(train_context(), g.view(), dy, true);
    for (std::size_t t = 0; t < 3; ++t) {
      if (t == zero_type)
        EXPECT_EQ(dx_skip[t].numel(), 0) << "no input gradient for a zero type";
      else
        EXPECT_EQ(to_doubles(dx_skip[t]), to_doubles(dx_plain[t])) << "type " << t;
    }
    const auto p_plain = plain.parameters(), p_skip = skipping.parameters();
    ASSERT_EQ(p_plain.size(), p_skip.size());
    for (std::size_t i = 0; i < p_plain.size(); ++i)
      EXPECT_EQ(to_doubles(p_skip[i]->grad), to_doubles(p_plain[i]->grad)) << p_plain[i]->name;
  }
}

TEST(HgtConv, DropoutIsKeyedByGlobalIds) {
  TypedGraph<double> g(13);
  const auto c = config(2, 0.5f);
  nn::HGTConv<double> layer(cpu(), c, 3, 0);
  const auto x = random_inputs(g, c, 600);
  const auto outputs = [&](const nn::HeteroGraphView<double>& view, const nn::Context& ctx) {
    std::vector<std::vector<double>> out;
    for (const auto& y : layer.forward(ctx, view, x)) out.push_back(to_doubles(y));
    return out;
  };
  const auto implicit = outputs(g.view(), train_context());
  // The same ids spelled out give the same masks; other ids (a shift by one) other masks.
  EXPECT_EQ(outputs(g.view(/*explicit_ids=*/true), train_context()), implicit);
  auto partly = g.view(/*explicit_ids=*/true);  // ids for type 0 only: the others by offset
  partly.source_ids[1] = {};
  partly.source_ids.pop_back();
  EXPECT_EQ(outputs(partly, train_context()), implicit);
  auto shifted = g.view();
  shifted.type_offset = {1, 9, 15};
  EXPECT_NE(outputs(shifted, train_context()), implicit);
  EXPECT_NE(outputs(g.view(), train_context(/*epoch=*/1)), implicit);
  const auto eval = outputs(g.view(), eval_context());
  EXPECT_NE(eval, implicit);
  EXPECT_EQ(outputs(g.view(), eval_context()), eval);
}

TEST(HgtConv, RecordsStageTimesAndReusesBuffers) {
  TypedGraph<double> g(17);
  const auto c = config(2, 0.f);
  nn::HGTConv<double> layer(cpu(), c, 3, 0);
  const auto x = random_inputs(g, c, 700);
  nn::HeteroStageTimes times;
  auto view = g.view();
  view.times = &times;
  const double* out0 = layer.forward(train_context(), view, x)[0].data();
  std::vector<Tensor<double>> dy;
  for (std::size_t t = 0; t < 3; ++t)
    dy.push_back(testing::random_matrix<double>(g.num_dst[t], 4, 800 + t));
  const double* dx0 = layer.backward(train_context(), view, dy, true)[0].data();
  EXPECT_GT(times.feature_projection_s, 0);
  EXPECT_GT(times.neighbor_aggregation_s, 0);
  EXPECT_GT(times.semantic_aggregation_s, 0);
  EXPECT_EQ(times.subgraph_build_s, 0) << "the task's stage, not the layer's";
  // A second pass of the same shapes keeps its storage.
  EXPECT_EQ(layer.forward(train_context(), view, x)[0].data(), out0);
  EXPECT_EQ(layer.backward(train_context(), view, dy, true)[0].data(), dx0);
  EXPECT_TRUE(layer.backward(train_context(), view, dy, false)[0].empty());
}

// Papers whose label is the sign of their authors' first feature summed, with the same number
// of uninformative term neighbours: one layer (2 outputs as logits) trained with Adam must
// separate them through the author relation (untrained: 40 of 64; 50 steps already give 64).
TEST(HgtConv, LearnsALabelCarriedByOneRelation) {
  const std::int64_t papers = 64, authors = 48, terms = 48;
  std::vector<Row> writes(papers), has_term(papers);
  for (int i = 0; i < papers; ++i) {
    writes[i].emplace_back(i % authors, 1.0);
    if (i % 5 != 0) writes[i].emplace_back((7 * i + 3) % authors, 1.0);
    has_term[i].emplace_back((5 * i + 1) % terms, 1.0);
    has_term[i].emplace_back((11 * i + 2) % terms, 1.0);
  }
  const auto by_author = csr_from_rows<float>(authors, writes, false);
  const auto by_term = csr_from_rows<float>(terms, has_term, false);
  nn::HeteroGraphView<float> g;
  g.num_src = {papers, authors, terms};
  g.num_dst = {papers, 0, 0};
  g.relations = {{"writes", 1, 0, by_author.view()}, {"has_term", 2, 0, by_term.view()}};
  nn::HgtConfig c;
  c.in_widths = {4, 4, 4};
  c.relations = {{1, 0}, {2, 0}};
  c.out_width = 2;
  c.heads = 1;
  std::vector<Tensor<float>> x;
  x.push_back(testing::random_matrix<float>(papers, 4, 1500));
  x.push_back(testing::random_matrix<float>(authors, 4, 1501));
  x.push_back(testing::random_matrix<float>(terms, 4, 1502));
  std::vector<std::int32_t> labels;
  std::vector<std::int32_t> rows;
  for (int i = 0; i < papers; ++i) {
    double signal = 0;
    for (const auto& [a, w] : writes[i]) signal += x[1](a, 0);
    labels.push_back(signal > 0 ? 1 : 0);
    rows.push_back(i);
  }
  nn::HGTConv<float> layer(cpu(), c, 5, 0);
  nn::Adam<float> adam(cpu(), layer.parameters(), {.lr = 0.03});
  std::vector<Tensor<float>> dy(3);
  dy[0] = Tensor<float>(cpu(), papers, 2);
  const kernels::Span<const std::int32_t> label_span{labels.data(), papers};
  const kernels::Span<const std::int32_t> row_span{rows.data(), papers};
  for (int step = 0; step < 100; ++step) {
    const auto& y = layer.forward(train_context(step), g, x);
    kernels::log_softmax_nll_backward<std::int32_t, float>(cpu(), y[0].view(), label_span, row_span,
                                                           dy[0].view());
    layer.backward(train_context(step), g, dy, false);
    adam.step(cpu());
  }
  const auto& y = layer.forward(eval_context(), g, x);
  const std::int64_t correct =
      kernels::count_correct<std::int32_t, float>(cpu(), y[0].view(), label_span, row_span);
  EXPECT_GE(correct, 58) << "of " << papers;
}

// The HGT model, with its featureless type zero-input: papers whose label is the sign of their
// OWN first feature, each written by 2 of 6 authors (every author ~21 papers, so the 2-hop
// paper -> author -> paper path dilutes a paper's own signal ~10-fold). The target's own
// representation must reach the logits (the last layer's gated residual, then the classifier):
// before, the last layer was a 2-wide HGT without residual and stayed near chance on this.
TEST(HeteroModel, HgtLogitsSeeTheTargetsOwnFeatures) {
  const std::int64_t papers = 64, authors = 6;
  std::vector<Row> writes(papers), written(authors);
  for (int i = 0; i < papers; ++i)
    for (const int a : {i % authors, (5 * i + 1) % authors})
      if (writes[i].empty() || writes[i][0].first != a) writes[i].emplace_back(a, 1.0);
  for (int i = 0; i < papers; ++i)
    for (const auto& [a, w] : writes[i]) written[a].emplace_back(i, 1.0);
  const auto by_author = csr_from_rows<float>(authors, writes, false);
  const auto by_paper = csr_from_rows<float>(papers, written, false);
  nn::HeteroGraphView<float> g;
  g.num_src = {papers, authors};
  g.num_dst = {papers, authors};
  g.relations = {{"writes", 1, 0, by_author.view()}, {"written_by", 0, 1, by_paper.view()}};
  nn::HeteroSchema schema;
  schema.num_nodes = {papers, authors};
  schema.in_features = {4, 0};
  schema.relations = {{1, 0}, {0, 1}};
  schema.num_classes = 2;
  nn::HeteroModelConfig config;
  config.kind = nn::HeteroLayerKind::Hgt;
  config.hidden = 8;
  config.heads = 2;
  config.dropout = 0.f;
  config.featureless = nn::FeaturelessInput::Zero;
  nn::HeteroModel<float> model(cpu(), config, schema, 3);
  std::vector<Features<float>> x;
  x.emplace_back(testing::random_matrix<float>(papers, 4, 1600));
  x.emplace_back(Tensor<float>());
  const std::vector<const Features<float>*> inputs = {&x[0], &x[1]};
  const auto& x0 = std::get<Tensor<float>>(x[0]);
  std::vector<std::int32_t> labels, rows;
  for (int i = 0; i < papers; ++i) {
    labels.push_back(x0(i, 0) > 0 ? 1 : 0);
    rows.push_back(i);
  }
  nn::Adam<float> adam(cpu(), model.parameters(), {.lr = 0.03});
  const kernels::Span<const std::int32_t> label_span{labels.data(), papers};
  const kernels::Span<const std::int32_t> row_span{rows.data(), papers};
  Tensor<float> dlogits(cpu(), papers, 2);
  for (int step = 0; step < 150; ++step) {
    const auto& logits = model.forward(train_context(step), g, inputs);
    kernels::log_softmax_nll_backward<std::int32_t, float>(cpu(), logits.view(), label_span,
                                                           row_span, dlogits.view());
    model.backward(train_context(step), g, dlogits);
    adam.step(cpu());
  }
  const auto& logits = model.forward(eval_context(), g, inputs);
  const std::int64_t correct =
      kernels::count_correct<std::int32_t, float>(cpu(), logits.view(), label_span, row_span);
  EXPECT_GE(correct, 60) << "of " << papers;
}

/// Element-wise |got - expected| <= 1e-4 (1 + |expected|) for every tensor of two lists.
void expect_near(const Resources& res, const std::vector<Tensor<float>>& got,
                 const std::vector<Tensor<float>>& expected, const char* what) {
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t t = 0; t < got.size(); ++t)
    EXPECT_TRUE(testing::all_close(got[t].to_vector(res), expected[t].to_vector(cpu()), 1e-4, 1e-4))
        << what << " " << t;
}

// The same layer on a GPU: outputs, every parameter gradient and dL/dx match the CPU's.
TEST(HgtConvCuda, MatchesTheCpuLayer) {
  if (kernels::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device";
  const Resources gpu(kernels::Device::Cuda);
  TypedGraph<float> g(29);
  const auto c = config(2, 0.3f);
  nn::HGTConv<float> host(cpu(), c, 7, 0), device(gpu, c, 7, 0);
  const auto x = random_inputs(g, c, 1300);
  std::vector<Tensor<float>> x_d, dy, dy_d;
  for (std::size_t t = 0; t < 3; ++t) {
    x_d.push_back(x[t].copy_to(gpu, kernels::Device::Cuda));
    dy.push_back(testing::random_matrix<float>(g.num_dst[t], 4, 1400 + t));
    dy_d.push_back(dy.back().copy_to(gpu, kernels::Device::Cuda));
  }
  std::vector<CsrMatrix<NodeId, float>> adj_d;
  for (const auto& a : g.adj) adj_d.push_back(a.copy_to(gpu, kernels::Device::Cuda));
  auto view_d = g.view();
  for (std::size_t r = 0; r < adj_d.size(); ++r) view_d.relations[r].adj = adj_d[r].view();
  const nn::Context on_gpu{&gpu, /*training=*/true, 1234, 0, 0};
  expect_near(gpu, device.forward(on_gpu, view_d, x_d), host.forward(train_context(), g.view(), x),
              "output of node type");
  expect_near(gpu, device.backward(on_gpu, view_d, dy_d, true),
              host.backward(train_context(), g.view(), dy, true), "dL/dx of node type");
  const auto hp = host.parameters(), dp = device.parameters();
  ASSERT_EQ(hp.size(), dp.size());
  for (std::size_t k = 0; k < hp.size(); ++k)
    EXPECT_TRUE(
        testing::all_close(dp[k]->grad.to_vector(gpu), hp[k]->grad.to_vector(cpu()), 1e-4, 1e-4))
        << hp[k]->name;
}

TEST(HgtConv, RejectsMismatchedGraphsAndInputs) {
  EXPECT_THROW(nn::HGTConv<double>(cpu(), config(3, 0.f), 1, 0), LogicError)
      << "4 columns do not split into 3 heads";
  auto bad_relation = config(2, 0.f);
  bad_relation.relations.push_back({0, 3});
  EXPECT_THROW(nn::HGTConv<double>(cpu(), bad_relation, 1, 0), LogicError);
  TypedGraph<double> g(19);
  const auto c = config(2, 0.f);
  nn::HGTConv<double> layer(cpu(), c, 3, 0);
  const auto x = random_inputs(g, c, 900);
  std::vector<Tensor<double>> dy;
  EXPECT_THROW(layer.backward(train_context(), g.view(), dy, true), LogicError)
      << "backward before forward";
  auto swapped = g.view();
  std::swap(swapped.relations[0], swapped.relations[1]);
  EXPECT_THROW(layer.forward(train_context(), swapped, x), LogicError);
  auto fewer = g.view();
  fewer.relations.pop_back();
  EXPECT_THROW(layer.forward(train_context(), fewer, x), LogicError);
  auto narrow = random_inputs(g, c, 900);
  narrow[1] = testing::random_matrix<double>(6, 4, 1);
  EXPECT_THROW(layer.forward(train_context(), g.view(), narrow), LogicError);
}

}  // namespace
}  // namespace halo::nn_test
