// Model: construction, initialisation, gradients of the whole network with the loss against
// finite differences, parameter files, and a small end-to-end learning check.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/kernels/loss.hpp>
#include <halo/nn/model.hpp>
#include <halo/nn/optimizer.hpp>

#include "nn_helpers.hpp"
#include "support/testing.hpp"

namespace halo::nn_test {
namespace {

namespace fs = std::filesystem;
using nn::ModelConfig;
using nn::ModelKind;

ModelConfig config(ModelKind kind, int layers, std::int64_t in, std::int64_t hidden,
                   std::int64_t classes, float dropout = 0.5f) {
  ModelConfig c;
  c.heads = 3;  // GAT: small, but more than one head on both kinds of layer
  c.out_heads = 2;
  c.kind = kind;
  c.num_layers = layers;
  c.hidden = hidden;
  c.dropout = dropout;
  c.in_features = in;
  c.num_classes = classes;
  return c;
}

template <class T>
std::vector<std::vector<double>> parameter_values(nn::Model<T>& model) {
  std::vector<std::vector<double>> out;
  for (auto* p : model.parameters()) out.push_back(to_doubles(p->value));
  return out;
}

/// Labels in [0, classes), a pure function of the seed.
std::vector<std::int32_t> random_labels(std::int64_t n, std::int64_t classes, std::uint64_t seed) {
  namespace rng = kernels::rng;
  const auto stream = rng::stream_id(rng::kStreamSynthetic, seed, 0x1abe1);
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < n; ++i)
    labels.push_back(static_cast<std::int32_t>(rng::below(
        seed, stream, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(classes))));
  return labels;
}

/// The loss of the model's output on `rows`, and (when dlogits is given) its gradient.
template <class T>
struct Loss {
  Tensor<std::int32_t> labels;
  Tensor<std::int32_t> rows;

  Loss(const std::vector<std::int32_t>& label_values, const std::vector<std::int32_t>& row_values)
      : labels(Tensor<std::int32_t>::from_host(testing::host(), label_values)),
        rows(Tensor<std::int32_t>::from_host(testing::host(), row_values)) {}

  T value(const Tensor<T>& logits) const {
    return kernels::log_softmax_nll<std::int32_t, T>(cpu(), logits.view(), labels.span(),
                                                     rows.span());
  }
  void gradient(const Tensor<T>& logits, Tensor<T>& dlogits) const {
    kernels::ensure_shape(cpu(), dlogits, logits.rows(), logits.cols());
    kernels::log_softmax_nll_backward<std::int32_t, T>(cpu(), logits.view(), labels.span(),
                                                       rows.span(), dlogits.view());
  }
  double accuracy(const Tensor<T>& logits) const {
    return static_cast<double>(kernels::count_correct<std::int32_t, T>(
               cpu(), logits.view(), labels.span(), rows.span())) /
           static_cast<double>(rows.numel());
  }
};

/// Checks every parameter's gradient (a sample of the larger ones) of the model + loss against
/// central differences, in training mode with dropout active.
void check_model_gradients(nn::Model<double>& model, std::span<const nn::Adjacency<double>> graph,
                           const Features<double>& x, std::uint64_t seed) {
  const std::int64_t n = graph.back().num_rows;  // the logits' rows
  std::vector<std::int32_t> rows;
  for (std::int32_t i = 0; i < n; ++i)
    if (i % 3 != 1) rows.push_back(i);  // a subset: every third node is not in the loss
  const Loss<double> loss(random_labels(n, model.config().num_classes, seed), rows);
  const nn::Context ctx = train_context(/*epoch=*/seed);
  // Biases start at zero, so a row whose inputs are all zero (dropped, empty, isolated) would
  // sit exactly on ReLU's kink, where central differences see half a slope. Move them off it.
  std::uint64_t bias_seed = seed * 31;
  for (auto* p : model.parameters())
    if (p->name == "bias") randomize(p->value, bias_seed++);

  Tensor<double> dlogits;
  loss.gradient(model.forward(ctx, graph, x), dlogits);
  model.backward(ctx, graph, dlogits);
  const auto params = model.parameters();
  const auto names = model.parameter_names();
  std::vector<std::vector<double>> grads;
  for (auto* p : params) grads.push_back(to_doubles(p->grad));

  const double eps = 1e-6;
  for (std::size_t k = 0; k < params.size(); ++k) {
    SCOPED_TRACE("parameter " + names[k]);
    double norm = 0;
    for (const double g : grads[k]) norm += g * g;
    EXPECT_GT(norm, 1e-12) << "a zero gradient would make the comparison vacuous";
    std::vector<double> analytic, numeric;
    for (const std::int64_t i : sample_indices(params[k]->value.numel(), 48, seed + k)) {
      double& v = params[k]->value.data()[i];
      const double saved = v;
      v = saved + eps;
      const double up = loss.value(model.forward(ctx, graph, x));
      v = saved - eps;
      const double down = loss.value(model.forward(ctx, graph, x));
      v = saved;
      analytic.push_back(grads[k][static_cast<std::size_t>(i)]);
      numeric.push_back((up - down) / (2 * eps));
    }
    EXPECT_TRUE(testing::all_close(analytic, numeric, 1e-5, 1e-8));
  }
}

std::vector<nn::Adjacency<double>> one(nn::Adjacency<double> g) { return {g}; }

// ---- construction ------------------------------------------------------------------------------

TEST(Model, BuildsNamedParametersOfTheRightShapes) {
  {
    nn::Model<double> gcn(cpu(), config(ModelKind::Gcn, 2, 10, 16, 4), 1);
    EXPECT_EQ(gcn.parameter_names(), (std::vector<std::string>{"layer1.weight", "layer1.bias",
                                                               "layer2.weight", "layer2.bias"}));
    const auto p = gcn.parameters();
    ASSERT_EQ(p.size(), 4u);
    const std::vector<std::pair<std::int64_t, std::int64_t>> shapes{
        {10, 16}, {16, 1}, {16, 4}, {4, 1}};
    for (std::size_t i = 0; i < p.size(); ++i) {
      EXPECT_EQ(p[i]->value.rows(), shapes[i].first) << i;
      EXPECT_EQ(p[i]->value.cols(), shapes[i].second) << i;
      EXPECT_EQ(p[i]->grad.rows(), shapes[i].first) << i;
      EXPECT_EQ(p[i]->grad.cols(), shapes[i].second) << i;
    }
  }
  {
    nn::Model<float> sage(cpu(), config(ModelKind::Sage, 3, 7, 5, 3), 1);
    EXPECT_EQ(
        sage.parameter_names(),
        (std::vector<std::string>{"layer1.weight_root", "layer1.weight_neigh", "layer1.bias",
                                  "layer2.weight_root", "layer2.weight_neigh", "layer2.bias",
                                  "layer3.weight_root", "layer3.weight_neigh", "layer3.bias"}));
    const auto p = sage.parameters();
    ASSERT_EQ(p.size(), 9u);
    EXPECT_EQ(p[0]->value.rows(), 7);
    EXPECT_EQ(p[0]->value.cols(), 5);
    EXPECT_EQ(p[4]->value.rows(), 5);
    EXPECT_EQ(p[4]->value.cols(), 5);
    EXPECT_EQ(p[6]->value.rows(), 5);
    EXPECT_EQ(p[6]->value.cols(), 3);
    EXPECT_EQ(p[8]->value.rows(), 3);
  }
  {
    nn::Model<double> one(cpu(), config(ModelKind::Gcn, 1, 6, 16, 2), 1);
    EXPECT_EQ(one.parameter_names(), (std::vector<std::string>{"layer1.weight", "layer1.bias"}));
    EXPECT_EQ(one.parameters()[0]->value.cols(), 2) << "one layer maps straight to the classes";
  }
}

TEST(Model, GlorotInitIsBoundedAndBiasesStartAtZero) {
  nn::Model<double> model(cpu(), config(ModelKind::Sage, 3, 40, 24, 5), 3);
  const auto names = model.parameter_names();
  const auto params = model.parameters();
  for (std::size_t k = 0; k < params.size(); ++k) {
    SCOPED_TRACE(names[k]);
    const auto v = to_doubles(params[k]->value);
    if (params[k]->name == "bias") {
      EXPECT_EQ(v, std::vector<double>(v.size(), 0.0));
      continue;
    }
    const double bound =
        std::sqrt(6.0 / static_cast<double>(params[k]->value.rows() + params[k]->value.cols()));
    double max_abs = 0;
    for (const double x : v) {
      EXPECT_LE(std::abs(x), bound);
      max_abs = std::max(max_abs, std::abs(x));
    }
    EXPECT_GT(max_abs, 0.8 * bound);
  }
}

TEST(Model, SameSeedSameParametersOtherSeedOthers) {
  for (const ModelKind kind : {ModelKind::Gcn, ModelKind::Sage}) {
    SCOPED_TRACE(nn::to_string(kind));
    const auto c = config(kind, 3, 6, 6, 6);
    nn::Model<double> a(cpu(), c, 17), b(cpu(), c, 17), other(cpu(), c, 18);
    const auto va = parameter_values(a), vb = parameter_values(b), vo = parameter_values(other);
    EXPECT_EQ(va, vb);
    const auto names = a.parameter_names();
    for (std::size_t k = 0; k < va.size(); ++k) {
      if (a.parameters()[k]->name == "bias") continue;
      EXPECT_NE(va[k], vo[k]) << names[k] << " must depend on the seed";
      // All weights are 6 x 6 here: no two may share their numbers.
      for (std::size_t j = 0; j < k; ++j) {
        if (a.parameters()[j]->name != "bias") {
          EXPECT_NE(va[k], va[j]) << names[k] << " and " << names[j] << " draw the same numbers";
        }
      }
    }
  }
}

TEST(Model, RejectsBadConfigs) {
  const auto rejects = [](ModelConfig c) {
    EXPECT_THROW(nn::Model<double>(cpu(), c, 1), LogicError);
  };
  ModelConfig c = config(ModelKind::Gcn, 2, 5, 8, 3);
  EXPECT_NO_THROW(nn::Model<double>(cpu(), c, 1));
  ModelConfig bad = c;
  bad.hidden = 0;
  rejects(bad);
  bad = c;
  bad.num_layers = 0;
  rejects(bad);
  bad = c;
  bad.dropout = 1.0f;
  rejects(bad);
  bad = c;
  bad.dropout = -0.25f;
  rejects(bad);
  bad = c;
  bad.num_classes = 1;
  rejects(bad);
  bad = c;
  bad.in_features = 0;
  rejects(bad);
}

TEST(Model, ParsesAndNamesModelKinds) {
  EXPECT_EQ(nn::parse_model_kind("gcn"), ModelKind::Gcn);
  EXPECT_EQ(nn::parse_model_kind("sage"), ModelKind::Sage);
  EXPECT_EQ(nn::parse_model_kind("gat"), ModelKind::Gat);
  EXPECT_EQ(nn::to_string(ModelKind::Gcn), "gcn");
  EXPECT_EQ(nn::to_string(ModelKind::Sage), "sage");
  EXPECT_EQ(nn::to_string(ModelKind::Gat), "gat");
  EXPECT_EQ(nn::graph_preparation(ModelKind::Gat), nn::GraphPreparation::SelfLoops);
  EXPECT_EQ(nn::to_string(nn::GraphPreparation::SelfLoops), "self_loops");
  try {
    nn::parse_model_kind("gin");
    ADD_FAILURE() << "parse_model_kind accepted 'gin'";
  } catch (const LogicError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gin"), std::string::npos) << what;
    EXPECT_NE(what.find("gcn"), std::string::npos) << what;
    EXPECT_NE(what.find("sage"), std::string::npos) << what;
    EXPECT_NE(what.find("gat"), std::string::npos) << what;
  }
}

TEST(Model, RejectsInputOfWrongWidth) {
  const auto graph = gcn_normalized<double>(6, random_edges(6, 0.5, 1, {}));
  nn::Model<double> model(cpu(), config(ModelKind::Gcn, 2, 5, 8, 3), 1);
  Features<double> x = testing::random_matrix<double>(6, 4, 1);
  EXPECT_THROW(model.forward(eval_context(), graph.view(), x), LogicError);
}

TEST(Model, EvalIsDeterministicAndTrainingAppliesDropout) {
  const auto graph = gcn_normalized<double>(10, random_edges(10, 0.3, 2, {}));
  nn::Model<double> model(cpu(), config(ModelKind::Gcn, 2, 6, 8, 3), 1);
  Features<double> x = testing::random_matrix<double>(10, 6, 3);
  const auto eval1 = to_doubles(model.forward(eval_context(), graph.view(), x));
  const auto train1 = to_doubles(model.forward(train_context(1), graph.view(), x));
  const auto train1_again = to_doubles(model.forward(train_context(1), graph.view(), x));
  const auto train2 = to_doubles(model.forward(train_context(2), graph.view(), x));
  const auto eval2 = to_doubles(model.forward(eval_context(), graph.view(), x));
  EXPECT_EQ(eval1, eval2);
  EXPECT_EQ(train1, train1_again);
  EXPECT_NE(train1, eval1);
  EXPECT_NE(train1, train2);
}

TEST(Model, BackwardOverwritesGradients) {
  const auto graph = random_graph<double>(9, 9, 0.3, 4, false);
  nn::Model<double> model(cpu(), config(ModelKind::Sage, 2, 4, 5, 3), 1);
  Features<double> x = testing::random_matrix<double>(9, 4, 5);
  const Loss<double> loss(random_labels(9, 3, 6), {0, 2, 3, 5, 8});
  Tensor<double> dlogits;
  const auto pass = [&] {
    loss.gradient(model.forward(train_context(), graph.view(), x), dlogits);
    model.backward(train_context(), graph.view(), dlogits);
    std::vector<std::vector<double>> g;
    for (auto* p : model.parameters()) g.push_back(to_doubles(p->grad));
    return g;
  };
  const auto first = pass();
  EXPECT_EQ(pass(), first) << "a second backward must overwrite, not accumulate";
}

// ---- gradients of the whole model --------------------------------------------------------------

TEST(GcnModel, TwoLayerGradientMatchesFiniteDifferences) {
  // Layer 1: 4 -> 7 aggregates first; layer 2: 7 -> 3 transforms first.
  const auto graph = gcn_normalized<double>(12, random_edges(12, 0.3, 300, {5, 11}));
  nn::Model<double> model(cpu(), config(ModelKind::Gcn, 2, 4, 7, 3), 301);
  Features<double> x = testing::random_matrix<double>(12, 4, 302);
  check_model_gradients(model, one(graph.view()), x, 303);
}

TEST(GcnModel, ThreeLayerGradientMatchesFiniteDifferences) {
  const auto graph = gcn_normalized<double>(11, random_edges(11, 0.3, 310, {0}));
  nn::Model<double> model(cpu(), config(ModelKind::Gcn, 3, 3, 6, 4), 311);
  Features<double> x = testing::random_matrix<double>(11, 3, 312);
  check_model_gradients(model, one(graph.view()), x, 313);
}

TEST(GcnModel, SparseFeaturesGradientMatchesFiniteDifferences) {
  const auto graph = gcn_normalized<double>(12, random_edges(12, 0.3, 320, {7}));
  nn::Model<double> model(cpu(), config(ModelKind::Gcn, 2, 9, 10, 3), 321);
  Features<double> x = testing::random_csr<std::int32_t, double>(12, 9, 3.0, 322, true);
  check_model_gradients(model, one(graph.view()), x, 323);
}

TEST(SageModel, TwoLayerGradientMatchesFiniteDifferences) {
  const auto graph = random_graph<double>(12, 12, 0.3, 330, /*weighted=*/false);
  nn::Model<double> model(cpu(), config(ModelKind::Sage, 2, 4, 6, 3), 331);
  Features<double> x = testing::random_matrix<double>(12, 4, 332);
  check_model_gradients(model, one(graph.view()), x, 333);
}

TEST(SageModel, ThreeLayerGradientMatchesFiniteDifferences) {
  const auto graph = random_graph<double>(11, 11, 0.3, 340, /*weighted=*/false);
  nn::Model<double> model(cpu(), config(ModelKind::Sage, 3, 8, 5, 4), 341);
  Features<double> x = testing::random_matrix<double>(11, 8, 342);
  check_model_gradients(model, one(graph.view()), x, 343);
}

TEST(SageModel, SparseFeaturesGradientMatchesFiniteDifferences) {
  const auto graph = random_graph<double>(12, 12, 0.3, 350, /*weighted=*/false);
  nn::Model<double> model(cpu(), config(ModelKind::Sage, 2, 9, 6, 3), 351);
  Features<double> x = testing::random_csr<std::int32_t, double>(12, 9, 3.0, 352, true);
  check_model_gradients(model, one(graph.view()), x, 353);
}

TEST(GatModel, TwoLayerGradientMatchesFiniteDifferences) {
  // 3 heads of 4 concatenated, then 2 heads of 3 classes averaged; dropout on features and
  // attention coefficients.
  const auto graph = random_graph<double>(12, 12, 0.3, 390, /*weighted=*/false);
  nn::Model<double> model(cpu(), config(ModelKind::Gat, 2, 5, 4, 3), 391);
  Features<double> x = testing::random_matrix<double>(12, 5, 392);
  check_model_gradients(model, one(graph.view()), x, 393);
}

TEST(GatModel, ThreeLayerSparseFeaturesGradientMatchesFiniteDifferences) {
  const auto graph = random_graph<double>(11, 11, 0.3, 394, /*weighted=*/false);
  nn::Model<double> model(cpu(), config(ModelKind::Gat, 3, 9, 2, 4), 395);
  Features<double> x = testing::random_csr<std::int32_t, double>(11, 9, 3.0, 396, true);
  check_model_gradients(model, one(graph.view()), x, 397);
}

TEST(GatModel, NamesShapesAndWidths) {
  auto c = config(ModelKind::Gat, 2, 7, 8, 3);
  c.heads = 8;
  c.out_heads = 1;
  nn::Model<float> model(cpu(), c, 1);
  const std::vector<std::string> names = {"layer1.weight",  "layer1.att_src", "layer1.att_dst",
                                          "layer1.bias",    "layer2.weight",  "layer2.att_src",
                                          "layer2.att_dst", "layer2.bias"};
  EXPECT_EQ(model.parameter_names(), names);
  const auto p = model.parameters();
  EXPECT_EQ(p[0]->value.rows(), 7);
  EXPECT_EQ(p[0]->value.cols(), 64);
  EXPECT_EQ(p[1]->value.rows(), 8);
  EXPECT_EQ(p[1]->value.cols(), 8);
  EXPECT_EQ(p[3]->value.rows(), 64);
  EXPECT_EQ(p[4]->value.rows(), 64);
  EXPECT_EQ(p[4]->value.cols(), 3);
  EXPECT_EQ(p[5]->value.rows(), 1);
  EXPECT_EQ(p[7]->value.rows(), 3);
  EXPECT_EQ(model.width(1), 64);
  EXPECT_EQ(model.width(2), 3);
  EXPECT_EQ(model.shape().graph, nn::GraphPreparation::SelfLoops);
  c.heads = 0;
  EXPECT_THROW(nn::Model<float>(cpu(), c, 1), LogicError);
}

// ---- blocks (mini-batches) ---------------------------------------------------------------------

TEST(BlockModel, GradientsMatchFiniteDifferencesOnBlocks) {
  // 14 input nodes -> 8 -> 5 destinations; each block's destinations are its first sources.
  for (const ModelKind kind : {ModelKind::Gcn, ModelKind::Sage, ModelKind::Gat}) {
    SCOPED_TRACE(nn::to_string(kind));
    const auto b0 = random_graph<double>(8, 14, 0.3, 360, /*weighted=*/kind == ModelKind::Gcn);
    const auto b1 = random_graph<double>(5, 8, 0.4, 361, /*weighted=*/kind == ModelKind::Gcn);
    const std::vector<nn::Adjacency<double>> blocks = {b0.view(), b1.view()};
    nn::Model<double> model(cpu(), config(kind, 2, 4, 6, 3), 362);
    Features<double> x = testing::random_matrix<double>(14, 4, 363);
    check_model_gradients(model, blocks, x, 364);
  }
}

// Blocks cut from the full graph (block 0: its first 8 rows; block 1: rows 0-4, columns 0-7,
// where rows 0-4 have no neighbour beyond 7) give the full model's logits of nodes 0-4, with
// dropout on: both runs key the masks by the same node ids.
TEST(BlockModel, BlocksCutFromTheGraphGiveTheFullGraphsLogits) {
  const int n = 14;
  std::vector<Row> rows(n);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < (r < 5 ? 8 : n); ++c)
      if ((r * 7 + c * 3) % 4 == 0 || r == c)
        rows[static_cast<std::size_t>(r)].push_back({c, 0.25 + 0.01 * c});
  const auto full = csr_from_rows<double>(n, rows, /*weighted=*/true);
  auto b0 = full.view();
  b0.num_rows = 8;
  auto b1 = full.view();
  b1.num_rows = 5;
  b1.num_cols = 8;  // rows 0-4 only point below 8
  for (const ModelKind kind : {ModelKind::Gcn, ModelKind::Sage, ModelKind::Gat}) {
    SCOPED_TRACE(nn::to_string(kind));
    nn::Model<double> model(cpu(), config(kind, 2, 4, 6, 3), 370);
    const Features<double> x = testing::random_matrix<double>(n, 4, 371);
    const auto whole = to_doubles(model.forward(train_context(5), full.view(), x));
    const std::vector<nn::Adjacency<double>> blocks = {nn::Adjacency<double>(b0),
                                                       nn::Adjacency<double>(b1)};
    const Tensor<double>& part = model.forward(train_context(5), blocks, x);
    ASSERT_EQ(part.rows(), 5);
    EXPECT_TRUE(testing::all_close(part, std::vector<double>(whole.begin(), whole.begin() + 15),
                                   1e-12, 1e-12));
  }
}

TEST(BlockModel, RejectsAWrongNumberOfGraphs) {
  const auto g = random_graph<double>(6, 6, 0.4, 380, false);
  const std::vector<nn::Adjacency<double>> three = {g.view(), g.view(), g.view()};
  nn::Model<double> model(cpu(), config(ModelKind::Sage, 2, 4, 6, 3), 381);
  const Features<double> x = testing::random_matrix<double>(6, 4, 382);
  EXPECT_THROW(model.forward(eval_context(), three, x), LogicError);
}

// ---- parameter files ---------------------------------------------------------------------------

using testing::TempDir;

/// Gives every parameter random values (biases included), so a round trip has something to keep.
template <class T>
void perturb(nn::Model<T>& model, std::uint64_t seed) {
  for (auto* p : model.parameters()) randomize(p->value, seed++);
}

TEST(Model, SaveLoadRoundTripGivesIdenticalOutputs) {
  const TempDir dir;
  testing::for_each_value_type([&](auto zero) {
    using T = decltype(zero);
    for (const ModelKind kind : {ModelKind::Gcn, ModelKind::Sage, ModelKind::Gat}) {
      SCOPED_TRACE(nn::to_string(kind));
      const auto graph = random_graph<T>(10, 10, 0.3, 400, kind == ModelKind::Gcn);
      const auto c = config(kind, 3, 5, 6, 3);
      nn::Model<T> saved(cpu(), c, 401), loaded(cpu(), c, 402);
      perturb(saved, 403);
      const fs::path file = dir.path() / ("model_" + nn::to_string(kind) + ".bin");
      saved.save(file);
      EXPECT_TRUE(fs::exists(file));
      EXPECT_FALSE(fs::exists(file.string() + ".tmp")) << "the temporary file must be renamed";
      Features<T> x = testing::random_matrix<T>(10, 5, 404);
      const auto before = to_doubles(loaded.forward(eval_context(), graph.view(), x));
      const auto expected = to_doubles(saved.forward(eval_context(), graph.view(), x));
      EXPECT_NE(before, expected) << "the models must differ before loading";
      loaded.load(cpu(), file);
      EXPECT_EQ(parameter_values(loaded), parameter_values(saved));
      EXPECT_EQ(to_doubles(loaded.forward(eval_context(), graph.view(), x)), expected);
    }
  });
}

TEST(Model, SaveOverwritesAnExistingFile) {
  const TempDir dir;
  const auto c = config(ModelKind::Gcn, 2, 4, 5, 3);
  nn::Model<double> first(cpu(), c, 1), second(cpu(), c, 2), loaded(cpu(), c, 3);
  const fs::path file = dir.path() / "model.bin";
  first.save(file);
  second.save(file);
  loaded.load(cpu(), file);
  EXPECT_EQ(parameter_values(loaded), parameter_values(second));
  EXPECT_FALSE(fs::exists(file.string() + ".tmp"));
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// save(res, path) is the device-neutral form: for a host model it writes what save(path) writes.
TEST(Model, SaveThroughResourcesWritesTheSameFile) {
  const TempDir dir;
  nn::Model<float> model(cpu(), config(ModelKind::Sage, 2, 4, 5, 3), 9);
  model.save(dir.path() / "a.bin");
  model.save(cpu(), dir.path() / "b.bin");
  EXPECT_EQ(file_bytes(dir.path() / "a.bin"), file_bytes(dir.path() / "b.bin"));
}

TEST(Model, SaveToMissingDirectoryThrowsIoError) {
  const TempDir dir;
  nn::Model<double> model(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 1);
  const fs::path file = dir.path() / "no_such_dir" / "model.bin";
  EXPECT_TRUE(throws_io_error_containing([&] { model.save(file); }, {file.string()}));
}

TEST(Model, SaveOntoADirectoryThrowsIoErrorAndLeavesNoTemporary) {
  const TempDir dir;
  nn::Model<double> model(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 1);
  const fs::path target = dir.path() / "a_directory";
  fs::create_directories(target);
  EXPECT_TRUE(throws_io_error_containing([&] { model.save(target); }, {target.string()}));
  EXPECT_FALSE(fs::exists(target.string() + ".tmp"));
}

TEST(Model, LoadRejectsMissingFile) {
  const TempDir dir;
  nn::Model<double> model(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 1);
  const fs::path file = dir.path() / "missing.bin";
  EXPECT_TRUE(throws_io_error_containing([&] { model.load(cpu(), file); }, {file.string()}));
}

TEST(Model, LoadRejectsWrongShape) {
  const TempDir dir;
  nn::Model<double> saved(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 1);
  const fs::path file = dir.path() / "model.bin";
  saved.save(file);
  nn::Model<double> wider(cpu(), config(ModelKind::Gcn, 2, 4, 6, 3), 1);
  EXPECT_TRUE(throws_io_error_containing([&] { wider.load(cpu(), file); },
                                         {file.string(), "4 -> 5 -> 3", "4 -> 6 -> 3"}));
  nn::Model<double> deeper(cpu(), config(ModelKind::Gcn, 3, 4, 5, 3), 1);
  EXPECT_TRUE(throws_io_error_containing([&] { deeper.load(cpu(), file); }, {file.string()}));
  nn::Model<double> sage(cpu(), config(ModelKind::Sage, 2, 4, 5, 3), 1);
  EXPECT_TRUE(throws_io_error_containing([&] { sage.load(cpu(), file); }, {file.string()}));
}

/// Overwrites `bytes` at `offset` of `file`.
void patch(const fs::path& file, std::streamoff offset, const std::string& bytes) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(offset);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The file describes itself: architecture, data, preprocessing, training record, version.
TEST(ModelFile, DescribesTheModelAndItsTraining) {
  const TempDir dir;
  const auto c = config(ModelKind::Sage, 3, 5, 6, 4, 0.25f);
  nn::Model<float> saved(cpu(), c, 1);
  perturb(saved, 2);
  nn::ModelFileInfo info;
  info.dataset = "toy";
  info.normalize_features = false;
  info.structural_features = "degree";
  info.training = R"({"epochs":7,"test_accuracy":0.5})";
  const fs::path file = dir.path() / "model.halo";
  saved.save(file, info);
  const nn::ModelFile f = nn::read_model_file(file);
  EXPECT_EQ(f.dtype, "<f4");
  EXPECT_EQ(f.info.config.kind, ModelKind::Sage);
  EXPECT_EQ(f.info.config.num_layers, 3);
  EXPECT_EQ(f.info.config.hidden, 6);
  EXPECT_EQ(f.info.config.in_features, 5);
  EXPECT_EQ(f.info.config.num_classes, 4);
  EXPECT_EQ(f.info.config.dropout, 0.25f);
  EXPECT_EQ(f.info.dataset, "toy");
  EXPECT_FALSE(f.info.normalize_features);
  EXPECT_EQ(f.info.structural_features, "degree");
  EXPECT_EQ(f.info.training, R"({"epochs":7,"test_accuracy":0.5})");
  EXPECT_EQ(f.info.halo_version, HALO_VERSION);
  ASSERT_EQ(f.arrays.size(), saved.parameters().size());
  EXPECT_EQ(f.arrays[0].name, "layer1.weight_root");
  // The parameters are raw little-endian floats, as the model holds them.
  const auto first = saved.parameters()[0]->value.to_vector(cpu());
  EXPECT_EQ(f.arrays[0].bytes,
            std::string(reinterpret_cast<const char*>(first.data()), first.size() * 4));
  // load_model rebuilds the same model from the file alone.
  nn::ModelFileInfo read;
  nn::Model<float> loaded = nn::load_model<float>(cpu(), file, &read);
  EXPECT_EQ(read.dataset, "toy");
  EXPECT_EQ(parameter_values(loaded), parameter_values(saved));
}

TEST(ModelFile, CarriesGatHeadsAndDefaultsThemForOlderFiles) {
  const TempDir dir;
  auto c = config(ModelKind::Gat, 2, 5, 4, 3, 0.6f);
  c.heads = 5;
  c.out_heads = 2;
  nn::Model<float> saved(cpu(), c, 1);
  perturb(saved, 2);
  const fs::path file = dir.path() / "gat.halo";
  saved.save(file);
  const nn::ModelFile f = nn::read_model_file(file);
  EXPECT_EQ(f.info.config.kind, ModelKind::Gat);
  EXPECT_EQ(f.info.config.heads, 5);
  EXPECT_EQ(f.info.config.out_heads, 2);
  nn::Model<float> loaded = nn::load_model<float>(cpu(), file);
  EXPECT_EQ(loaded.config().heads, 5);
  EXPECT_EQ(loaded.config().out_heads, 2);
  EXPECT_EQ(parameter_values(loaded), parameter_values(saved));
  // Other heads: another architecture, named in the error.
  c.heads = 4;
  nn::Model<float> other(cpu(), c, 1);
  EXPECT_TRUE(throws_io_error_containing([&] { other.load(cpu(), file); },
                                         {file.string(), "5 heads", "4 heads"}));
  // A file without heads (written before GAT, or a gcn/sage file): the config's defaults.
  nn::ModelFile old = f;
  old.info.config.kind = ModelKind::Gcn;
  old.arrays.clear();
  const fs::path gcn_file = dir.path() / "gcn.halo";
  nn::write_model_file(gcn_file, old);
  const nn::ModelFile read = nn::read_model_file(gcn_file);
  EXPECT_EQ(read.info.config.heads, ModelConfig{}.heads);
  EXPECT_EQ(read.info.config.out_heads, ModelConfig{}.out_heads);
}

TEST(ModelFile, CorruptedBytesFailTheChecksum) {
  const TempDir dir;
  nn::Model<double> saved(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 1);
  const fs::path file = dir.path() / "model.halo";
  const auto size = [&] {
    saved.save(file);
    return static_cast<std::streamoff>(fs::file_size(file));
  };
  // A byte of the last parameter, of the JSON header, and of the checksum itself.
  for (const std::streamoff at : {size() - 12, std::streamoff{40}, size() - 1}) {
    SCOPED_TRACE(at);
    saved.save(file);
    std::ifstream in(file, std::ios::binary);
    in.seekg(at);
    const char old = static_cast<char>(in.get());
    in.close();
    patch(file, at, std::string(1, static_cast<char>(old ^ 0x5a)));
    nn::Model<double> model(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 2);
    EXPECT_TRUE(
        throws_io_error_containing([&] { model.load(cpu(), file); }, {file.string(), "corrupted"}));
  }
}

TEST(ModelFile, AnotherFormatVersionIsRefused) {
  const TempDir dir;
  nn::Model<double> saved(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 1);
  const fs::path file = dir.path() / "model.halo";
  saved.save(file);
  const std::uint32_t version = nn::kModelFileVersion + 1;
  patch(file, 8, std::string(reinterpret_cast<const char*>(&version), 4));
  EXPECT_TRUE(throws_io_error_containing([&] { nn::read_model_file(file); },
                                         {file.string(), "format version 2", "reads version 1"}));
}

TEST(ModelFile, WrongInputWidthIsNamed) {
  nn::ModelFileInfo info;
  info.config = config(ModelKind::Gcn, 2, 4, 5, 3);
  EXPECT_NO_THROW(nn::check_input_width("m.halo", info, 4));
  EXPECT_TRUE(throws_io_error_containing([&] { nn::check_input_width("m.halo", info, 7); },
                                         {"m.halo", "reads 4 input features", "has 7"}));
}

TEST(Model, LoadRejectsOtherElementType) {
  const TempDir dir;
  const auto c = config(ModelKind::Gcn, 2, 4, 5, 3);
  nn::Model<double> saved(cpu(), c, 1);
  const fs::path file = dir.path() / "model.bin";
  saved.save(file);
  nn::Model<float> model(cpu(), c, 1);
  EXPECT_TRUE(throws_io_error_containing([&] { model.load(cpu(), file); }, {file.string()}));
}

TEST(Model, LoadRejectsTruncatedFile) {
  const TempDir dir;
  nn::Model<double> saved(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 1);
  const fs::path file = dir.path() / "model.bin";
  saved.save(file);
  const auto full = fs::file_size(file);
  // In the values of the last parameter, in the header of the first one, inside the count.
  for (const std::uintmax_t size : {full - 3, std::uintmax_t{22}, std::uintmax_t{14}}) {
    SCOPED_TRACE("truncated to " + std::to_string(size) + " of " + std::to_string(full));
    saved.save(file);
    fs::resize_file(file, size);
    nn::Model<double> model(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 2);
    EXPECT_TRUE(throws_io_error_containing([&] { model.load(cpu(), file); }, {file.string()}));
  }
}

TEST(Model, FailedLoadLeavesParametersUntouchedAndTrailingBytesAreRejected) {
  const TempDir dir;
  nn::Model<double> saved(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 1);
  const fs::path file = dir.path() / "model.bin";
  saved.save(file);
  nn::Model<double> model(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 2);
  const auto before = model.parameters()[0]->value.to_vector(cpu());
  fs::resize_file(file, fs::file_size(file) - 3);  // the first parameters are still intact
  EXPECT_TRUE(throws_io_error_containing([&] { model.load(cpu(), file); }, {file.string()}));
  EXPECT_EQ(model.parameters()[0]->value.to_vector(cpu()), before);
  saved.save(file);
  std::ofstream(file, std::ios::binary | std::ios::app) << "x";
  EXPECT_TRUE(throws_io_error_containing([&] { model.load(cpu(), file); }, {"trailing"}));
  EXPECT_EQ(model.parameters()[0]->value.to_vector(cpu()), before);
}

TEST(Model, LoadRejectsBadMagic) {
  const TempDir dir;
  nn::Model<double> saved(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 1);
  const fs::path file = dir.path() / "model.bin";
  saved.save(file);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0);
    f.write("NOTHALO!", 8);
  }
  nn::Model<double> model(cpu(), config(ModelKind::Gcn, 2, 4, 5, 3), 2);
  EXPECT_TRUE(throws_io_error_containing([&] { model.load(cpu(), file); }, {file.string()}));
  const fs::path tiny = dir.path() / "tiny.bin";
  std::ofstream(tiny) << "HAL";
  EXPECT_TRUE(throws_io_error_containing([&] { model.load(cpu(), tiny); }, {tiny.string()}));
}

// ---- learning ----------------------------------------------------------------------------------

/// Two communities of 20 nodes: dense inside, a few edges across; community c has features
/// around 1 in dimensions [4c, 4c + 4) and noise elsewhere.
struct TwoCommunities {
  static constexpr int kNodes = 40;
  static constexpr int kFeatures = 8;
  std::vector<std::pair<int, int>> edges;
  std::vector<float> features;
  std::vector<std::int32_t> labels;

  TwoCommunities() {
    namespace rng = kernels::rng;
    const std::uint64_t seed = 500;
    const auto stream = rng::stream_id(rng::kStreamSynthetic, seed, 0xc0);
    const auto community = [](int v) { return v % 2; };  // interleaved: ids carry no signal
    for (int u = 0; u < kNodes; ++u)
      for (int v = u + 1; v < kNodes; ++v) {
        const double p = community(u) == community(v) ? 0.25 : 0.02;
        if (rng::uniform_double(seed, stream, static_cast<std::uint64_t>(u * kNodes + v)) < p)
          edges.emplace_back(u, v);
      }
    const auto noise = rng::stream_id(rng::kStreamSynthetic, seed, 0xf0);
    for (int v = 0; v < kNodes; ++v) {
      labels.push_back(community(v));
      for (int j = 0; j < kFeatures; ++j) {
        const double signal = j / 4 == community(v) ? 1.0 : 0.0;
        const double u = rng::uniform_double(seed, noise, static_cast<std::uint64_t>(v * 8 + j));
        features.push_back(static_cast<float>(signal + 1.2 * (u - 0.5)));
      }
    }
  }
};

template <class T>
void expect_learns_two_communities(ModelKind kind) {
  const TwoCommunities data;
  const auto graph =
      kind == ModelKind::Gcn ? gcn_normalized<T>(TwoCommunities::kNodes, data.edges) : [&] {
        std::vector<Row> rows(TwoCommunities::kNodes);
        for (const auto& [u, v] : data.edges) {
          rows[u].emplace_back(v, 1.0);
          rows[v].emplace_back(u, 1.0);
        }
        if (kind == ModelKind::Gat)  // GraphPreparation::SelfLoops
          for (int v = 0; v < TwoCommunities::kNodes; ++v) rows[v].emplace_back(v, 1.0);
        for (auto& r : rows) std::sort(r.begin(), r.end());
        return csr_from_rows<T>(TwoCommunities::kNodes, rows, false);
      }();
  Features<T> x = Tensor<T>::from_host(testing::host(),
                                       std::vector<T>(data.features.begin(), data.features.end()),
                                       TwoCommunities::kNodes, TwoCommunities::kFeatures);
  std::vector<std::int32_t> train_rows;
  for (std::int32_t v = 0; v < TwoCommunities::kNodes; v += 4) {
    train_rows.push_back(v);
    train_rows.push_back(v + 1);
  }
  const Loss<T> loss(data.labels, train_rows);
  nn::Model<T> model(cpu(), config(kind, 2, TwoCommunities::kFeatures, 16, 2, 0.5f), 7);
  kernels::AdamConfig adam_config;
  adam_config.lr = 0.01;
  adam_config.weight_decay = 5e-4;
  nn::Adam<T> adam(cpu(), model.parameters(), adam_config);

  const T initial_loss = loss.value(model.forward(eval_context(), graph.view(), x));
  const double initial_accuracy = loss.accuracy(model.forward(eval_context(), graph.view(), x));
  Tensor<T> dlogits;
  for (std::uint64_t epoch = 0; epoch < 100; ++epoch) {
    const nn::Context ctx = train_context(epoch);
    loss.gradient(model.forward(ctx, graph.view(), x), dlogits);
    model.backward(ctx, graph.view(), dlogits);
    adam.step(cpu());
  }
  const auto& logits = model.forward(eval_context(), graph.view(), x);
  const T final_loss = loss.value(logits);
  EXPECT_GT(loss.accuracy(logits), 0.9) << "initial loss " << initial_loss << ", final "
                                        << final_loss << "; initial accuracy " << initial_accuracy;
  EXPECT_LT(final_loss, 0.5 * initial_loss);
  EXPECT_LT(initial_accuracy, 0.9) << "the untrained model must not solve the task already";
}

TEST(GcnModel, LearnsTwoCommunities) { expect_learns_two_communities<float>(ModelKind::Gcn); }

TEST(SageModel, LearnsTwoCommunities) { expect_learns_two_communities<float>(ModelKind::Sage); }

TEST(GatModel, LearnsTwoCommunities) { expect_learns_two_communities<float>(ModelKind::Gat); }

// ---- CUDA (skipped without a device) ---------------------------------------------------------

std::vector<float> values_of(const Resources& res, const Tensor<float>& t) {
  return t.to_vector(res);
}

// A model built on a GPU holds the CPU model's initial parameters (the same counter-based draws),
// computes the same logits with dropout (the same keyed masks) up to rounding, and saves the same
// file; save(path) refuses device parameters.
TEST(ModelCuda, MatchesTheCpuModelAndSavesTheSameFile) {
  if (kernels::cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device";
  const Resources gpu(kernels::Device::Cuda);
  const TempDir dir;
  for (const ModelKind kind : {ModelKind::Gcn, ModelKind::Sage, ModelKind::Gat}) {
    SCOPED_TRACE(nn::to_string(kind));
    const auto c = config(kind, 2, 5, 6, 3);
    nn::Model<float> host(cpu(), c, 7), device(gpu, c, 7);
    const auto hp = host.parameters(), dp = device.parameters();
    ASSERT_EQ(hp.size(), dp.size());
    for (std::size_t i = 0; i < hp.size(); ++i) {
      EXPECT_EQ(dp[i]->value.device(), kernels::Device::Cuda);
      EXPECT_EQ(values_of(gpu, dp[i]->value), values_of(cpu(), hp[i]->value));
    }
    const auto graph = random_graph<float>(10, 10, 0.3, 21, kind == ModelKind::Gcn);
    const auto graph_d = graph.copy_to(gpu, kernels::Device::Cuda);
    const Features<float> x = testing::random_matrix<float>(10, 5, 22);
    const Features<float> x_d = std::get<Tensor<float>>(x).copy_to(gpu, kernels::Device::Cuda);
    const nn::Context on_gpu{&gpu, /*training=*/true, 1234, 3, 0};
    const auto expected = to_doubles(host.forward(train_context(3), graph.view(), x));
    const auto got = values_of(gpu, device.forward(on_gpu, graph_d.view(), x_d));
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], expected[i], 1e-5 + 1e-5 * std::abs(expected[i])) << i;
    const fs::path a = dir.path() / "host.bin", b = dir.path() / "device.bin";
    host.save(a);
    device.save(gpu, b);
    EXPECT_EQ(file_bytes(a), file_bytes(b));
    EXPECT_THROW(device.save(b), LogicError);
    nn::Model<float> loaded(gpu, c, 8);
    loaded.load(gpu, b);
    for (auto* p : loaded.parameters()) EXPECT_EQ(p->value.device(), kernels::Device::Cuda);
  }
}

}  // namespace
}  // namespace halo::nn_test
