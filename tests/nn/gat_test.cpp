// GATConv and EluDropout: forward against a plain-loop reference, backward against finite
// differences (double), the attention's properties, blocks and the attention dropout's keys.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <tuple>
#include <vector>

#include <halo/kernels/attention.hpp>
#include <halo/kernels/error.hpp>
#include <halo/nn/gat.hpp>
#include <halo/nn/layers.hpp>

#include "nn_helpers.hpp"
#include "support/testing.hpp"

namespace halo::nn_test {
namespace {

template <class T>
void randomize_parameters(nn::Module<T>& m, std::uint64_t seed) {
  for (auto* p : m.parameters()) randomize(p->value, seed++);
}

/// A graph with a self-loop on every row (GraphPreparation::SelfLoops): random_graph's edges
/// without its self-loops, then (r, r) first in each row. num_rows <= num_cols.
template <class T>
CsrMatrix<NodeId, T> with_self_loops(std::int64_t num_rows, std::int64_t num_cols, double density,
                                     std::uint64_t seed, const std::vector<int>& isolated = {}) {
  const auto g = random_graph<double>(num_rows, num_cols, density, seed, /*weighted=*/false);
  std::vector<Row> rows(static_cast<std::size_t>(num_rows));
  for (std::int64_t r = 0; r < num_rows; ++r) {
    rows[r].emplace_back(static_cast<int>(r), 1.0);
    if (std::find(isolated.begin(), isolated.end(), r) != isolated.end()) continue;
    for (std::int64_t e = g.indptr(r); e < g.indptr(r + 1); ++e)
      if (g.indices(e) != r) rows[r].emplace_back(static_cast<int>(g.indices(e)), 1.0);
  }
  return csr_from_rows<T>(num_cols, rows, /*weighted=*/false);
}

/// GAT's layer in plain loops, in double: the output (rows x width) and the attention
/// coefficients (edges x heads, the CSR's order).
struct GatReference {
  std::vector<double> y, alpha;
};

GatReference gat_reference(const CsrMatrix<NodeId, double>& g, const std::vector<double>& x,
                           std::int64_t in, const std::vector<double>& w,
                           const std::vector<double>& a_src, const std::vector<double>& a_dst,
                           const std::vector<double>& bias, std::int64_t heads, std::int64_t out,
                           bool concat) {
  const std::int64_t n_src = g.num_cols, n_dst = g.num_rows(), hf = heads * out;
  const std::vector<double> z = matmul(x, w, n_src, in, hf);
  GatReference r;
  r.alpha.assign(static_cast<std::size_t>(g.num_edges() * heads), 0.0);
  const std::int64_t width = concat ? hf : out;
  r.y.assign(static_cast<std::size_t>(n_dst * width), 0.0);
  for (std::int64_t i = 0; i < n_dst; ++i) {
    for (std::int64_t h = 0; h < heads; ++h) {
      double dst = 0;
      for (std::int64_t f = 0; f < out; ++f) dst += a_dst[h * out + f] * z[i * hf + h * out + f];
      std::vector<double> e;
      for (std::int64_t k = g.indptr(i); k < g.indptr(i + 1); ++k) {
        const std::int64_t j = g.indices(k);
        double s = dst;
        for (std::int64_t f = 0; f < out; ++f) s += a_src[h * out + f] * z[j * hf + h * out + f];
        e.push_back(s > 0 ? s : 0.2 * s);
      }
      double m = -1e300, sum = 0;
      for (const double v : e) m = std::max(m, v);
      for (const double v : e) sum += std::exp(v - m);
      for (std::int64_t k = g.indptr(i); k < g.indptr(i + 1); ++k) {
        const double a = std::exp(e[static_cast<std::size_t>(k - g.indptr(i))] - m) / sum;
        r.alpha[k * heads + h] = a;
        const std::int64_t j = g.indices(k);
        for (std::int64_t f = 0; f < out; ++f) {
          const double v = a * z[j * hf + h * out + f];
          if (concat)
            r.y[i * width + h * out + f] += v;
          else
            r.y[i * width + f] += v / static_cast<double>(heads);
        }
      }
    }
    for (std::int64_t c = 0; c < width; ++c) r.y[i * width + c] += bias[c];
  }
  return r;
}

template <class T>
GatReference reference_of(nn::GATConv<T>& layer, const CsrMatrix<NodeId, T>& g,
                          const Features<T>& x, std::int64_t in, std::int64_t out, bool concat) {
  const auto p = layer.parameters();
  const auto gd = csr_from_rows<double>(
      g.num_cols,
      [&] {
        std::vector<Row> rows(static_cast<std::size_t>(g.num_rows()));
        for (std::int64_t r = 0; r < g.num_rows(); ++r)
          for (std::int64_t e = g.indptr(r); e < g.indptr(r + 1); ++e)
            rows[r].emplace_back(static_cast<int>(g.indices(e)), 1.0);
        return rows;
      }(),
      false);
  return gat_reference(gd, dense_values(x), in, to_doubles(p[0]->value), to_doubles(p[1]->value),
                       to_doubles(p[2]->value), to_doubles(p[3]->value), layer.heads(), out,
                       concat);
}

TEST(GatConv, ForwardMatchesReference) {
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    const auto graph = with_self_loops<T>(11, 11, 0.3, 7, /*isolated=*/{4});
    for (const auto& [heads, concat, sparse] :
         {std::tuple{3, true, false}, std::tuple{2, false, false}, std::tuple{1, true, false},
          std::tuple{1, false, true}, std::tuple{4, true, true}}) {
      SCOPED_TRACE("heads=" + std::to_string(heads) + (concat ? " concat" : " mean") +
                   (sparse ? " sparse" : " dense"));
      const std::int64_t in = 5, out = 3;
      nn::GATConv<T> layer(cpu(), in, out, heads, concat, 0.5f, 0, /*seed=*/7, /*param_id=*/0);
      randomize_parameters(layer, 11);
      Features<T> x = testing::random_matrix<T>(11, in, 12);
      if (sparse) x = testing::random_csr<std::int32_t, T>(11, in, 2.0, 13, /*weighted=*/true);
      const auto expected = reference_of(layer, graph, x, in, out, concat);
      // Eval mode: no attention dropout.
      const auto& y = std::get<Tensor<T>>(layer.forward(eval_context(), graph.view(), x));
      ASSERT_EQ(y.rows(), 11);
      ASSERT_EQ(y.cols(), concat ? heads * out : out);
      EXPECT_TRUE(testing::all_close(y, expected.y, testing::rtol<T>(), testing::atol<T>()));
      EXPECT_TRUE(testing::all_close(layer.attention(), expected.alpha, testing::rtol<T>(),
                                     testing::atol<T>()));
    }
  });
}

TEST(GatConv, AttentionRowsSumToOneAndIsolatedNodesAttendToThemselves) {
  const auto graph = with_self_loops<double>(13, 13, 0.35, 20, /*isolated=*/{0, 6});
  const std::int64_t heads = 4, out = 2;
  nn::GATConv<double> layer(cpu(), 3, out, heads, /*concat=*/true, 0.f, 0, 21, 0);
  randomize_parameters(layer, 22);
  Features<double> x = testing::random_matrix<double>(13, 3, 23);
  const auto& y = std::get<Tensor<double>>(layer.forward(eval_context(), graph.view(), x));
  const auto alpha = to_doubles(layer.attention());
  for (std::int64_t r = 0; r < 13; ++r)
    for (std::int64_t h = 0; h < heads; ++h) {
      double sum = 0;
      for (std::int64_t e = graph.indptr(r); e < graph.indptr(r + 1); ++e) {
        EXPECT_GT(alpha[e * heads + h], 0.0);
        sum += alpha[e * heads + h];
      }
      EXPECT_NEAR(sum, 1.0, 1e-12) << "row " << r << " head " << h;
    }
  // An isolated node (its self-loop only) gets its own z = x W, plus the bias.
  const auto w = to_doubles(layer.parameters()[0]->value);
  const auto b = to_doubles(layer.parameters()[3]->value);
  const auto z = matmul(dense_values(x), w, 13, 3, heads * out);
  const auto yd = to_doubles(y);
  for (const int v : {0, 6}) {
    ASSERT_EQ(graph.indptr(v + 1) - graph.indptr(v), 1);
    for (std::int64_t c = 0; c < heads * out; ++c)
      EXPECT_NEAR(yd[v * heads * out + c], z[v * heads * out + c] + b[c], 1e-12);
  }
}

TEST(GatConv, GradientMatchesFiniteDifferences) {
  // Dense and sparse inputs, concatenated and averaged heads, one head; the attention dropout
  // off and on (its mask is a pure function of the key, the same in every pass).
  const auto graph = with_self_loops<double>(10, 10, 0.35, 30, /*isolated=*/{3});
  for (const auto& [heads, concat, sparse, p] :
       {std::tuple{3, true, false, 0.f}, std::tuple{2, false, false, 0.f},
        std::tuple{1, true, false, 0.f}, std::tuple{1, false, true, 0.f},
        std::tuple{3, true, true, 0.4f}, std::tuple{2, false, false, 0.5f}}) {
    SCOPED_TRACE("heads=" + std::to_string(heads) + (concat ? " concat" : " mean") +
                 (sparse ? " sparse" : " dense") + " p=" + std::to_string(p));
    nn::GATConv<double> layer(cpu(), 4, 3, heads, concat, p, 1, 31, 0);
    randomize_parameters(layer, 32);
    Features<double> x = testing::random_matrix<double>(10, 4, 33);
    if (sparse) x = testing::random_csr<std::int32_t, double>(10, 4, 2.5, 34, /*weighted=*/true);
    check_module_gradients(layer, train_context(3), graph.view(), x, 35);
  }
}

TEST(GatConv, GradientMatchesFiniteDifferencesOnABlock) {
  // 6 destinations, 9 sources (destinations first), each destination with its self-loop.
  const auto graph = with_self_loops<double>(6, 9, 0.4, 40);
  nn::GATConv<double> layer(cpu(), 3, 2, 2, /*concat=*/true, 0.3f, 0, 41, 0);
  randomize_parameters(layer, 42);
  Features<double> x = testing::random_matrix<double>(9, 3, 43);
  check_module_gradients(layer, train_context(), graph.view(), x, 44);
}

TEST(GatConv, BlockGivesTheFullGraphsRowsWithDropout) {
  // A block whose sources are the nodes {7, 2, 9, 4, 0} (destinations 7, 2, 9 first) and edges
  // the full graph's between them: the same outputs as the full graph's rows 7, 2 and 9, the
  // attention dropout included (keyed by the nodes' ids, not the rows).
  const int n = 10;
  std::vector<Row> full_rows(n);
  for (int r = 0; r < n; ++r) {
    full_rows[r].emplace_back(r, 1.0);
    for (int c = 0; c < n; ++c)
      if (c != r && (r * 5 + c * 3) % 4 == 0) full_rows[r].emplace_back(c, 1.0);
  }
  const std::vector<int> ids = {7, 2, 9, 4, 0};
  std::vector<Row> block_rows(3);
  for (int i = 0; i < 3; ++i)
    for (const auto& [c, w] : full_rows[ids[i]]) {
      const auto at = std::find(ids.begin(), ids.end(), c);
      // Keep the block's rows whole: drop every edge whose source is not in the block from
      // the full graph as well.
      if (at != ids.end()) block_rows[i].emplace_back(static_cast<int>(at - ids.begin()), w);
    }
  for (int i = 0; i < 3; ++i) {
    auto& row = full_rows[ids[i]];
    row.erase(std::remove_if(row.begin(), row.end(),
                             [&](const auto& e) {
                               return std::find(ids.begin(), ids.end(), e.first) == ids.end();
                             }),
              row.end());
  }
  const auto full = csr_from_rows<double>(n, full_rows, false);
  const auto block = csr_from_rows<double>(5, block_rows, false);
  const Tensor<double> xs = testing::random_matrix<double>(n, 4, 50);
  std::vector<double> xb;
  for (const int v : ids)
    for (int c = 0; c < 4; ++c) xb.push_back(xs.data()[v * 4 + c]);
  Features<double> x_full = testing::random_matrix<double>(n, 4, 50);
  Features<double> x_block = Tensor<double>::from_host(testing::host(), xb, 5, 4);
  const auto node_ids =
      Tensor<NodeId>::from_host(testing::host(), std::vector<NodeId>(ids.begin(), ids.end()), 5, 1);
  nn::GATConv<double> layer(cpu(), 4, 3, 3, true, 0.5f, 0, 51, 0);
  randomize_parameters(layer, 52);
  const auto whole =
      to_doubles(std::get<Tensor<double>>(layer.forward(train_context(4), full.view(), x_full)));
  nn::Adjacency<double> a(block.view());
  a.source_ids = node_ids.span();
  const auto part =
      to_doubles(std::get<Tensor<double>>(layer.forward(train_context(4), a, x_block)));
  ASSERT_EQ(part.size(), 27u);
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 9; ++c) expected.push_back(whole[ids[i] * 9 + c]);
  EXPECT_TRUE(testing::all_close(part, expected, 1e-12, 1e-12));
  // And the dropout did drop something: eval differs.
  const auto eval = to_doubles(std::get<Tensor<double>>(layer.forward(eval_context(), a, x_block)));
  EXPECT_NE(eval, part);
}

TEST(GatConv, AttentionDropoutDropsAboutPOfTheEdges) {
  const auto graph = with_self_loops<double>(60, 60, 0.2, 60);
  const std::int64_t heads = 4;
  std::vector<double> ones(static_cast<std::size_t>(graph.num_edges() * heads), 1.0);
  Tensor<double> in = Tensor<double>::from_host(testing::host(), ones, graph.num_edges(), heads);
  Tensor<double> out(testing::host(), graph.num_edges(), heads);
  const float p = 0.6f;
  kernels::edge_dropout<NodeId, double>(cpu(), {1, 2, 3, 0, {}}, p, graph.view(), in.view(),
                                        out.view());
  std::int64_t dropped = 0;
  for (const double v : to_doubles(out)) {
    if (v == 0) {
      ++dropped;
    } else {
      EXPECT_NEAR(v, 1.0 / (1.0 - p), 1e-12);
    }
  }
  const double fraction = static_cast<double>(dropped) / static_cast<double>(out.numel());
  EXPECT_NEAR(fraction, p, 0.05) << out.numel() << " coefficients";
}

TEST(GatConv, RejectsMismatchedInputsAndBackwardBeforeForward) {
  const auto graph = with_self_loops<double>(5, 5, 0.4, 70);
  nn::GATConv<double> layer(cpu(), 3, 2, 2, true, 0.f, 0, 71, 0);
  Features<double> wide = testing::random_matrix<double>(5, 4, 72);
  EXPECT_THROW(layer.forward(eval_context(), graph.view(), wide), LogicError);
  Features<double> short_x = testing::random_matrix<double>(4, 3, 73);
  EXPECT_THROW(layer.forward(eval_context(), graph.view(), short_x), LogicError);
  const Tensor<double> dy = testing::random_matrix<double>(5, 4, 74);
  EXPECT_THROW(layer.backward(eval_context(), graph.view(), dy, true), LogicError);
  EXPECT_THROW(nn::GATConv<double>(cpu(), 3, 2, 0, true, 0.f, 0, 1, 0), LogicError);
  EXPECT_THROW(nn::GATConv<double>(cpu(), 3, 2, 2, true, 1.f, 0, 1, 0), LogicError);
}

// ---- EluDropout --------------------------------------------------------------------------------

TEST(EluDropout, ForwardIsEluAndGradientMatchesFiniteDifferences) {
  Features<double> x = testing::random_matrix<double>(8, 5, 80);
  const auto xd = dense_values(x);
  nn::EluDropout<double> eval_layer(0.5f, 1);
  const auto y = dense_values(eval_layer.forward(eval_context(), {}, x));
  for (std::size_t i = 0; i < xd.size(); ++i)
    EXPECT_NEAR(y[i], xd[i] > 0 ? xd[i] : std::expm1(xd[i]), 1e-12);
  for (const float p : {0.f, 0.4f}) {
    nn::EluDropout<double> layer(p, 1);
    check_module_gradients(layer, train_context(2), {}, x, 81);
  }
}

TEST(EluDropout, TrainingAppliesTheDropoutModulesMask) {
  Features<double> x = testing::random_matrix<double>(9, 6, 90);
  nn::EluDropout<double> fused(0.5f, 2);
  nn::Dropout<double> drop(0.5f, 2);
  const auto y = dense_values(fused.forward(train_context(7, 3), {}, x));
  const auto xd = dense_values(x);
  std::vector<double> elu(xd.size());
  for (std::size_t i = 0; i < xd.size(); ++i) elu[i] = xd[i] > 0 ? xd[i] : std::expm1(xd[i]);
  Features<double> e = Tensor<double>::from_host(testing::host(), elu, 9, 6);
  const auto expected = dense_values(drop.forward(train_context(7, 3), {}, e));
  EXPECT_TRUE(testing::all_close(y, expected, 1e-12, 1e-12));
}

}  // namespace
}  // namespace halo::nn_test
