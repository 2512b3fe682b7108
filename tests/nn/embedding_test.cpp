// SparseEmbedding and SparseAdam: lookups, sparse updates against dense Adam and against a
// plain reference of SparseAdam's semantics, untouched rows unchanged.

#include <cmath>
#include <gtest/gtest.h>
#include <vector>

#include <halo/nn/embedding.hpp>
#include <halo/nn/optimizer.hpp>

#include "nn_helpers.hpp"

namespace halo::nn_test {
namespace {

Tensor<NodeId> id_tensor(const std::vector<NodeId>& ids) {
  return Tensor<NodeId>::from_host(cpu(), ids);
}

TEST(SparseEmbedding, LooksUpRows) {
  nn::SparseEmbedding<double> e(cpu(), "e", 6, 3, 1, 2);
  const auto table = to_doubles(e.table());
  Tensor<double> out;
  const Tensor<NodeId> ids = id_tensor({4, 0, 5});
  e.lookup(cpu(), ids.span(), out);
  ASSERT_EQ(out.rows(), 3);
  const auto got = to_doubles(out);
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(got[i * 3 + c], table[ids(i) * 3 + c]);
  e.lookup(cpu(), {}, out);  // the whole table
  EXPECT_EQ(to_doubles(out), table);
}

/// PyTorch's SparseAdam in plain double: per table one step count, moments of the touched rows
/// only, eps added to the uncorrected root (step size lr sqrt(c2) / c1).
struct ReferenceSparseAdam {
  std::vector<double> p, m, v;
  int cols = 0;
  int step = 0;
  double eps = 1e-8;
  void apply(const std::vector<NodeId>& rows, const std::vector<double>& g, double lr) {
    ++step;
    const double c1 = 1 - std::pow(0.9, step), c2 = 1 - std::pow(0.999, step);
    for (std::size_t k = 0; k < rows.size(); ++k)
      for (int c = 0; c < cols; ++c) {
        const std::size_t i = static_cast<std::size_t>(rows[k] * cols + c);
        const double gi = g[k * cols + c];
        m[i] = 0.9 * m[i] + 0.1 * gi;
        v[i] = 0.999 * v[i] + 0.001 * gi * gi;
        p[i] -= lr * std::sqrt(c2) / c1 * m[i] / (std::sqrt(v[i]) + eps);
      }
  }
};

TEST(SparseAdam, UpdatesOnlyTouchedRows) {
  nn::SparseEmbedding<double> e(cpu(), "e", 10, 3, 1, 2);
  nn::SparseEmbedding<double> other(cpu(), "other", 4, 3, 1, 3);  // never touched
  const auto other_before = to_doubles(other.table());
  kernels::AdamConfig config;
  config.lr = 0.05;
  // A large eps: where it sits (uncorrected root, PyTorch's SparseAdam, or corrected root,
  // dense Adam) changes the steps by far more than the tolerance.
  config.eps = 0.05;
  nn::SparseAdam<double> opt(cpu(), {&e, &other}, config);
  ReferenceSparseAdam ref{
      to_doubles(e.table()), std::vector<double>(30), std::vector<double>(30), 3, 0, config.eps};
  const std::vector<std::vector<NodeId>> steps = {{7, 2, 4}, {2, 9}, {0, 7, 2, 3}};
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const auto before = to_doubles(e.table());
    const Tensor<NodeId> ids = id_tensor(steps[s]);
    const Tensor<double> g =
        testing::random_matrix<double>(static_cast<std::int64_t>(steps[s].size()), 3, 60 + s);
    e.set_gradient(cpu(), ids.span(), g);
    opt.step(cpu());
    ref.apply(steps[s], to_doubles(g), config.lr);
    const auto after = to_doubles(e.table());
    EXPECT_TRUE(testing::all_close(after, ref.p, 1e-12, 1e-14)) << "step " << s;
    for (int r = 0; r < 10; ++r) {
      const bool touched = std::find(steps[s].begin(), steps[s].end(), r) != steps[s].end();
      for (int c = 0; c < 3; ++c)
        if (!touched) {
          EXPECT_EQ(after[r * 3 + c], before[r * 3 + c]) << "row " << r;
        }
    }
  }
  EXPECT_EQ(to_doubles(other.table()), other_before);
  // A step without a recorded gradient changes nothing.
  const auto before = to_doubles(e.table());
  opt.step(cpu());
  EXPECT_EQ(to_doubles(e.table()), before);
}

TEST(SparseAdam, FirstStepEqualsDenseAdamWithZeroGradientsElsewhere) {
  nn::SparseEmbedding<double> e(cpu(), "e", 8, 2, 4, 5);
  nn::Parameter<double> dense{"dense", e.table().clone(cpu()), Tensor<double>::zeros(cpu(), 8, 2)};
  kernels::AdamConfig config;
  config.lr = 0.1;
  // The two rules place eps differently; with an eps far below every root they agree (and the
  // untouched rows' 0 / (0 + eps) stays 0 in dense Adam).
  config.eps = 1e-200;
  nn::SparseAdam<double> sparse(cpu(), {&e}, config);
  nn::Adam<double> adam(cpu(), {&dense}, config);
  const std::vector<NodeId> rows = {6, 1};
  const Tensor<double> g = testing::random_matrix<double>(2, 2, 9);
  for (std::size_t k = 0; k < rows.size(); ++k)
    for (int c = 0; c < 2; ++c) dense.grad(rows[k], c) = g(static_cast<std::int64_t>(k), c);
  const Tensor<NodeId> ids = id_tensor(rows);
  e.set_gradient(cpu(), ids.span(), g);
  sparse.step(cpu());
  adam.step(cpu());
  EXPECT_TRUE(testing::all_close(to_doubles(e.table()), to_doubles(dense.value), 1e-12, 1e-14));
}

TEST(SparseAdam, WholeTableStepsEqualDenseAdam) {
  nn::SparseEmbedding<double> e(cpu(), "e", 5, 3, 4, 5);
  nn::Parameter<double> dense{"dense", e.table().clone(cpu()), Tensor<double>::zeros(cpu(), 5, 3)};
  kernels::AdamConfig config;
  config.lr = 0.02;
  config.eps = 1e-200;  // see above
  nn::SparseAdam<double> sparse(cpu(), {&e}, config);
  nn::Adam<double> adam(cpu(), {&dense}, config);
  for (int s = 0; s < 4; ++s) {
    const Tensor<double> g = testing::random_matrix<double>(5, 3, 70 + s);
    kernels::copy(cpu(), dense.grad, g);
    e.set_gradient(cpu(), {}, g);
    sparse.step(cpu());
    adam.step(cpu());
    EXPECT_TRUE(testing::all_close(to_doubles(e.table()), to_doubles(dense.value), 1e-12, 1e-14))
        << "step " << s;
  }
}

TEST(SparseAdam, RejectsBadShapes) {
  nn::SparseEmbedding<double> e(cpu(), "e", 5, 3, 4, 5);
  const Tensor<NodeId> ids = id_tensor({1, 2});
  EXPECT_THROW(e.set_gradient(cpu(), ids.span(), testing::random_matrix<double>(3, 3, 1)),
               LogicError);
  EXPECT_THROW(e.set_gradient(cpu(), {}, testing::random_matrix<double>(4, 3, 1)), LogicError);
}

}  // namespace
}  // namespace halo::nn_test
