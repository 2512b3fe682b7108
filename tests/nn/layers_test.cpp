// The layers: forward against plain loops, backward against finite differences (double), and
// the dropout mask's properties.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <initializer_list>
#include <utility>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/kernels/profile.hpp>
#include <halo/nn/aggregate_transform.hpp>
#include <halo/nn/layers.hpp>

#include "nn_helpers.hpp"
#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::nn_test {
namespace {

using kernels::Aggregate;

/// Random values in every parameter: biases start at zero, which would hide a missing bias term.
template <class T>
void randomize_parameters(nn::Module<T>& m, std::uint64_t seed) {
  for (auto* p : m.parameters()) randomize(p->value, seed++);
}

/// A dense input in which no element is within 0.1 of zero (ReLU's kink).
Tensor<double> away_from_zero(std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  Tensor<double> x = testing::random_matrix<double>(rows, cols, seed);
  for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] += x.data()[i] >= 0 ? 0.1 : -0.1;
  return x;
}

/// A random sparse feature matrix with values, some empty rows and unused columns.
template <class T>
CsrMatrix<std::int32_t, T> sparse_features(std::int64_t rows, std::int64_t cols,
                                           std::uint64_t seed) {
  return testing::random_csr<std::int32_t, T>(rows, cols, /*avg_degree=*/2.0, seed,
                                              /*weighted=*/true);
}

/// An empty graph for layers that ignore it.
nn::Adjacency<double> no_graph() { return {}; }

// ---- Linear ------------------------------------------------------------------------------------

TEST(Linear, ForwardMatchesReference) {
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    nn::Linear<T> layer(cpu(), /*in=*/5, /*out=*/3, /*seed=*/7, /*param_id=*/0);
    randomize_parameters(layer, 11);
    const auto w = to_doubles(layer.parameters()[0]->value);
    const auto b = to_doubles(layer.parameters()[1]->value);
    for (const bool sparse : {false, true}) {
      SCOPED_TRACE(sparse ? "sparse input" : "dense input");
      Features<T> x = testing::random_matrix<T>(9, 5, 12);
      if (sparse) x = sparse_features<T>(9, 5, 13);
      const auto expected = add_rows(matmul(dense_values(x), w, 9, 5, 3), b);
      const auto& y = std::get<Tensor<T>>(layer.forward(eval_context(), {}, x));
      ASSERT_EQ(y.rows(), 9);
      ASSERT_EQ(y.cols(), 3);
      EXPECT_TRUE(testing::all_close(y, expected, testing::rtol<T>(), testing::atol<T>()));
    }
  });
}

TEST(Linear, GradientMatchesFiniteDifferences) {
  nn::Linear<double> layer(cpu(), 6, 4, 3, 0);
  randomize_parameters(layer, 21);
  Features<double> x = testing::random_matrix<double>(7, 6, 22);
  check_module_gradients(layer, train_context(), no_graph(), x, 23);
}

TEST(Linear, SparseInputGradientMatchesFiniteDifferences) {
  nn::Linear<double> layer(cpu(), 8, 3, 3, 0);
  randomize_parameters(layer, 31);
  Features<double> x = sparse_features<double>(10, 8, 32);
  check_module_gradients(layer, train_context(), no_graph(), x, 33);
}

TEST(Linear, GlorotInitIsBoundedAndKeyedBySeedAndParameterId) {
  const auto weights = [](std::uint64_t seed, std::uint64_t id) {
    nn::Linear<double> layer(cpu(), 30, 20, seed, id);
    EXPECT_EQ(to_doubles(layer.parameters()[1]->value), std::vector<double>(20, 0.0))
        << "the bias starts at zero";
    return to_doubles(layer.parameters()[0]->value);
  };
  const auto w = weights(5, 0);
  const double bound = std::sqrt(6.0 / (30 + 20));
  double max_abs = 0, mean = 0;
  for (const double v : w) {
    EXPECT_LE(std::abs(v), bound);
    max_abs = std::max(max_abs, std::abs(v));
    mean += v / static_cast<double>(w.size());
  }
  EXPECT_GT(max_abs, 0.9 * bound) << "600 uniform draws should come close to the bound";
  EXPECT_LT(std::abs(mean), 0.1 * bound);
  EXPECT_EQ(weights(5, 0), w);
  EXPECT_NE(weights(6, 0), w);
  EXPECT_NE(weights(5, 1), w);
}

TEST(Linear, RejectsBadShapesAndBackwardBeforeForward) {
  EXPECT_THROW(nn::Linear<double>(cpu(), 0, 3, 1, 0), LogicError);
  nn::Linear<double> layer(cpu(), 4, 3, 1, 0);
  const Tensor<double> dy = testing::random_matrix<double>(2, 3, 1);
  EXPECT_THROW(layer.backward(train_context(), {}, dy, true), LogicError);
  Features<double> x = testing::random_matrix<double>(2, 5, 2);
  EXPECT_THROW(layer.forward(train_context(), {}, x), LogicError);
}

// ---- GCNConv -----------------------------------------------------------------------------------

TEST(GcnConv, ForwardMatchesReference) {
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    // A normalised graph with self-loops and two isolated nodes, and a plain one with empty rows.
    const auto normalised = gcn_normalized<T>(11, random_edges(11, 0.3, 5, {2, 9}));
    const auto plain = random_graph<T>(11, 11, 0.3, 6, /*weighted=*/false);
    for (const auto* graph : {&normalised, &plain}) {
      const auto a = dense_adjacency(*graph, /*mean=*/false);
      // in < out aggregates first, in >= out transforms first; sparse inputs transform first.
      for (const auto& [in, out, sparse] : {std::tuple{3, 6, false}, std::tuple{6, 3, false},
                                            std::tuple{4, 4, false}, std::tuple{3, 6, true}}) {
        SCOPED_TRACE(testing::type_name<T>() + std::string(" in=") + std::to_string(in) +
                     " out=" + std::to_string(out) + (sparse ? " sparse" : " dense") +
                     (graph == &plain ? " plain graph" : " normalised graph"));
        nn::GCNConv<T> layer(cpu(), in, out, 3, 0);
        randomize_parameters(layer, 40);
        Features<T> x = testing::random_matrix<T>(11, in, 41);
        if (sparse) x = sparse_features<T>(11, in, 42);
        const auto w = to_doubles(layer.parameters()[0]->value);
        const auto b = to_doubles(layer.parameters()[1]->value);
        const auto ax = matmul(a, dense_values(x), 11, 11, in);
        const auto expected = add_rows(matmul(ax, w, 11, in, out), b);
        const auto& y = std::get<Tensor<T>>(layer.forward(eval_context(), graph->view(), x));
        EXPECT_TRUE(testing::all_close(y, expected, testing::rtol<T>(), testing::atol<T>()));
      }
    }
  });
}

TEST(GcnConv, GradientMatchesFiniteDifferencesAggregateFirst) {
  const auto graph = gcn_normalized<double>(10, random_edges(10, 0.35, 8, {0, 7}));
  nn::GCNConv<double> layer(cpu(), /*in=*/3, /*out=*/7, 5, 0);
  randomize_parameters(layer, 50);
  Features<double> x = testing::random_matrix<double>(10, 3, 51);
  check_module_gradients(layer, train_context(), graph.view(), x, 52);
}

TEST(GcnConv, GradientMatchesFiniteDifferencesTransformFirst) {
  const auto graph = gcn_normalized<double>(10, random_edges(10, 0.35, 9, {4}));
  for (const auto& [in, out] : {std::pair{7, 3}, std::pair{5, 5}}) {
    SCOPED_TRACE("in=" + std::to_string(in) + " out=" + std::to_string(out));
    nn::GCNConv<double> layer(cpu(), in, out, 5, 0);
    randomize_parameters(layer, 60);
    Features<double> x = testing::random_matrix<double>(10, in, 61);
    check_module_gradients(layer, train_context(), graph.view(), x, 62);
  }
}

TEST(GcnConv, GradientMatchesFiniteDifferencesSparseInput) {
  const auto graph = gcn_normalized<double>(12, random_edges(12, 0.3, 10, {3, 11}));
  for (const auto& [in, out] : {std::pair{4, 9}, std::pair{9, 4}}) {
    SCOPED_TRACE("in=" + std::to_string(in) + " out=" + std::to_string(out));
    nn::GCNConv<double> layer(cpu(), in, out, 5, 0);
    randomize_parameters(layer, 70);
    Features<double> x = sparse_features<double>(12, in, 71);
    check_module_gradients(layer, train_context(), graph.view(), x, 72);
  }
}

TEST(GcnConv, GradientMatchesFiniteDifferencesOnRectangularGraph) {
  // A mini-batch block: 6 destinations, 9 sources, empty rows, an unused source, weighted and
  // unweighted.
  for (const bool weighted : {true, false}) {
    const auto graph = random_graph<double>(6, 9, 0.4, 11, weighted);
    for (const auto& [in, out] : {std::pair{2, 5}, std::pair{5, 2}}) {
      SCOPED_TRACE(std::string(weighted ? "weighted" : "unweighted") + " in=" + std::to_string(in) +
                   " out=" + std::to_string(out));
      nn::GCNConv<double> layer(cpu(), in, out, 5, 0);
      randomize_parameters(layer, 80);
      Features<double> x = testing::random_matrix<double>(9, in, 81);
      check_module_gradients(layer, train_context(), graph.view(), x, 82);
    }
  }
}

TEST(GcnConv, DenseAndSparseInputsTakeBothOrdersAndAgree) {
  // The same numbers as a dense input with in < out (aggregate first) and as a sparse one
  // (transform first): outputs and gradients must agree.
  const auto graph = gcn_normalized<double>(9, random_edges(9, 0.4, 12, {5}));
  const auto sparse_x = sparse_features<double>(9, 3, 90);
  Features<double> dense_in =
      Tensor<double>::from_host(testing::host(), dense_adjacency(sparse_x, false), 9, 3);
  Features<double> sparse_in = sparse_x.clone(testing::host());
  nn::GCNConv<double> a(cpu(), 3, 8, 5, 0), b(cpu(), 3, 8, 5, 0);
  randomize_parameters(a, 91);
  randomize_parameters(b, 91);
  const auto ya = dense_values(a.forward(train_context(), graph.view(), dense_in));
  const auto yb = dense_values(b.forward(train_context(), graph.view(), sparse_in));
  EXPECT_TRUE(testing::all_close(ya, yb, 1e-12, 1e-12));
  const Tensor<double> dy = testing::random_matrix<double>(9, 8, 92);
  const auto dxa = to_doubles(a.backward(train_context(), graph.view(), dy, true));
  const auto dxb = to_doubles(b.backward(train_context(), graph.view(), dy, true));
  EXPECT_TRUE(testing::all_close(dxa, dxb, 1e-12, 1e-12));
  for (std::size_t k = 0; k < 2; ++k)
    EXPECT_TRUE(testing::all_close(to_doubles(a.parameters()[k]->grad),
                                   to_doubles(b.parameters()[k]->grad), 1e-12, 1e-12));
}

TEST(GcnConv, RejectsInputThatDoesNotMatchTheGraph) {
  const auto graph = random_graph<double>(5, 7, 0.4, 13, true);
  nn::GCNConv<double> layer(cpu(), 3, 2, 5, 0);
  Features<double> wrong_rows = testing::random_matrix<double>(5, 3, 1);
  EXPECT_THROW(layer.forward(train_context(), graph.view(), wrong_rows), LogicError);
  Features<double> wrong_cols = testing::random_matrix<double>(7, 4, 1);
  EXPECT_THROW(layer.forward(train_context(), graph.view(), wrong_cols), LogicError);
}

// ---- SAGEConv ----------------------------------------------------------------------------------

TEST(SageConv, ForwardMatchesReference) {
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    const auto graph = random_graph<T>(10, 10, 0.3, 14, /*weighted=*/false);
    // mean over neighbours, by hand: empty rows aggregate to zero.
    std::vector<double> mean_adj(100);
    for (std::int64_t r = 0; r < 10; ++r) {
      const std::int64_t begin = graph.indptr(r), end = graph.indptr(r + 1);
      for (std::int64_t e = begin; e < end; ++e)
        mean_adj[r * 10 + graph.indices(e)] += 1.0 / static_cast<double>(end - begin);
    }
    for (const auto& [in, out, sparse] :
         {std::tuple{3, 6, false}, std::tuple{6, 3, false}, std::tuple{6, 3, true}}) {
      SCOPED_TRACE(testing::type_name<T>() + std::string(" in=") + std::to_string(in) +
                   " out=" + std::to_string(out) + (sparse ? " sparse" : " dense"));
      nn::SAGEConv<T> layer(cpu(), in, out, 3, 0);
      randomize_parameters(layer, 100);
      Features<T> x = testing::random_matrix<T>(10, in, 101);
      if (sparse) x = sparse_features<T>(10, in, 102);
      const auto params = layer.parameters();
      ASSERT_EQ(params.size(), 3u);
      EXPECT_EQ(params[0]->name, "weight_root");
      EXPECT_EQ(params[1]->name, "weight_neigh");
      EXPECT_EQ(params[2]->name, "bias");
      const auto xd = dense_values(x);
      const auto root = matmul(xd, to_doubles(params[0]->value), 10, in, out);
      const auto neigh =
          matmul(matmul(mean_adj, xd, 10, 10, in), to_doubles(params[1]->value), 10, in, out);
      const auto expected = add_rows(add(root, neigh), to_doubles(params[2]->value));
      const auto& y = std::get<Tensor<T>>(layer.forward(eval_context(), graph.view(), x));
      EXPECT_TRUE(testing::all_close(y, expected, testing::rtol<T>(), testing::atol<T>()));
    }
  });
}

TEST(SageConv, GradientMatchesFiniteDifferences) {
  const auto graph = random_graph<double>(11, 11, 0.3, 15, /*weighted=*/false);
  for (const auto& [in, out, sparse] :
       {std::tuple{3, 7, false}, std::tuple{7, 3, false}, std::tuple{4, 4, false},
        std::tuple{8, 5, true}, std::tuple{3, 7, true}}) {
    SCOPED_TRACE("in=" + std::to_string(in) + " out=" + std::to_string(out) +
                 (sparse ? " sparse" : " dense"));
    nn::SAGEConv<double> layer(cpu(), in, out, 5, 0);
    randomize_parameters(layer, 110);
    Features<double> x = testing::random_matrix<double>(11, in, 111);
    if (sparse) x = sparse_features<double>(11, in, 112);
    check_module_gradients(layer, train_context(), graph.view(), x, 113);
  }
}

TEST(SageConv, RootAndNeighbourWeightsAreDistinct) {
  nn::SAGEConv<double> layer(cpu(), 6, 6, 5, 0);
  EXPECT_NE(to_doubles(layer.parameters()[0]->value), to_doubles(layer.parameters()[1]->value));
}

TEST(SageConv, RejectsMoreDestinationsThanSourcesAndMismatchedInput) {
  const auto graph = random_graph<double>(7, 5, 0.4, 16, false);
  nn::SAGEConv<double> layer(cpu(), 3, 2, 5, 0);
  Features<double> x = testing::random_matrix<double>(5, 3, 1);
  EXPECT_THROW(layer.forward(train_context(), graph.view(), x), LogicError);
  const auto square = random_graph<double>(5, 5, 0.4, 16, false);
  Features<double> short_x = testing::random_matrix<double>(4, 3, 1);
  EXPECT_THROW(layer.forward(train_context(), square.view(), short_x), LogicError);
}

// A block whose destinations are the first d nodes and whose sources are all n nodes is the
// first d rows of the full graph: both layers give the first d rows of the full output.
TEST(Blocks, LayersOnABlockGiveTheFullGraphsRows) {
  const std::int64_t n = 12, d = 5;
  const auto full = random_graph<double>(n, n, 0.3, 21, /*weighted=*/true);
  auto block = full.view();
  block.num_rows = d;
  for (const bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse input" : "dense input");
    Features<double> x = testing::random_matrix<double>(n, 4, 22);
    if (sparse) x = sparse_features<double>(n, 4, 23);
    nn::SAGEConv<double> sage(cpu(), 4, 3, 5, 0);
    nn::GCNConv<double> gcn(cpu(), 4, 3, 5, 0);
    for (nn::Module<double>* m : std::initializer_list<nn::Module<double>*>{&sage, &gcn}) {
      SCOPED_TRACE(m->name());
      const auto whole =
          to_doubles(std::get<Tensor<double>>(m->forward(eval_context(), full.view(), x)));
      const auto& part = std::get<Tensor<double>>(m->forward(eval_context(), block, x));
      ASSERT_EQ(part.rows(), d);
      EXPECT_TRUE(testing::all_close(
          part, std::vector<double>(whole.begin(), whole.begin() + d * 3), 1e-12, 1e-12));
    }
  }
}

TEST(Blocks, SageGradientMatchesFiniteDifferencesOnABlock) {
  // 6 destinations, 9 sources (destinations first), empty rows, an unused source.
  const auto graph = random_graph<double>(6, 9, 0.4, 24, /*weighted=*/false);
  for (const auto& [in, out, sparse] :
       {std::tuple{2, 5, false}, std::tuple{5, 2, false}, std::tuple{4, 3, true}}) {
    SCOPED_TRACE("in=" + std::to_string(in) + " out=" + std::to_string(out) +
                 (sparse ? " sparse" : " dense"));
    nn::SAGEConv<double> layer(cpu(), in, out, 5, 0);
    randomize_parameters(layer, 25);
    Features<double> x = testing::random_matrix<double>(9, in, 26);
    if (sparse) x = sparse_features<double>(9, in, 27);
    check_module_gradients(layer, train_context(), graph.view(), x, 28);
  }
}

// Dropout keys a row by the graph's source id when one is given: a block whose sources are
// nodes {7, 2, 9} drops what the full matrix drops in rows 7, 2 and 9.
TEST(Blocks, DropoutFollowsTheSourceIds) {
  const std::int64_t n = 10, cols = 6;
  const Tensor<double> x = testing::random_matrix<double>(n, cols, 29);
  nn::Dropout<double> dropout(0.5f, 1);
  const auto whole = to_doubles(std::get<Tensor<double>>(
      dropout.forward(train_context(3), no_graph(), Features<double>(x.clone(cpu())))));
  const std::vector<NodeId> ids = {7, 2, 9};
  std::vector<double> rows, expected;
  for (const NodeId id : ids)
    for (std::int64_t c = 0; c < cols; ++c) {
      rows.push_back(x.data()[id * cols + c]);
      expected.push_back(whole[static_cast<std::size_t>(id * cols + c)]);
    }
  const auto id_tensor = Tensor<NodeId>::from_host(cpu(), ids);
  nn::Adjacency<double> block = no_graph();
  block.source_ids = id_tensor.span();
  const Features<double> picked = testing::host_tensor<double>(rows, 3, cols);
  EXPECT_EQ(to_doubles(std::get<Tensor<double>>(dropout.forward(train_context(3), block, picked))),
            expected);
}

// ---- ReLU --------------------------------------------------------------------------------------

TEST(Relu, ForwardMatchesReferenceAndGradientMatchesFiniteDifferences) {
  nn::ReLU<double> relu;
  Features<double> x = away_from_zero(8, 5, 120);
  const auto xd = dense_values(x);
  std::vector<double> expected(xd.size());
  for (std::size_t i = 0; i < xd.size(); ++i) expected[i] = xd[i] > 0 ? xd[i] : 0.0;
  EXPECT_EQ(dense_values(relu.forward(train_context(), {}, x)), expected);
  check_module_gradients(relu, train_context(), no_graph(), x, 121);
}

TEST(Relu, RejectsSparseInput) {
  nn::ReLU<double> relu;
  Features<double> x = sparse_features<double>(4, 4, 1);
  EXPECT_THROW(relu.forward(train_context(), {}, x), LogicError);
}

// ---- Dropout -----------------------------------------------------------------------------------

TEST(Dropout, EvalModeAndZeroProbabilityAreTheIdentity) {
  Features<double> x = testing::random_matrix<double>(6, 4, 130);
  const Tensor<double> dy = testing::random_matrix<double>(6, 4, 131);
  {
    nn::Dropout<double> drop(0.5f, 0);
    EXPECT_EQ(&drop.forward(eval_context(), {}, x), &x) << "eval mode returns the input itself";
    EXPECT_EQ(to_doubles(drop.backward(eval_context(), {}, dy, true)), to_doubles(dy));
  }
  {
    nn::Dropout<double> drop(0.0f, 0);
    EXPECT_EQ(&drop.forward(train_context(), {}, x), &x) << "p = 0 returns the input itself";
    EXPECT_EQ(to_doubles(drop.backward(train_context(), {}, dy, true)), to_doubles(dy));
  }
  Features<double> sparse = sparse_features<double>(6, 4, 132);
  nn::Dropout<double> drop(0.5f, 0);
  EXPECT_EQ(&drop.forward(eval_context(), {}, sparse), &sparse);
}

TEST(Dropout, TrainingDropsAboutPAndScalesTheRest) {
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    const float p = 0.3f;
    Tensor<T> input = testing::random_matrix<T>(200, 50, 140);
    for (std::int64_t i = 0; i < input.numel(); ++i) input.data()[i] += T(2);  // never zero
    Features<T> x = std::move(input);
    nn::Dropout<T> drop(p, 3);
    const auto y = dense_values(drop.forward(train_context(5), {}, x));
    const auto xd = dense_values(x);
    std::int64_t dropped = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      if (y[i] == 0) {
        ++dropped;
      } else {
        EXPECT_NEAR(y[i], xd[i] / (1.0 - p), 1e-5 * std::abs(xd[i]));
      }
    }
    // 10000 draws: the standard deviation of the fraction is 0.0046.
    EXPECT_NEAR(static_cast<double>(dropped) / 10000.0, p, 0.03);
  });
}

TEST(Dropout, MaskFollowsTheDropoutKeyDefinition) {
  const float p = 0.4f;
  Features<double> x = testing::random_matrix<double>(13, 7, 150);
  const auto xd = dense_values(x);
  nn::Dropout<double> drop(p, /*layer_id=*/2);
  const nn::Context ctx = train_context(/*epoch=*/9, /*row_offset=*/100);
  const auto y = dense_values(drop.forward(ctx, {}, x));
  const kernels::DropoutKey key{ctx.seed, ctx.epoch, 2, ctx.row_offset};
  for (std::int64_t r = 0; r < 13; ++r)
    for (std::int64_t c = 0; c < 7; ++c) {
      const double expected = ref::dropout_keep(key, p, r, c, 7) ? xd[r * 7 + c] / (1.0 - p) : 0;
      EXPECT_NEAR(y[r * 7 + c], expected, 1e-12) << "at (" << r << ", " << c << ")";
    }
}

TEST(Dropout, SameKeySameMaskOtherKeyOtherMask) {
  Features<double> x = testing::random_matrix<double>(20, 10, 160);
  const auto run = [&](std::uint64_t epoch, std::uint64_t layer, std::uint64_t seed) {
    nn::Dropout<double> drop(0.5f, layer);
    nn::Context ctx = train_context(epoch);
    ctx.seed = seed;
    return dense_values(drop.forward(ctx, {}, x));
  };
  const auto base = run(1, 0, 7);
  EXPECT_EQ(run(1, 0, 7), base) << "the same key must give the same mask";
  EXPECT_NE(run(2, 0, 7), base) << "another epoch must give another mask";
  EXPECT_NE(run(1, 1, 7), base) << "another layer must give another mask";
  EXPECT_NE(run(1, 0, 8), base) << "another seed must give another mask";
  // The same module twice in one epoch, and its backward with the forward's mask.
  nn::Dropout<double> drop(0.5f, 0);
  const auto first = dense_values(drop.forward(train_context(4), {}, x));
  EXPECT_EQ(dense_values(drop.forward(train_context(4), {}, x)), first);
  const Tensor<double> ones =
      Tensor<double>::from_host(testing::host(), std::vector<double>(200, 1.0), 20, 10);
  const auto dx = to_doubles(drop.backward(train_context(4), {}, ones, true));
  for (std::size_t i = 0; i < dx.size(); ++i)
    EXPECT_EQ(dx[i] == 0, first[i] == 0) << "backward must drop what forward dropped, at " << i;
}

TEST(Dropout, RowOffsetSelectsTheGlobalRows) {
  // Rows 4.. of a matrix dropped with row_offset 4 get the mask rows 4.. of the whole matrix get.
  const Tensor<double> full_x = testing::random_matrix<double>(10, 6, 170);
  const auto full_values = to_doubles(full_x);
  Features<double> full = full_x.clone(testing::host());
  Features<double> tail = Tensor<double>::from_host(
      testing::host(), std::vector<double>(full_values.begin() + 24, full_values.end()), 6, 6);
  nn::Dropout<double> a(0.5f, 1), b(0.5f, 1);
  const auto y_full = dense_values(a.forward(train_context(3, 0), {}, full));
  const auto y_tail = dense_values(b.forward(train_context(3, 4), {}, tail));
  EXPECT_EQ(y_tail, std::vector<double>(y_full.begin() + 24, y_full.end()));
}

TEST(Dropout, SparseInputGetsTheDenseMask) {
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    const auto sparse = sparse_features<T>(30, 12, 180);
    Features<T> sparse_in = sparse.clone(testing::host());
    Features<T> dense_in = Tensor<T>::from_host(
        testing::host(),
        [&] {
          const auto d = dense_adjacency(sparse, false);
          return std::vector<T>(d.begin(), d.end());
        }(),
        30, 12);
    nn::Dropout<T> a(0.5f, 4), b(0.5f, 4);
    const auto& out = a.forward(train_context(2), {}, sparse_in);
    const auto* out_sparse = std::get_if<CsrMatrix<std::int32_t, T>>(&out);
    ASSERT_NE(out_sparse, nullptr) << "a sparse input gives a sparse output";
    EXPECT_EQ(out_sparse->num_rows(), 30);
    EXPECT_EQ(out_sparse->num_cols, 12);
    const auto expected = dense_values(b.forward(train_context(2), {}, dense_in));
    EXPECT_TRUE(testing::all_close(dense_values(out), expected, 1e-6, 0));
    // Only the kept entries are stored: each a nonzero value, fewer than the input's, not none.
    const auto values = out_sparse->values.to_vector(testing::host());
    for (const T v : values) EXPECT_NE(v, T(0));
    EXPECT_GT(out_sparse->num_edges(), 0);
    EXPECT_LT(out_sparse->num_edges(), sparse.num_edges());
  });
}

TEST(Dropout, SparseInputWithNewStructureIsNotServedStale) {
  // Two sparse inputs with the same row and entry counts but different columns (and widths):
  // the second forward must output the second input's structure.
  const auto a = csr_from_rows<double>(4, {{{0, 1.0}, {1, 2.0}}, {{2, 3.0}}}, true);
  const auto b = csr_from_rows<double>(6, {{{3, 4.0}}, {{0, 5.0}, {5, 6.0}}}, true);
  Features<double> a_in = a.clone(testing::host());
  Features<double> b_in = b.clone(testing::host());
  nn::Dropout<double> drop(0.25f, 0);
  drop.forward(train_context(), {}, a_in);
  const auto& out = drop.forward(train_context(), {}, b_in);
  const auto& out_sparse = std::get<CsrMatrix<std::int32_t, double>>(out);
  EXPECT_EQ(out_sparse.num_cols, 6);
  EXPECT_EQ(out_sparse.num_rows(), b.num_rows());
  nn::Dropout<double> fresh(0.25f, 0);
  EXPECT_EQ(dense_values(out), dense_values(fresh.forward(train_context(), {}, b_in)));
}

TEST(Dropout, GradientMatchesFiniteDifferences) {
  nn::Dropout<double> drop(0.4f, 1);
  Features<double> x = testing::random_matrix<double>(9, 6, 190);
  check_module_gradients(drop, train_context(6), no_graph(), x, 191);
  Features<double> sparse = sparse_features<double>(9, 6, 192);
  check_module_gradients(drop, train_context(6), no_graph(), sparse, 193);
}

TEST(Dropout, RejectsInvalidProbability) {
  EXPECT_THROW(nn::Dropout<double>(1.0f, 0), LogicError);
  EXPECT_THROW(nn::Dropout<double>(-0.1f, 0), LogicError);
  EXPECT_NO_THROW(nn::Dropout<double>(0.0f, 0));
}

// ---- AggregateTransform ------------------------------------------------------------------------

TEST(AggregateTransform, BothOrdersMatchReferenceAndAccumulate) {
  // out (+)= Agg(A, X) W and its backward, for in < out (aggregate first), in >= out and sparse
  // X (transform first), with Sum over a weighted graph and Mean over a plain one.
  for (const Aggregate aggregate : {Aggregate::Sum, Aggregate::Mean}) {
    const bool mean = aggregate == Aggregate::Mean;
    const auto graph = random_graph<double>(6, 8, 0.35, 200, /*weighted=*/!mean);
    const auto a = dense_adjacency(graph, mean);
    for (const auto& [in, out, sparse] : {std::tuple{3, 5, false}, std::tuple{5, 3, false},
                                          std::tuple{4, 4, false}, std::tuple{3, 5, true}}) {
      SCOPED_TRACE(std::string(mean ? "mean" : "sum") + " in=" + std::to_string(in) +
                   " out=" + std::to_string(out) + (sparse ? " sparse" : " dense"));
      Features<double> x = testing::random_matrix<double>(8, in, 201);
      if (sparse) x = sparse_features<double>(8, in, 202);
      const auto xd = dense_values(x);
      const Tensor<double> w = testing::random_matrix<double>(in, out, 203);
      const auto wd = to_doubles(w);
      const auto ax = matmul(a, xd, 6, 8, in);
      const auto axw = matmul(ax, wd, 6, in, out);

      nn::AggregateTransform<double> at(aggregate);
      Tensor<double> y = testing::random_matrix<double>(6, out, 204);  // garbage: overwritten
      at.forward(cpu(), graph.view(), x, w, y, /*accumulate=*/false);
      EXPECT_TRUE(testing::all_close(y, axw, 1e-12, 1e-12)) << "forward";
      const Tensor<double> y0 = testing::random_matrix<double>(6, out, 205);
      Tensor<double> y_acc = y0.clone(testing::host());
      at.forward(cpu(), graph.view(), x, w, y_acc, /*accumulate=*/true);
      EXPECT_TRUE(testing::all_close(y_acc, add(to_doubles(y0), axw), 1e-12, 1e-12))
          << "accumulating forward";

      // dW = (A X)^T dy; dX = A^T dy W^T.
      const Tensor<double> dy = testing::random_matrix<double>(6, out, 206);
      const auto dyd = to_doubles(dy);
      const auto expected_dw = matmul(transpose(ax, 6, in), dyd, in, 6, out);
      const auto expected_dx =
          matmul(matmul(transpose(a, 6, 8), dyd, 8, 6, out), transpose(wd, in, out), 8, out, in);
      Tensor<double> dw = testing::random_matrix<double>(in, out, 207);
      const Tensor<double> dx0 = testing::random_matrix<double>(8, in, 208);
      Tensor<double> dx = dx0.clone(testing::host());
      at.backward(cpu(), graph.view(), x, w, dy, dw, dx, /*need_dx=*/false, false);
      EXPECT_TRUE(testing::all_close(dw, expected_dw, 1e-12, 1e-12)) << "dW";
      EXPECT_EQ(to_doubles(dx), to_doubles(dx0)) << "need_dx = false leaves dx alone";
      at.backward(cpu(), graph.view(), x, w, dy, dw, dx, /*need_dx=*/true, /*accumulate_dx=*/true);
      EXPECT_TRUE(testing::all_close(dx, add(to_doubles(dx0), expected_dx), 1e-12, 1e-12))
          << "accumulated dX";
      at.backward(cpu(), graph.view(), x, w, dy, dw, dx, /*need_dx=*/true, false);
      EXPECT_TRUE(testing::all_close(dx, expected_dx, 1e-12, 1e-12)) << "dX";
      EXPECT_TRUE(testing::all_close(dw, expected_dw, 1e-12, 1e-12)) << "dW overwritten";
    }
  }
}

TEST(AggregateTransform, CostRuleOnFullGraphAndBlocks) {
  // Full graph (rows = columns): the narrower side, ties transform first.
  EXPECT_TRUE(nn::aggregate_first_is_cheaper(1000, 1000, 9000, 128, 256));
  EXPECT_FALSE(nn::aggregate_first_is_cheaper(1000, 1000, 9000, 256, 40));
  EXPECT_FALSE(nn::aggregate_first_is_cheaper(1000, 1000, 9000, 64, 64));
  // SAGE 15,10,5's middle block: ~6k destinations of ~67k sources, 256 -> 256 and 256 -> 40.
  EXPECT_TRUE(nn::aggregate_first_is_cheaper(6000, 67000, 60000, 256, 256));
  EXPECT_TRUE(nn::aggregate_first_is_cheaper(1024, 10000, 10240, 256, 40));
  // A block whose output is far narrower than its input still transforms first.
  EXPECT_FALSE(nn::aggregate_first_is_cheaper(3, 40, 24, 32, 2));
}

TEST(AggregateTransform, BlockOrdersAgreeAndTheChosenOneCountsFewerFlops) {
  // A block: 3 destinations over 40 sources, 6 -> 6 features. Both forced orders match the
  // dense reference; the automatic one aggregates first and its kernels (as the kernel profile
  // counts them, forward and backward with dX) do fewer floating-point operations.
  const auto graph = random_graph<double>(3, 40, 0.2, 210, /*weighted=*/false);
  const auto a = dense_adjacency(graph, /*mean=*/true);
  const std::int64_t in = 6, out = 6;
  const Tensor<double> x = testing::random_matrix<double>(40, in, 211);
  const Tensor<double> w = testing::random_matrix<double>(in, out, 212);
  const Tensor<double> dy = testing::random_matrix<double>(3, out, 213);
  const auto axw = matmul(matmul(a, to_doubles(x), 3, 40, in), to_doubles(w), 3, in, out);
  const auto expected_dx = matmul(matmul(transpose(a, 3, 40), to_doubles(dy), 40, 3, out),
                                  transpose(to_doubles(w), in, out), 40, out, in);
  double flops[3] = {};
  bool first[3] = {};
  const nn::AggregationOrder orders[3] = {nn::AggregationOrder::AggregateFirst,
                                          nn::AggregationOrder::TransformFirst,
                                          nn::AggregationOrder::Cheaper};
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE("order " + std::to_string(k));
    nn::AggregateTransform<double> at(Aggregate::Mean, orders[k]);
    const Features<double> fx = x.clone(testing::host());
    Tensor<double> y = testing::random_matrix<double>(3, out, 214);
    Tensor<double> dw = testing::random_matrix<double>(in, out, 215);
    Tensor<double> dx = testing::random_matrix<double>(40, in, 216);
    kernels::OpProfile profile;
    {
      const kernels::ProfileScope scope(&profile);
      at.forward(cpu(), graph.view(), fx, w, y, false);
      at.backward(cpu(), graph.view(), fx, w, dy, dw, dx, /*need_dx=*/true, false);
    }
    first[k] = at.aggregated_first();
    for (const auto& op : profile.ops) flops[k] += op.flops;
    EXPECT_TRUE(testing::all_close(y, axw, 1e-12, 1e-12)) << "forward";
    EXPECT_TRUE(testing::all_close(dx, expected_dx, 1e-12, 1e-12)) << "dX";
  }
  EXPECT_TRUE(first[0]);
  EXPECT_FALSE(first[1]);
  EXPECT_TRUE(first[2]) << "a block with many more sources than destinations aggregates first";
  EXPECT_LT(flops[0], flops[1]);
  EXPECT_EQ(flops[2], std::min(flops[0], flops[1]));
}

}  // namespace
}  // namespace halo::nn_test
