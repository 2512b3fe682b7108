// Tests of graph_from_edges and the preprocessing functions against plain references.

#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <span>
#include <variant>
#include <vector>

#include <halo/datasets/graph_builder.hpp>
#include <halo/datasets/preprocess.hpp>
#include <halo/kernels/error.hpp>

#include "datasets_test_util.hpp"

namespace halo::datasets::test {
namespace {

using Rows = std::vector<Row>;

// ---- plain references ---------------------------------------------------------------------------

Rows ref_rows(int n, const std::vector<std::pair<int, int>>& entries,
              const std::vector<float>& values = {}) {
  Rows rows(static_cast<std::size_t>(n));
  for (std::size_t e = 0; e < entries.size(); ++e) {
    rows[static_cast<std::size_t>(entries[e].first)].emplace_back(entries[e].second,
                                                                  values.empty() ? 1.0 : values[e]);
  }
  return rows;
}

Rows ref_sorted(Rows rows) {
  for (auto& row : rows) {
    std::stable_sort(row.begin(), row.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  return rows;
}

Rows ref_symmetrize(const Rows& rows) {
  std::vector<std::set<int>> sets(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (const auto& [c, v] : rows[r]) {
      sets[r].insert(c);
      sets[static_cast<std::size_t>(c)].insert(static_cast<int>(r));
    }
  }
  Rows out(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (const int c : sets[r]) out[r].emplace_back(c, 1.0);
  }
  return out;
}

Rows ref_deduplicate(const Rows& rows) {
  Rows out(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::map<int, double> merged;
    for (const auto& [c, v] : rows[r]) merged[c] += v;
    for (const auto& [c, v] : merged) out[r].emplace_back(c, v);
  }
  return out;
}

Rows ref_remove_self_loops(const Rows& rows) {
  Rows out(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (const auto& [c, v] : rows[r]) {
      if (c != static_cast<int>(r)) out[r].emplace_back(c, v);
    }
  }
  return out;
}

Rows ref_add_self_loops(const Rows& rows) {
  Rows out = rows;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int self = static_cast<int>(r);
    auto& row = out[r];
    if (std::any_of(row.begin(), row.end(), [&](const auto& e) { return e.first == self; })) {
      continue;
    }
    auto at = std::find_if(row.begin(), row.end(), [&](const auto& e) { return e.first > self; });
    row.insert(at, {self, 1.0});
  }
  return out;
}

/// Â = D^-1/2 (A + I) D^-1/2 as a dense matrix, from the definition.
std::vector<std::vector<double>> ref_gcn_dense(const Rows& rows) {
  const std::size_t n = rows.size();
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  for (std::size_t r = 0; r < n; ++r) {
    for (const auto& [c, v] : rows[r]) a[r][static_cast<std::size_t>(c)] += v;
  }
  for (std::size_t r = 0; r < n; ++r) {
    const bool has_loop = std::any_of(rows[r].begin(), rows[r].end(), [&](const auto& e) {
      return e.first == static_cast<int>(r);
    });
    if (!has_loop) a[r][r] += 1.0;
  }
  std::vector<double> deg(n, 0.0);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < n; ++c) deg[r] += a[r][c];
  }
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < n; ++c) {
      if (a[r][c] != 0.0) a[r][c] /= std::sqrt(deg[r] * deg[c]);
    }
  }
  return a;
}

/// Graphs every preprocessing test runs on: empty, one node, a hand-made one and random ones.
struct Case {
  int n;
  std::vector<std::pair<int, int>> entries;
};
std::vector<Case> cases() {
  return {
      {0, {}},
      {1, {}},
      {1, {{0, 0}}},
      {4, {{2, 1}, {0, 3}, {2, 0}, {2, 1}, {3, 3}, {1, 2}}},  // unsorted row 2, duplicate, loop
      {6, {{5, 0}}},                                          // mostly isolated
      {17, random_entries(17, 40, 1)},
      {257, random_entries(257, 2000, 2)},
  };
}

// ---- graph_from_edges ---------------------------------------------------------------------------

TEST(Preprocess, GraphFromEdgesMatchesReference) {
  for (const Case& c : cases()) {
    // entries are (row = dst, col = src); graph_from_edges takes (src, dst).
    std::vector<std::pair<NodeId, NodeId>> edges;
    for (const auto& [r, col] : c.entries) edges.emplace_back(col, r);
    const Graph g = graph_from_edges(cpu(), c.n, edges);
    EXPECT_EQ(g.num_rows(), c.n);
    EXPECT_EQ(g.num_cols, c.n);
    EXPECT_TRUE(g.values.empty());
    EXPECT_EQ(rows_of(g), ref_sorted(ref_rows(c.n, c.entries))) << "n = " << c.n;
  }
}

TEST(Preprocess, GraphFromEdgesRowIsDestination) {
  const std::vector<std::pair<NodeId, NodeId>> edges = {{0, 1}, {2, 1}, {1, 0}};
  const Graph g = graph_from_edges(cpu(), 3, edges);
  EXPECT_EQ(vec(g.indptr), (std::vector<std::int64_t>{0, 1, 3, 3}));
  EXPECT_EQ(vec(g.indices), (std::vector<NodeId>{1, 0, 2}));
}

TEST(Preprocess, GraphFromEdgesRejectsOutOfRangeIds) {
  const std::vector<std::pair<NodeId, NodeId>> edges = {{0, 1}, {1, 3}};
  EXPECT_THROW(graph_from_edges(cpu(), 3, edges), LogicError);
  const std::vector<std::pair<NodeId, NodeId>> negative = {{-1, 0}};
  EXPECT_THROW(graph_from_edges(cpu(), 3, negative), LogicError);
  EXPECT_THROW(graph_from_edges(cpu(), -1, {}), LogicError);
}

// ---- graph preprocessing ------------------------------------------------------------------------

TEST(Preprocess, SymmetrizeMatchesReference) {
  for (const Case& c : cases()) {
    const Graph out = symmetrize(cpu(), make_graph(c.n, c.entries));
    EXPECT_TRUE(out.values.empty());
    EXPECT_EQ(rows_of(out), ref_symmetrize(ref_rows(c.n, c.entries))) << "n = " << c.n;
  }
}

TEST(Preprocess, SymmetricFlagIsSetAndCarried) {
  const Graph a = make_graph(4, {{0, 1}, {2, 1}, {3, 3}});
  EXPECT_FALSE(a.symmetric);
  const Graph s = symmetrize(cpu(), a);
  EXPECT_TRUE(s.symmetric);
  EXPECT_TRUE(add_self_loops(cpu(), s).symmetric);
  EXPECT_TRUE(remove_self_loops(cpu(), s).symmetric);
  EXPECT_TRUE(deduplicate(cpu(), s).symmetric);
  EXPECT_TRUE(gcn_normalize<float>(cpu(), s).symmetric);
  EXPECT_FALSE(gcn_normalize<float>(cpu(), a).symmetric);
}

TEST(Preprocess, SymmetrizeRejectsWeightedAndNonSquare) {
  EXPECT_THROW(symmetrize(cpu(), make_graph(2, {{0, 1}}, {2.0f})), LogicError);
  EXPECT_THROW(symmetrize(cpu(), make_csr(2, 3, {{0, 2}})), LogicError);
}

TEST(Preprocess, DeduplicateMatchesReference) {
  for (const Case& c : cases()) {
    const Graph out = deduplicate(cpu(), make_graph(c.n, c.entries));
    EXPECT_TRUE(out.values.empty());
    Rows want = ref_deduplicate(ref_rows(c.n, c.entries));
    for (auto& row : want) {
      for (auto& entry : row) entry.second = 1.0;  // unweighted: merged, not counted
    }
    EXPECT_EQ(rows_of(out), want) << "n = " << c.n;
  }
}

TEST(Preprocess, DeduplicateSumsWeights) {
  for (const Case& c : cases()) {
    std::vector<float> w;  // small integers: every sum is exact in float
    for (std::size_t e = 0; e < c.entries.size(); ++e) w.push_back(static_cast<float>(e % 5 + 1));
    const Graph out = deduplicate(cpu(), make_graph(c.n, c.entries, w));
    EXPECT_EQ(out.values.numel(), out.num_edges());
    EXPECT_EQ(rows_of(out), ref_deduplicate(ref_rows(c.n, c.entries, w))) << "n = " << c.n;
  }
}

TEST(Preprocess, RemoveSelfLoopsMatchesReference) {
  for (const Case& c : cases()) {
    std::vector<float> w;
    for (std::size_t e = 0; e < c.entries.size(); ++e) w.push_back(0.5f * static_cast<float>(e));
    EXPECT_EQ(rows_of(remove_self_loops(cpu(), make_graph(c.n, c.entries))),
              ref_remove_self_loops(ref_rows(c.n, c.entries)));
    EXPECT_EQ(rows_of(remove_self_loops(cpu(), make_graph(c.n, c.entries, w))),
              ref_remove_self_loops(ref_rows(c.n, c.entries, w)));
  }
}

TEST(Preprocess, AddSelfLoopsMatchesReference) {
  for (const Case& c : cases()) {
    std::vector<float> w;
    for (std::size_t e = 0; e < c.entries.size(); ++e) w.push_back(2.0f + static_cast<float>(e));
    EXPECT_EQ(rows_of(add_self_loops(cpu(), make_graph(c.n, c.entries))),
              ref_add_self_loops(ref_rows(c.n, c.entries)));
    EXPECT_EQ(rows_of(add_self_loops(cpu(), make_graph(c.n, c.entries, w))),
              ref_add_self_loops(ref_rows(c.n, c.entries, w)));
  }
}

TEST(Preprocess, SelfLoopsKeepSortedRowsSorted) {
  const Graph g = add_self_loops(cpu(), make_graph(4, {{0, 1}, {0, 3}, {2, 0}, {2, 1}, {3, 0}}));
  EXPECT_EQ(vec(g.indices), (std::vector<NodeId>{0, 1, 3, 1, 0, 1, 2, 0, 3}));
  EXPECT_EQ(vec(g.indptr), (std::vector<std::int64_t>{0, 3, 4, 7, 9}));
}

template <class T>
void check_gcn(const Case& c, const std::vector<float>& w, double tol) {
  const Graph a = make_graph(c.n, c.entries, w);
  const auto out = gcn_normalize<T>(cpu(), a);
  // Same pattern as add_self_loops, values from the dense reference.
  const Rows pattern = ref_add_self_loops(ref_rows(c.n, c.entries, w));
  const auto dense = ref_gcn_dense(ref_rows(c.n, c.entries, w));
  ASSERT_EQ(out.num_rows(), c.n);
  ASSERT_EQ(out.values.numel(), out.num_edges());
  const Rows got = rows_of(out);
  for (std::size_t r = 0; r < pattern.size(); ++r) {
    ASSERT_EQ(got[r].size(), pattern[r].size()) << "row " << r;
    std::map<int, double> merged;
    for (std::size_t k = 0; k < pattern[r].size(); ++k) {
      EXPECT_EQ(got[r][k].first, pattern[r][k].first) << "row " << r;
      merged[got[r][k].first] += got[r][k].second;  // duplicates add up, as in the dense matrix
    }
    for (const auto& [col, v] : merged) {
      EXPECT_NEAR(v, dense[r][static_cast<std::size_t>(col)], tol) << "entry " << r << ", " << col;
    }
  }
}

TEST(Preprocess, GcnNormalizeMatchesDenseReference) {
  for (const Case& c : cases()) {
    check_gcn<float>(c, {}, 1e-6);
    check_gcn<double>(c, {}, 1e-12);
    std::vector<float> w;
    for (std::size_t e = 0; e < c.entries.size(); ++e)
      w.push_back(0.25f * static_cast<float>(e % 7 + 1));
    check_gcn<float>(c, w, 1e-6);
    check_gcn<double>(c, w, 1e-12);
  }
}

TEST(Preprocess, GcnNormalizeDoesNotDoubleSelfLoops) {
  // Node 0 has a self-loop, node 1 gets one: A + I = [[1, 1], [1, 1]], all degrees 2.
  const auto out = gcn_normalize<double>(cpu(), make_graph(2, {{0, 0}, {0, 1}, {1, 0}}));
  EXPECT_EQ(out.num_edges(), 4);
  for (const double v : vec(out.values)) EXPECT_DOUBLE_EQ(v, 0.5);
}

TEST(Preprocess, LargeGraphMatchesReference) {
  // Large enough for the OpenMP paths (small inputs run serially).
  const Case c{10007, random_entries(10007, 60000, 5)};
  const Graph a = make_graph(c.n, c.entries);
  const Rows ref = ref_rows(c.n, c.entries);
  EXPECT_EQ(rows_of(symmetrize(cpu(), a)), ref_symmetrize(ref));
  EXPECT_EQ(rows_of(remove_self_loops(cpu(), a)), ref_remove_self_loops(ref));
  EXPECT_EQ(rows_of(add_self_loops(cpu(), a)), ref_add_self_loops(ref));
  Rows dedup = ref_deduplicate(ref);
  for (auto& row : dedup) {
    for (auto& entry : row) entry.second = 1.0;
  }
  EXPECT_EQ(rows_of(deduplicate(cpu(), a)), dedup);
  std::vector<std::pair<NodeId, NodeId>> edges;
  for (const auto& [r, col] : c.entries) edges.emplace_back(col, r);
  EXPECT_EQ(rows_of(graph_from_edges(cpu(), c.n, edges)), ref_sorted(ref));
}

TEST(Preprocess, ResultsIndependentOfThreadCount) {
  const Case c{10007, random_entries(10007, 60000, 9)};
  const Graph a = make_graph(c.n, c.entries);
  const kernels::Resources one(Device::Cpu, 1);
  EXPECT_EQ(rows_of(symmetrize(one, a)), rows_of(symmetrize(cpu(), a)));
  EXPECT_EQ(rows_of(deduplicate(one, a)), rows_of(deduplicate(cpu(), a)));
  EXPECT_EQ(rows_of(gcn_normalize<float>(one, a)), rows_of(gcn_normalize<float>(cpu(), a)));
}

TEST(Preprocess, RejectsNonSquareGraphs) {
  const Graph a = make_csr(2, 3, {{0, 2}});
  EXPECT_THROW(add_self_loops(cpu(), a), LogicError);
  EXPECT_THROW(remove_self_loops(cpu(), a), LogicError);
  EXPECT_THROW(gcn_normalize<float>(cpu(), a), LogicError);
  EXPECT_NO_THROW(deduplicate(cpu(), a));  // meaningful for any shape
}

// ---- features -----------------------------------------------------------------------------------

TEST(Preprocess, RowNormalizeDense) {
  kernels::FeatureMatrix<float> x = tensor<float>({1, 3, 0, 0, 0, 0, -2, 2, 4}, 3, 3);
  row_normalize(cpu(), x);
  const auto got = vec(std::get<kernels::Tensor<float>>(x));
  const std::vector<float> want = {0.25f, 0.75f, 0, 0, 0, 0, -0.25f, 0.25f, 0.5f};
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], want[i]) << i;
}

TEST(Preprocess, RowNormalizeSparse) {
  kernels::FeatureMatrix<float> x = make_csr(3, 5, {{0, 1}, {0, 4}, {2, 0}}, {2, 6, -3});
  row_normalize(cpu(), x);
  const auto& m = std::get<kernels::CsrMatrix<std::int32_t, float>>(x);
  EXPECT_EQ(vec(m.values), (std::vector<float>{0.25f, 0.75f, -1.0f}));
  EXPECT_EQ(vec(m.indices), (std::vector<std::int32_t>{1, 4, 0}));
}

TEST(Preprocess, RowNormalizeSparseImplicitOnes) {
  kernels::FeatureMatrix<float> x = make_csr(3, 5, {{0, 1}, {0, 4}, {2, 0}, {0, 2}, {0, 3}});
  row_normalize(cpu(), x);
  const auto& m = std::get<kernels::CsrMatrix<std::int32_t, float>>(x);
  EXPECT_EQ(vec(m.values), (std::vector<float>{0.25f, 0.25f, 0.25f, 0.25f, 1.0f}));
}

TEST(Preprocess, RowNormalizeLargeMatchesReference) {
  const std::int64_t n = 5003;
  const std::int64_t cols = 7;
  std::vector<float> values(static_cast<std::size_t>(n * cols));
  std::vector<std::pair<int, int>> entries;
  std::vector<float> sparse_values;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float u = kernels::rng::uniform(3, 5, i) - 0.25f;
    values[i] = (i / cols) % 11 == 0 ? 0.0f : u;  // every 11th row all zero
    if (values[i] != 0.0f) {
      entries.emplace_back(static_cast<int>(i / cols), static_cast<int>(i % cols));
      sparse_values.push_back(values[i]);
    }
  }
  kernels::FeatureMatrix<float> dense = tensor<float>(values, n, cols);
  kernels::FeatureMatrix<float> sparse = make_csr(n, cols, entries, sparse_values);
  row_normalize(cpu(), dense);
  row_normalize(cpu(), sparse);
  const auto got_dense = vec(std::get<kernels::Tensor<float>>(dense));
  const auto got_sparse = vec(std::get<kernels::CsrMatrix<std::int32_t, float>>(sparse).values);
  std::size_t k = 0;
  for (std::int64_t r = 0; r < n; ++r) {
    double l1 = 0.0;
    for (std::int64_t c = 0; c < cols; ++c)
      l1 += std::fabs(values[static_cast<std::size_t>(r * cols + c)]);
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto i = static_cast<std::size_t>(r * cols + c);
      const double want = l1 == 0.0 ? 0.0 : values[i] / l1;
      ASSERT_NEAR(got_dense[i], want, 1e-6) << r << ", " << c;
      if (values[i] != 0.0f) {
        ASSERT_NEAR(got_sparse[k++], want, 1e-6) << r << ", " << c;
      }
    }
  }
  EXPECT_EQ(k, got_sparse.size());
}

// ---- structural features
// --------------------------------------------------------------------------

/// The one-hot degree features, written out plainly: row r of the entries' graph has one 1 in
/// column min(number of entries in row r, 255), over min(max degree, 255) + 1 columns.
Rows ref_degree_features(int n, const std::vector<std::pair<int, int>>& entries,
                         std::int64_t& num_cols) {
  std::vector<int> degree(static_cast<std::size_t>(n), 0);
  for (const auto& e : entries) ++degree[static_cast<std::size_t>(e.first)];
  int max_degree = 0;
  for (int d : degree) max_degree = std::max(max_degree, d);
  num_cols = std::min(max_degree, 255) + 1;
  Rows rows(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) rows[static_cast<std::size_t>(r)] = {{std::min(degree[r], 255), 1.0}};
  return rows;
}

void expect_degree_features(int n, const std::vector<std::pair<int, int>>& entries) {
  std::int64_t want_cols = 0;
  const Rows want = ref_degree_features(n, entries, want_cols);
  const auto x = structural_features(cpu(), make_graph(n, entries), StructuralFeatures::Degree);
  const auto& m = std::get<kernels::CsrMatrix<std::int32_t, float>>(x);
  EXPECT_EQ(m.num_rows(), n);
  EXPECT_EQ(m.num_cols, want_cols);
  ASSERT_EQ(m.values.numel(), m.num_edges());  // explicit ones
  EXPECT_EQ(rows_of(m), want);
}

TEST(Preprocess, DegreeFeaturesMatchReference) {
  // Nodes 2, 4 and 5 are isolated (column 0); node 0 has a self-loop, node 3 a duplicate entry:
  // both count, as stored.
  expect_degree_features(6, {{0, 1}, {0, 2}, {0, 0}, {1, 0}, {3, 1}, {3, 1}});
  expect_degree_features(4, {});  // no edges: one column, every node in it
  expect_degree_features(0, {});
  expect_degree_features(257, random_entries(257, 900, 3));
}

TEST(Preprocess, DegreeFeaturesCapLargeDegreesAndMatchReferenceOnLargeGraphs) {
  const int n = 5003;  // above the serial threshold
  auto entries = random_entries(n, 20000, 9);
  for (int c = 0; c < 300; ++c) entries.emplace_back(7, c);  // a hub beyond the last bucket
  for (int c = 0; c < 255; ++c) entries.emplace_back(11, c);
  expect_degree_features(n, entries);
  const auto x = structural_features(cpu(), make_graph(n, entries), StructuralFeatures::Degree);
  const auto& m = std::get<kernels::CsrMatrix<std::int32_t, float>>(x);
  EXPECT_EQ(m.num_cols, kMaxDegreeBucket + 1);
  EXPECT_EQ(m.indices.data()[7], kMaxDegreeBucket);
}

TEST(Preprocess, ConstantFeaturesAreOneColumnOfOnes) {
  for (int n : {0, 1, 6, 5003}) {
    const auto x = structural_features(cpu(), make_graph(n, random_entries(n, 3 * n, 4)),
                                       StructuralFeatures::Constant);
    const auto& t = std::get<kernels::Tensor<float>>(x);
    EXPECT_EQ(t.rows(), n);
    EXPECT_EQ(t.cols(), 1);
    EXPECT_EQ(vec(t), std::vector<float>(static_cast<std::size_t>(n), 1.0f)) << n;
  }
}

TEST(Preprocess, StructuralFeaturesRejectNonSquareGraphs) {
  EXPECT_THROW(structural_features(cpu(), make_csr(2, 3, {{0, 2}}), StructuralFeatures::Degree),
               LogicError);
}

}  // namespace
}  // namespace halo::datasets::test
