// EvolveGCN-O, the GCRN-style model and the pair scorer: every parameter's gradient against
// central differences of a loss through the scorer over a 3-step window, the forward against
// plain references, and the weighted logistic loss against its formula.
#include <cmath>
#include <gtest/gtest.h>
#include <span>
#include <vector>

#include <halo/nn/evolvegcn.hpp>

#include "nn/nn_helpers.hpp"

namespace halo::nn_test {
namespace {

using nn::TemporalKind;

/// A window of `steps` random weighted graphs on n nodes and their one-hot columns.
struct Window {
  std::vector<CsrMatrix<NodeId, double>> adj;
  std::vector<std::vector<std::int32_t>> feature;
  std::vector<nn::TemporalStep<double>> steps;
};

Window make_window(int n, int steps, int in_features, std::uint64_t seed) {
  Window w;
  for (int s = 0; s < steps; ++s) {
    w.adj.push_back(random_graph<double>(n, n, 0.4, seed + s, /*weighted=*/true));
    std::vector<std::int32_t> f(static_cast<std::size_t>(n));
    for (int v = 0; v < n; ++v)
      f[v] = static_cast<std::int32_t>(kernels::rng::below(seed, 77, s * n + v, in_features));
    w.feature.push_back(f);
  }
  for (int s = 0; s < steps; ++s) w.steps.push_back({w.adj[s].view(), w.feature[s]});
  return w;
}

/// Fixed pairs and labels the loss scores.
const std::vector<NodeId> kSrc = {0, 2, 4, 1, 3, 5, 0};
const std::vector<NodeId> kDst = {1, 3, 0, 5, 3, 2, 4};
const std::vector<std::int8_t> kPositive = {1, 0, 1, 0, 0, 1, 0};

double loss_of(nn::TemporalModel<double>& m, nn::PairScorer<double>& sc, const Window& w) {
  const Tensor<double>& e = m.forward(w.steps);
  sc.prepare(e);
  std::vector<double> logits(kSrc.size()), d(kSrc.size());
  sc.score(kSrc, kDst, logits);
  return nn::weighted_logistic_loss<double>(logits, kPositive, 0.9, 0.1, d);
}

void check_gradients(TemporalKind kind) {
  const int n = 6, f = 4, steps = 3;
  const Window w = make_window(n, steps, f, 11);
  nn::TemporalModel<double> model(cpu(), {kind, f, 3}, 5);
  nn::PairScorer<double> scorer(cpu(), 3, 4, 5);
  // Non-zero biases, so that their paths are exercised away from the initial zeros.
  std::uint64_t seed = 100;
  for (auto* p : model.parameters())
    if (p->name.find(".b_") != std::string::npos) randomize(p->value, seed++);
  for (auto* p : scorer.parameters())
    if (p->name == "scorer.b1" || p->name == "scorer.b2") randomize(p->value, seed++);
  // Backward.
  const Tensor<double>& e = model.forward(w.steps);
  scorer.prepare(e);
  std::vector<double> logits(kSrc.size()), d(kSrc.size());
  scorer.score(kSrc, kDst, logits);
  nn::weighted_logistic_loss<double>(logits, kPositive, 0.9, 0.1, d);
  model.backward(scorer.backward(kSrc, kDst, d));
  std::vector<nn::Parameter<double>*> params = model.parameters();
  for (auto* p : scorer.parameters()) params.push_back(p);
  int checked = 0;
  for (auto* p : params) {
    SCOPED_TRACE(p->name);
    const std::vector<double> grad = to_doubles(p->grad);
    ASSERT_EQ(grad.size(), static_cast<std::size_t>(p->value.numel()));
    for (std::int64_t i = 0; i < p->value.numel(); ++i) {
      double& v = p->value.data()[i];
      const double saved = v, eps = 1e-6;
      v = saved + eps;
      const double up = loss_of(model, scorer, w);
      v = saved - eps;
      const double down = loss_of(model, scorer, w);
      v = saved;
      const double fd = (up - down) / (2 * eps);
      EXPECT_NEAR(grad[static_cast<std::size_t>(i)], fd, 1e-7 + 1e-5 * std::abs(fd))
          << "element " << i;
      ++checked;
    }
  }
  EXPECT_GT(checked, 50);
}

TEST(EvolveGcnO, EveryParameterMatchesFiniteDifferencesOverThreeSteps) {
  check_gradients(TemporalKind::EvolveGcnO);
}

TEST(Gcrn, EveryParameterMatchesFiniteDifferencesOverThreeSteps) {
  check_gradients(TemporalKind::Gcrn);
}

/// The gradient sum (an all-reduce over ranks; here two ranks holding the same rows, a
/// doubling) is called once per backward: GCRN's gradients all come out doubled; EvolveGCN-O's
/// evolved weights' GCN gradients are doubled before the weights' GRU, so every encoder
/// parameter's gradient doubles too (the GRU's backward is linear in them).
TEST(TemporalModel, GradientSumIsAppliedOncePerBackward) {
  for (const TemporalKind kind : {TemporalKind::EvolveGcnO, TemporalKind::Gcrn}) {
    SCOPED_TRACE(nn::to_string(kind));
    const Window w = make_window(6, 3, 4, 11);
    nn::TemporalModel<double> one(cpu(), {kind, 4, 3}, 5), two(cpu(), {kind, 4, 3}, 5);
    int calls = 0;
    two.set_gradient_sum([&](std::span<double> v) {
      ++calls;
      for (double& x : v) x *= 2;
    });
    Tensor<double> d(cpu(), 6, 3);
    for (std::int64_t i = 0; i < d.numel(); ++i) d.data()[i] = std::sin(0.3 + 0.7 * i);
    one.forward(w.steps);
    one.backward(d);
    two.forward(w.steps);
    two.backward(d);
    EXPECT_EQ(calls, 1);
    const auto pa = one.parameters(), pb = two.parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (std::size_t i = 0; i < pa.size(); ++i)
      for (std::int64_t k = 0; k < pa[i]->grad.numel(); ++k)
        EXPECT_NEAR(pb[i]->grad.data()[k], 2 * pa[i]->grad.data()[k],
                    1e-12 + 1e-9 * std::abs(pa[i]->grad.data()[k]))
            << pa[i]->name << "[" << k << "]";
  }
}

double sig(double x) { return 1 / (1 + std::exp(-x)); }

/// relu(A relu(A X W1) W2) in plain loops.
std::vector<double> ref_gcn(const CsrMatrix<NodeId, double>& a, const std::vector<std::int32_t>& f,
                            const std::vector<double>& w1, const std::vector<double>& w2, int n,
                            int h) {
  const std::vector<double> ad = dense_adjacency(a, false);
  std::vector<double> x(static_cast<std::size_t>(n * h), 0);
  for (int v = 0; v < n; ++v)
    for (int j = 0; j < h; ++j) x[v * h + j] = w1[f[v] * h + j];
  std::vector<double> h1 = matmul(ad, x, n, n, h);
  for (double& v : h1) v = std::max(v, 0.0);
  std::vector<double> h2 = matmul(matmul(ad, h1, n, n, h), w2, n, h, h);
  for (double& v : h2) v = std::max(v, 0.0);
  return h2;
}

TEST(EvolveGcnO, ForwardMatchesTheMatrixGruAndTheLastStepsGcn) {
  const int n = 5, f = 3, h = 2, steps = 3;
  const Window w = make_window(n, steps, f, 3);
  nn::TemporalModel<double> model(cpu(), {TemporalKind::EvolveGcnO, f, h}, 9);
  auto params = model.parameters();
  ASSERT_EQ(params.size(), 20u);
  std::uint64_t seed = 1;
  for (auto* p : params) randomize(p->value, seed++);
  std::vector<double> q_final[2];
  for (int l = 0; l < 2; ++l) {
    const int rows = l == 0 ? f : h;
    const auto val = [&](int k) { return to_doubles(params[l * 10 + k]->value); };
    std::vector<double> q = val(0);
    for (int s = 0; s < steps; ++s) {
      const auto gate = [&](int wk, int uk, int bk, const std::vector<double>& hq) {
        return add(add(matmul(val(wk), q, rows, rows, h), matmul(val(uk), hq, rows, rows, h)),
                   val(bk));
      };
      std::vector<double> z = gate(1, 2, 7, q), r = gate(3, 4, 8, q);
      for (double& v : z) v = sig(v);
      for (double& v : r) v = sig(v);
      std::vector<double> rq(q.size());
      for (std::size_t i = 0; i < q.size(); ++i) rq[i] = r[i] * q[i];
      std::vector<double> hh = gate(5, 6, 9, rq);
      for (std::size_t i = 0; i < q.size(); ++i) q[i] = (1 - z[i]) * q[i] + z[i] * std::tanh(hh[i]);
    }
    q_final[l] = q;
  }
  const std::vector<double> want =
      ref_gcn(w.adj.back(), w.feature.back(), q_final[0], q_final[1], n, h);
  EXPECT_TRUE(testing::all_close(model.forward(w.steps), want, 1e-12, 1e-12));
}

TEST(Gcrn, ForwardMatchesAGcnThenANodeGru) {
  const int n = 5, f = 3, h = 2, steps = 3;
  const Window w = make_window(n, steps, f, 4);
  nn::TemporalModel<double> model(cpu(), {TemporalKind::Gcrn, f, h}, 9);
  auto params = model.parameters();
  ASSERT_EQ(params.size(), 11u);
  std::uint64_t seed = 1;
  for (auto* p : params) randomize(p->value, seed++);
  const auto val = [&](int k) { return to_doubles(params[k]->value); };
  std::vector<double> state(static_cast<std::size_t>(n * h), 0.0);
  for (int s = 0; s < steps; ++s) {
    const std::vector<double> g = ref_gcn(w.adj[s], w.feature[s], val(0), val(1), n, h);
    const auto gate = [&](int wk, int uk, int bk, const std::vector<double>& hs) {
      return add_rows(add(matmul(g, val(wk), n, h, h), matmul(hs, val(uk), n, h, h)), val(bk));
    };
    std::vector<double> z = gate(2, 3, 8, state), r = gate(4, 5, 9, state);
    for (double& v : z) v = sig(v);
    for (double& v : r) v = sig(v);
    std::vector<double> rh(state.size());
    for (std::size_t i = 0; i < rh.size(); ++i) rh[i] = r[i] * state[i];
    const std::vector<double> hh = gate(6, 7, 10, rh);
    for (std::size_t i = 0; i < state.size(); ++i)
      state[i] = (1 - z[i]) * state[i] + z[i] * std::tanh(hh[i]);
  }
  EXPECT_TRUE(testing::all_close(model.forward(w.steps), state, 1e-12, 1e-12));
}

TEST(PairScorer, ScoresTheConcatenationThroughOneHiddenLayer) {
  const int n = 4, in = 3, hidden = 2;
  nn::PairScorer<double> sc(cpu(), in, hidden, 3);
  auto params = sc.parameters();
  std::uint64_t seed = 40;
  for (auto* p : params) randomize(p->value, seed++);
  Tensor<double> e = testing::random_matrix<double>(n, in, 7);
  sc.prepare(e);
  const auto a = to_doubles(params[0]->value), b = to_doubles(params[1]->value);
  const auto b1 = to_doubles(params[2]->value), w2 = to_doubles(params[3]->value);
  const double b2 = to_doubles(params[4]->value)[0];
  std::vector<double> row(n);
  sc.score_row(2, row);
  for (int v = 0; v < n; ++v) {
    double s = b2;
    for (int k = 0; k < hidden; ++k) {
      double pre = b1[k];
      for (int i = 0; i < in; ++i) pre += e(2, i) * a[i * hidden + k] + e(v, i) * b[i * hidden + k];
      s += w2[k] * std::max(pre, 0.0);
    }
    EXPECT_NEAR(row[v], s, 1e-12);
  }
}

TEST(WeightedLogisticLoss, MatchesItsFormula) {
  const std::vector<double> logits = {2.0, -1.0, 0.5, 40.0};
  const std::vector<std::int8_t> pos = {1, 0, 0, 1};
  std::vector<double> d(4);
  const double loss = nn::weighted_logistic_loss<double>(logits, pos, 0.75, 0.25, d);
  const double wsum = 0.75 * 2 + 0.25 * 2;
  const double want = (0.75 * std::log(1 + std::exp(-2.0)) + 0.25 * std::log(1 + std::exp(-1.0)) +
                       0.25 * std::log(1 + std::exp(0.5)) + 0.75 * std::log(1 + std::exp(-40.0))) /
                      wsum;
  EXPECT_NEAR(loss, want, 1e-14);
  EXPECT_NEAR(d[0], -0.75 * sig(-2.0) / wsum, 1e-14);
  EXPECT_NEAR(d[1], 0.25 * sig(-1.0) / wsum, 1e-14);
  std::vector<double> none;
  EXPECT_EQ(nn::weighted_logistic_loss<double>(none, {}, 1, 1, none), 0.0);
  EXPECT_THROW(nn::weighted_logistic_loss<double>(logits, pos, 0, 1, d), LogicError);
}

}  // namespace
}  // namespace halo::nn_test
