// R-GCN and the heterogeneous model: forward against a dense reference in double, every
// backward against central differences, stage timing, edge cases (a type without incoming
// relations, a type without destinations, empty rows).

#include <algorithm>
#include <cmath>
#include <functional>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

#include <halo/nn/hetero_model.hpp>
#include <halo/nn/rgcn.hpp>

#include "nn_helpers.hpp"

namespace halo::nn_test {
namespace {

using Csr = CsrMatrix<NodeId, double>;

/// Three node types; relations 0 -> 1, 1 -> 0, 0 -> 0 and 2 -> 0 (type 2 receives nothing).
/// `block`: fewer destinations than sources (type 0: 3 of 5, type 2: none).
struct HeteroCase {
  std::vector<std::int64_t> num_src = {5, 4, 3};
  std::vector<std::int64_t> num_dst;
  std::vector<std::pair<std::int32_t, std::int32_t>> rel = {{0, 1}, {1, 0}, {0, 0}, {2, 0}};
  std::vector<Csr> adj;
  nn::HeteroGraphView<double> view;

  explicit HeteroCase(bool block) {
    num_dst = block ? std::vector<std::int64_t>{3, 4, 0} : num_src;
    for (std::size_t r = 0; r < rel.size(); ++r)
      adj.push_back(random_graph<double>(num_dst[rel[r].second], num_src[rel[r].first], 0.5, 40 + r,
                                         /*weighted=*/false));
    view.num_src = num_src;
    view.num_dst = num_dst;
    view.type_offset = {0, 5, 9};
    for (std::size_t r = 0; r < rel.size(); ++r)
      view.relations.push_back(
          {std::string("r").append(std::to_string(r)), rel[r].first, rel[r].second, adj[r].view()});
  }
};

std::vector<Tensor<double>> random_inputs(const HeteroCase& c, const std::vector<std::int64_t>& in,
                                          std::uint64_t seed) {
  std::vector<Tensor<double>> x;
  for (std::size_t t = 0; t < in.size(); ++t)
    x.push_back(testing::random_matrix<double>(c.num_src[t], in[t], seed + t));
  return x;
}

/// The R-GCN output of type t in double from the layer's own parameter values.
std::vector<std::vector<double>> reference(const HeteroCase& c, nn::RGCNConv<double>& layer,
                                           const std::vector<Tensor<double>>& x,
                                           const std::vector<std::int64_t>& in, std::int64_t out,
                                           int bases) {
  const auto params = layer.parameters();
  const std::size_t nt = in.size();
  std::vector<std::vector<double>> y(nt);
  for (std::size_t t = 0; t < nt; ++t) {
    const std::int64_t nd = c.num_dst[t];
    std::vector<double> xt = to_doubles(x[t]);
    xt.resize(static_cast<std::size_t>(nd * in[t]));  // the destinations: the first rows
    y[t] = add_rows(matmul(xt, to_doubles(params[t]->value), nd, in[t], out),
                    to_doubles(params[nt + t]->value));
  }
  for (std::size_t r = 0; r < c.rel.size(); ++r) {
    const auto [s, d] = c.rel[r];
    std::vector<double> w;
    if (bases == 0) {
      w = to_doubles(params[2 * nt + r]->value);
    } else {  // W_r = sum_b a_rb V_b
      const auto v = to_doubles(params[2 * nt]->value);
      const auto a = to_doubles(params[2 * nt + 1]->value);
      w.assign(static_cast<std::size_t>(in[s] * out), 0.0);
      for (int b = 0; b < bases; ++b)
        for (std::size_t i = 0; i < w.size(); ++i) w[i] += a[r * bases + b] * v[b * w.size() + i];
    }
    const auto agg = matmul(dense_adjacency(c.adj[r], /*mean=*/true), to_doubles(x[s]),
                            c.num_dst[d], c.num_src[s], in[s]);
    y[d] = add(y[d], matmul(agg, w, c.num_dst[d], in[s], out));
  }
  return y;
}

/// L = sum_t sum(y_t ⊙ R_t).
double loss(const std::vector<Tensor<double>>& y, const std::vector<Tensor<double>>& r) {
  double l = 0;
  for (std::size_t t = 0; t < y.size(); ++t) {
    const auto a = to_doubles(y[t]);
    const auto b = to_doubles(r[t]);
    for (std::size_t i = 0; i < a.size(); ++i) l += a[i] * b[i];
  }
  return l;
}

/// Central differences of `f` with respect to (sampled) elements of `t` against `grad`.
void check_fd(Tensor<double>& t, const std::vector<double>& grad, const std::function<double()>& f,
              const std::string& what, std::uint64_t seed) {
  ASSERT_EQ(static_cast<std::int64_t>(grad.size()), t.numel()) << what;
  const double eps = 1e-6;
  for (const std::int64_t i : sample_indices(t.numel(), 40, seed)) {
    const double v = t.data()[i];
    t.data()[i] = v + eps;
    const double up = f();
    t.data()[i] = v - eps;
    const double down = f();
    t.data()[i] = v;
    const double fd = (up - down) / (2 * eps);
    EXPECT_NEAR(grad[static_cast<std::size_t>(i)], fd, 1e-6 * (1 + std::abs(fd)))
        << what << " element " << i;
  }
}

void check_layer(bool block, int bases) {
  const HeteroCase c(block);
  const std::vector<std::int64_t> in =
      bases > 0 ? std::vector<std::int64_t>{3, 3, 3} : std::vector<std::int64_t>{3, 2, 4};
  const std::int64_t out = 2;
  nn::RGCNConv<double> layer(cpu(), in, out, c.rel, bases, 7, 100);
  for (auto* p : layer.parameters()) randomize(p->value, 1000 + p->value.numel());
  std::vector<Tensor<double>> x = random_inputs(c, in, 50);
  const auto ctx = train_context();
  // Forward against the dense reference.
  const auto& y = layer.forward(ctx, c.view, x);
  const auto want = reference(c, layer, x, in, out, bases);
  ASSERT_EQ(y.size(), 3u);
  for (std::size_t t = 0; t < 3; ++t) {
    ASSERT_EQ(y[t].rows(), c.num_dst[t]);
    EXPECT_TRUE(testing::all_close(to_doubles(y[t]), want[t], 1e-12, 1e-12)) << "type " << t;
  }
  std::vector<Tensor<double>> r;
  for (std::size_t t = 0; t < 3; ++t)
    r.push_back(testing::random_matrix<double>(c.num_dst[t], out, 300 + t));
  const auto& dx = layer.backward(ctx, c.view, r, /*need_input_grad=*/true);
  std::vector<std::vector<double>> grads;
  for (auto* p : layer.parameters()) grads.push_back(to_doubles(p->grad));
  std::vector<std::vector<double>> dxs;
  for (const auto& d : dx) dxs.push_back(to_doubles(d));
  const auto f = [&] { return loss(layer.forward(ctx, c.view, x), r); };
  const auto params = layer.parameters();
  for (std::size_t i = 0; i < params.size(); ++i)
    check_fd(params[i]->value, grads[i], f, params[i]->name, 5 + i);
  for (std::size_t t = 0; t < 3; ++t) {
    ASSERT_EQ(dx[t].rows(), c.num_src[t]);
    check_fd(x[t], dxs[t], f, "input of type " + std::to_string(t), 9 + t);
  }
  // The parameter gradients do not depend on need_input_grad.
  (void)layer.forward(ctx, c.view, x);
  const auto& none = layer.backward(ctx, c.view, r, /*need_input_grad=*/false);
  for (const auto& d : none) EXPECT_EQ(d.numel(), 0);
  for (std::size_t i = 0; i < params.size(); ++i)
    EXPECT_EQ(to_doubles(params[i]->grad), grads[i]) << params[i]->name;
}

TEST(RGCNConv, MatchesReferenceAndFiniteDifferences) { check_layer(false, 0); }
TEST(RGCNConv, BlockWithFewerDestinations) { check_layer(true, 0); }
TEST(RGCNConv, BasisDecomposition) { check_layer(false, 2); }
TEST(RGCNConv, BasisDecompositionOnABlock) { check_layer(true, 3); }

TEST(RGCNConv, RecordsItsStages) {
  const HeteroCase c(false);
  nn::RGCNConv<double> layer(cpu(), {3, 3, 3}, 2, c.rel, 0, 7, 100);
  const auto x = random_inputs(c, {3, 3, 3}, 50);
  nn::HeteroStageTimes times;
  nn::HeteroGraphView<double> view = c.view;
  view.times = &times;
  (void)layer.forward(train_context(), view, x);
  EXPECT_GT(times.feature_projection_s, 0);
  EXPECT_GT(times.neighbor_aggregation_s, 0);
  EXPECT_GT(times.semantic_aggregation_s, 0);
  EXPECT_EQ(times.subgraph_build_s, 0);  // the task's stage, not the layer's
}

// A type declared zero (set_zero_inputs): the layer skips its self product and the relations
// from it, and gives the same outputs and parameter gradients as the plain layer on zero rows,
// element for element (the skipped terms are exact zeros), on a whole graph and on a block; the
// zero type gets no input gradient, the others the same one.
TEST(RGCNConv, ZeroInputsSkipTheirProductsWithTheSameResults) {
  for (const bool block : {false, true}) {
    for (const int bases : {0, 2}) {
      SCOPED_TRACE(std::string(block ? "block" : "whole graph") + " bases " +
                   std::to_string(bases));
      const HeteroCase c(block);
      nn::RGCNConv<double> plain(cpu(), {3, 3, 3}, 2, c.rel, bases, 7, 100);
      nn::RGCNConv<double> skipping(cpu(), {3, 3, 3}, 2, c.rel, bases, 7, 100);
      skipping.set_zero_inputs({false, true, false});  // type 1 feeds relation 1 (1 -> 0)
      auto x = random_inputs(c, {3, 3, 3}, 50);
      x[1] = Tensor<double>::zeros(cpu(), c.num_src[1], 3);
      const auto& y_plain = plain.forward(train_context(), c.view, x);
      const auto& y_skip = skipping.forward(train_context(), c.view, x);
      std::vector<Tensor<double>> dy;
      for (std::size_t t = 0; t < 3; ++t) {
        EXPECT_EQ(to_doubles(y_skip[t]), to_doubles(y_plain[t])) << "type " << t;
        dy.push_back(testing::random_matrix<double>(c.num_dst[t], 2, 90 + t));
      }
      const auto& dx_plain = plain.backward(train_context(), c.view, dy, true);
      const auto& dx_skip = skipping.backward(train_context(), c.view, dy, true);
      EXPECT_EQ(to_doubles(dx_skip[0]), to_doubles(dx_plain[0]));
      EXPECT_EQ(to_doubles(dx_skip[2]), to_doubles(dx_plain[2]));
      EXPECT_EQ(dx_skip[1].numel(), 0) << "no input gradient for a zero type";
      const auto p_plain = plain.parameters(), p_skip = skipping.parameters();
      ASSERT_EQ(p_plain.size(), p_skip.size());
      for (std::size_t i = 0; i < p_plain.size(); ++i)
        EXPECT_EQ(to_doubles(p_skip[i]->grad), to_doubles(p_plain[i]->grad)) << p_plain[i]->name;
    }
  }
}

TEST(RGCNConv, RejectsMismatchedGraphs) {
  const HeteroCase c(false);
  EXPECT_THROW(nn::RGCNConv<double>(cpu(), {3, 2, 4}, 2, c.rel, 2, 7, 100), LogicError);
  nn::RGCNConv<double> layer(cpu(), {3, 3, 3}, 2, c.rel, 0, 7, 100);
  auto x = random_inputs(c, {3, 3, 2}, 50);  // type 2 too narrow
  EXPECT_THROW((void)layer.forward(train_context(), c.view, x), LogicError);
}

// ---- the model: projections, embeddings, layers, dropout, ReLU ------------------------------

// FeaturelessInput::Auto: a learnable embedding for a featureless type with fewer nodes than the
// target type (by the whole graph's counts where a part's schema has them), zeros for the others;
// Embedding and Zero whatever the counts; a type with features never has one.
TEST(HeteroModel, AutoEmbedsTheFeaturelessTypesSmallerThanTheTarget) {
  nn::HeteroSchema schema;
  schema.type_names = {"paper", "author", "subject", "term", "venue"};
  schema.num_nodes = {40, 70, 6, 40, 3};
  schema.in_features = {5, 0, 0, 0, 2};
  schema.relations = {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {0, 1}};
  schema.target_type = 0;
  schema.num_classes = 2;
  using nn::FeaturelessInput;
  const auto embeds = [&](FeaturelessInput input, const nn::HeteroSchema& s) {
    std::vector<bool> v;
    for (std::int32_t t = 0; t < 5; ++t) v.push_back(nn::learns_embedding(input, s, t));
    return v;
  };
  // Fewer than the 40 targets: the 6 subjects; not the 70 authors nor the 40 terms (as many).
  EXPECT_EQ(embeds(FeaturelessInput::Auto, schema),
            (std::vector<bool>{false, false, true, false, false}));
  EXPECT_EQ(embeds(FeaturelessInput::Embedding, schema),
            (std::vector<bool>{false, true, true, true, false}));
  EXPECT_EQ(embeds(FeaturelessInput::Zero, schema), std::vector<bool>(5, false));
  // A part's rows (here: more subjects than papers held locally) decide nothing: the whole
  // graph's counts do, so that every rank builds the same model.
  nn::HeteroSchema part = schema;
  part.num_nodes = {4, 2, 6, 1, 3};
  part.global_nodes = schema.num_nodes;
  EXPECT_EQ(embeds(FeaturelessInput::Auto, part), embeds(FeaturelessInput::Auto, schema));
  // The model holds exactly those tables, each a row per node.
  for (const FeaturelessInput input :
       {FeaturelessInput::Auto, FeaturelessInput::Embedding, FeaturelessInput::Zero}) {
    nn::HeteroModelConfig config;
    config.hidden = 4;
    config.featureless = input;
    nn::HeteroModel<float> model(cpu(), config, schema, 3);
    std::vector<std::string> names;
    for (auto* e : model.embeddings()) names.push_back(e->name());
    std::vector<std::string> want;
    for (std::int32_t t = 0; t < 5; ++t)
      if (nn::learns_embedding(input, schema, t))
        want.push_back("embedding_" + schema.type_names[static_cast<std::size_t>(t)]);
    EXPECT_EQ(names, want) << nn::to_string(input);
    EXPECT_EQ(nn::parse_featureless_input(nn::to_string(input)), input);
  }
  EXPECT_EQ(nn::HeteroModelConfig{}.featureless, FeaturelessInput::Auto);
  EXPECT_THROW((void)nn::parse_featureless_input("random"), LogicError);
}

TEST(HeteroModel, FiniteDifferencesThroughEveryPart) {
  for (const int bases : {0, 2, -1}) {  // -1: HGT (its layers and the classifier)
    const HeteroCase c(false);
    nn::HeteroSchema schema;
    schema.num_nodes = c.num_src;
    schema.in_features = {4, 0, 3};  // type 1 featureless: an embedding
    schema.relations = c.rel;
    schema.target_type = 0;
    schema.num_classes = 3;
    nn::HeteroModelConfig config;
    config.hidden = 4;
    config.num_layers = 2;
    config.dropout = 0.25f;
    config.num_bases = std::max(bases, 0);
    config.kind = bases < 0 ? nn::HeteroLayerKind::Hgt : nn::HeteroLayerKind::Rgcn;
    config.heads = 2;
    config.featureless = nn::FeaturelessInput::Embedding;
    nn::HeteroModel<double> model(cpu(), config, schema, 11);
    for (auto* p : model.parameters()) randomize(p->value, 2000 + p->value.numel());
    // Sparse features on type 0 (empty rows included), dense ones on type 2.
    std::vector<Features<double>> x;
    x.emplace_back(random_graph<double>(5, 4, 0.6, 77, /*weighted=*/true));
    x.emplace_back(Tensor<double>());
    x.emplace_back(testing::random_matrix<double>(3, 3, 78));
    const std::vector<const Features<double>*> inputs = {&x[0], &x[1], &x[2]};
    const auto ctx = train_context(/*epoch=*/3);  // dropout active, a fixed mask per epoch
    const Tensor<double> r = testing::random_matrix<double>(5, 3, 79);
    const auto f = [&] {
      const auto& logits = model.forward(ctx, c.view, inputs);
      const auto a = to_doubles(logits);
      const auto b = to_doubles(r);
      double l = 0;
      for (std::size_t i = 0; i < a.size(); ++i) l += a[i] * b[i];
      return l;
    };
    const double l0 = f();
    model.backward(ctx, c.view, r);
    // Dropout changes the output (the mask is applied) but not between two passes.
    EXPECT_EQ(f(), l0);
    const auto params = model.parameters();
    std::vector<std::vector<double>> grads;
    for (auto* p : params) grads.push_back(to_doubles(p->grad));
    for (std::size_t i = 0; i < params.size(); ++i)
      check_fd(params[i]->value, grads[i], f, params[i]->name, 20 + i);
    ASSERT_EQ(model.embeddings().size(), 1u);
    nn::SparseEmbedding<double>& e = *model.embeddings()[0];
    check_fd(e.table(), to_doubles(e.gradient()), f, "embedding", 31);
    // Without training the model is deterministic and drops nothing.
    const auto& eval = model.forward(eval_context(), c.view, inputs);
    EXPECT_EQ(eval.rows(), 5);
    EXPECT_EQ(eval.cols(), 3);
  }
}

}  // namespace
}  // namespace halo::nn_test
