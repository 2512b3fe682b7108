// Adam and SGD: hand-computed updates, PyTorch-order references over several steps, and a
// quadratic that Adam has to minimise.

#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <vector>

#include <halo/kernels/error.hpp>
#include <halo/nn/optimizer.hpp>

#include "nn_helpers.hpp"
#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::nn_test {
namespace {

template <class T>
nn::Parameter<T> parameter(const char* name, const std::vector<double>& values, std::int64_t rows,
                           std::int64_t cols) {
  const std::vector<T> v(values.begin(), values.end());
  return {name, Tensor<T>::from_host(testing::host(), v, rows, cols),
          Tensor<T>::zeros(testing::host(), rows, cols)};
}

template <class T>
void set_grad(nn::Parameter<T>& p, const std::vector<double>& g) {
  ASSERT_EQ(static_cast<std::int64_t>(g.size()), p.grad.numel());
  for (std::size_t i = 0; i < g.size(); ++i) p.grad.data()[i] = static_cast<T>(g[i]);
}

/// `count` values in [-scale, scale) drawn from `seed`.
std::vector<double> random_values(std::int64_t count, double scale, std::uint64_t seed) {
  auto v = to_doubles(testing::random_matrix<double>(count, 1, seed));
  for (double& x : v) x *= scale;
  return v;
}

TEST(Adam, ConstantGradientMovesByTheLearningRatePerStep) {
  // With a constant gradient g and no weight decay, the bias-corrected moments are exactly g and
  // g^2, so every step moves each element by lr * g / (|g| + eps) ~= lr * sign(g), whatever |g|.
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    const std::vector<double> start{0.5, -1.0, 2.0, 0.0};
    const std::vector<double> g{1e-3, -1.0, 100.0, -5.0};
    auto p = parameter<T>("p", start, 2, 2);
    kernels::AdamConfig config;
    config.lr = 0.1;
    nn::Adam<T> adam(cpu(), {&p}, config);
    for (int step = 1; step <= 3; ++step) {
      set_grad(p, g);
      adam.step(cpu());
      std::vector<double> expected;
      for (std::size_t i = 0; i < g.size(); ++i)
        expected.push_back(start[i] - step * 0.1 * (g[i] > 0 ? 1.0 : -1.0));
      EXPECT_TRUE(testing::all_close(p.value, expected, 1e-5, 1e-5)) << "after step " << step;
    }
    EXPECT_EQ(adam.steps(), 3);
  });
}

TEST(Adam, MatchesPyTorchReference) {
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    kernels::AdamConfig config;
    config.lr = 0.05;
    config.beta1 = 0.8;
    config.beta2 = 0.99;
    config.eps = 1e-6;
    config.weight_decay = 0.1;
    std::vector<double> pa = random_values(6, 1.0, 1), pb = random_values(4, 2.0, 2);
    auto a = parameter<T>("a", pa, 3, 2);
    auto b = parameter<T>("b", pb, 4, 1);
    nn::Adam<T> adam(cpu(), {&a, &b}, config);
    std::vector<double> ma(6), va(6), mb(4), vb(4);
    for (int step = 1; step <= 6; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const auto ga = random_values(6, 1.0, 10 + step);
      const auto gb = random_values(4, 0.01, 20 + step);  // a tiny gradient: eps matters
      set_grad(a, ga);
      set_grad(b, gb);
      adam.step(cpu());
      ref::adam_step(config, step, pa, ga, ma, va);
      ref::adam_step(config, step, pb, gb, mb, vb);
      EXPECT_TRUE(testing::all_close(a.value, pa, testing::rtol<T>(), testing::atol<T>()));
      EXPECT_TRUE(testing::all_close(b.value, pb, testing::rtol<T>(), testing::atol<T>()));
    }
  });
}

TEST(Adam, ReducesAQuadraticLoss) {
  // L = 1/2 |p - target|^2, dL/dp = p - target.
  const std::vector<double> target = random_values(10, 2.0, 30);
  auto p = parameter<double>("p", random_values(10, 2.0, 31), 10, 1);
  const auto loss = [&] {
    double l = 0;
    for (std::size_t i = 0; i < target.size(); ++i) l += 0.5 * std::pow(p.value(i) - target[i], 2);
    return l;
  };
  kernels::AdamConfig config;
  config.lr = 0.05;
  nn::Adam<double> adam(cpu(), {&p}, config);
  const double initial = loss();
  ASSERT_GT(initial, 1.0);
  for (int step = 0; step < 300; ++step) {
    std::vector<double> g;
    for (std::size_t i = 0; i < target.size(); ++i) g.push_back(p.value(i) - target[i]);
    set_grad(p, g);
    adam.step(cpu());
  }
  EXPECT_LT(loss(), 1e-3 * initial);
}

TEST(Adam, RejectsBadConfig) {
  auto p = parameter<double>("p", {1.0}, 1, 1);
  kernels::AdamConfig config;
  config.lr = 0;
  EXPECT_THROW(nn::Adam<double>(cpu(), {&p}, config), LogicError);
  config.lr = 0.1;
  config.weight_decay = -1;
  EXPECT_THROW(nn::Adam<double>(cpu(), {&p}, config), LogicError);
}

TEST(Sgd, PlainStepsMatchHandComputation) {
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    // p <- p - lr (g + wd p).
    auto p = parameter<T>("p", {1.0, -2.0, 0.5}, 3, 1);
    kernels::SgdConfig config;
    config.lr = 0.1;
    config.weight_decay = 0.5;
    nn::Sgd<T> sgd(cpu(), {&p}, config);
    set_grad(p, {0.2, 0.4, -1.0});
    sgd.step(cpu());
    const std::vector<double> expected{1.0 - 0.1 * (0.2 + 0.5),   //
                                       -2.0 - 0.1 * (0.4 - 1.0),  //
                                       0.5 - 0.1 * (-1.0 + 0.25)};
    EXPECT_TRUE(testing::all_close(p.value, expected, testing::rtol<T>(), testing::atol<T>()));
  });
}

TEST(Sgd, MomentumStepsMatchHandComputation) {
  // Constant g, momentum 0.9: buf = g, 1.9 g, 2.71 g, so after three steps p = p0 - 5.61 lr g.
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    auto p = parameter<T>("p", {1.0, -1.0}, 2, 1);
    kernels::SgdConfig config;
    config.lr = 0.1;
    config.momentum = 0.9;
    nn::Sgd<T> sgd(cpu(), {&p}, config);
    for (int step = 0; step < 3; ++step) {
      set_grad(p, {1.0, -2.0});
      sgd.step(cpu());
    }
    EXPECT_TRUE(testing::all_close(p.value, std::vector<double>{1.0 - 0.561, -1.0 + 1.122},
                                   testing::rtol<T>(), testing::atol<T>()));
  });
}

TEST(Sgd, MatchesPyTorchReference) {
  testing::for_each_value_type([](auto zero) {
    using T = decltype(zero);
    for (const double momentum : {0.0, 0.7}) {
      SCOPED_TRACE("momentum " + std::to_string(momentum));
      kernels::SgdConfig config;
      config.lr = 0.03;
      config.momentum = momentum;
      config.weight_decay = 0.01;
      std::vector<double> pa = random_values(6, 1.0, 40), pb = random_values(3, 1.0, 41);
      auto a = parameter<T>("a", pa, 2, 3);
      auto b = parameter<T>("b", pb, 3, 1);
      nn::Sgd<T> sgd(cpu(), {&a, &b}, config);
      std::vector<double> buf_a, buf_b;
      for (int step = 1; step <= 5; ++step) {
        SCOPED_TRACE("step " + std::to_string(step));
        const auto ga = random_values(6, 1.0, 50 + step);
        const auto gb = random_values(3, 3.0, 60 + step);
        set_grad(a, ga);
        set_grad(b, gb);
        sgd.step(cpu());
        ref::sgd_step(config, pa, ga, buf_a);
        ref::sgd_step(config, pb, gb, buf_b);
        EXPECT_TRUE(testing::all_close(a.value, pa, testing::rtol<T>(), testing::atol<T>()));
        EXPECT_TRUE(testing::all_close(b.value, pb, testing::rtol<T>(), testing::atol<T>()));
      }
    }
  });
}

TEST(Sgd, RejectsBadConfig) {
  auto p = parameter<double>("p", {1.0}, 1, 1);
  kernels::SgdConfig config;
  config.lr = -0.1;
  EXPECT_THROW(nn::Sgd<double>(cpu(), {&p}, config), LogicError);
}

}  // namespace
}  // namespace halo::nn_test
