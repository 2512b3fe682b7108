// Optimizer steps against PyTorch-semantics references.
#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>

#include <halo/kernels/exec.hpp>
#include <halo/kernels/optim.hpp>
#include <halo/kernels/optim_body.hpp>

#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::kernels {
namespace {

using testing::host;

template <class Backend>
class Adam : public ::testing::Test {};
TYPED_TEST_SUITE(Adam, testing::Backends, testing::BackendNames);

template <class Backend>
class Sgd : public ::testing::Test {};
TYPED_TEST_SUITE(Sgd, testing::Backends, testing::BackendNames);

constexpr std::int64_t kSizes[] = {0, 1, 7, 257};
constexpr int kSteps = 6;

/// v = |v| in place (second moments are non-negative).
void apply_abs(Tensor<float>& v) {
  for (std::int64_t i = 0; i < v.numel(); ++i) v.data()[i] = std::abs(v.data()[i]);
}

template <class T>
std::vector<double> as_double(const std::vector<T>& v) {
  return {v.begin(), v.end()};
}

template <class T>
void check_adam(const Resources& res, const AdamConfig& config) {
  for (const std::int64_t n : kSizes) {
    SCOPED_TRACE(::testing::Message() << "n = " << n << ", weight decay " << config.weight_decay);
    const auto p0 = testing::random_matrix<T>(n, 1, 1);
    auto param = testing::to_device(res, p0);
    auto m = Tensor<T>::zeros(res, n);
    auto v = Tensor<T>::zeros(res, n);
    auto ref_param = as_double(p0.to_vector(host()));
    std::vector<double> ref_m(n), ref_v(n);
    for (int step = 1; step <= kSteps; ++step) {
      const auto grad = testing::random_matrix<T>(n, 1, 100 + step);
      adam_step<T>(res, config, step, param.span(), testing::to_device(res, grad).span(), m.span(),
                   v.span());
      ref::adam_step(config, step, ref_param, as_double(grad.to_vector(host())), ref_m, ref_v);
    }
    EXPECT_TRUE(testing::all_close(param.to_vector(res), ref_param, testing::rtol<T>(),
                                   testing::atol<T>()));
    EXPECT_TRUE(
        testing::all_close(m.to_vector(res), ref_m, testing::rtol<T>(), testing::atol<T>()));
    EXPECT_TRUE(
        testing::all_close(v.to_vector(res), ref_v, testing::rtol<T>(), testing::atol<T>()));
  }
}

TYPED_TEST(Adam, SeveralStepsMatchReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    check_adam<T>(res, AdamConfig{});
    check_adam<T>(
        res, AdamConfig{.lr = 0.05, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1});
  });
}

// With bias correction the first step moves every parameter by lr against its gradient's sign,
// whatever the gradient's magnitude (up to eps): a property independent of the reference.
TYPED_TEST(Adam, FirstStepMovesByLearningRate) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const std::vector<double> grad{3.0, -0.02, 500.0, -1.0};
  auto param = Tensor<double>::zeros(res, 4);
  auto m = Tensor<double>::zeros(res, 4);
  auto v = Tensor<double>::zeros(res, 4);
  adam_step<double>(res, AdamConfig{.lr = 0.1}, 1, param.span(),
                    Tensor<double>::from_host(res, grad).span(), m.span(), v.span());
  EXPECT_TRUE(
      testing::all_close(param.to_vector(res), std::vector<double>{-0.1, 0.1, -0.1, 0.1}, 1e-5, 0));
}

TYPED_TEST(Adam, RejectsBadArguments) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  auto p = Tensor<float>::zeros(res, 3);
  const auto g = Tensor<float>::zeros(res, 3);
  auto m = Tensor<float>::zeros(res, 3);
  auto v = Tensor<float>::zeros(res, 3);
  auto short_v = Tensor<float>::zeros(res, 2);
  EXPECT_THROW(adam_step<float>(res, {}, 0, p.span(), g.span(), m.span(), v.span()), LogicError);
  EXPECT_THROW(adam_step<float>(res, {}, 1, p.span(), g.span(), m.span(), short_v.span()),
               LogicError);
  EXPECT_THROW(adam_step<float>(res, {}, 1, short_v.span(), g.span(), m.span(), v.span()),
               LogicError);
}

template <class T>
void check_sgd(const Resources& res, const SgdConfig& config) {
  for (const std::int64_t n : kSizes) {
    SCOPED_TRACE(::testing::Message() << "n = " << n << ", momentum " << config.momentum
                                      << ", weight decay " << config.weight_decay);
    const auto p0 = testing::random_matrix<T>(n, 1, 2);
    auto param = testing::to_device(res, p0);
    auto buf = Tensor<T>::zeros(res, config.momentum == 0 ? 0 : n);
    auto ref_param = as_double(p0.to_vector(host()));
    std::vector<double> ref_buf;
    for (int step = 1; step <= kSteps; ++step) {
      const auto grad = testing::random_matrix<T>(n, 1, 200 + step);
      sgd_step<T>(res, config, param.span(), testing::to_device(res, grad).span(), buf.span());
      ref::sgd_step(config, ref_param, as_double(grad.to_vector(host())), ref_buf);
    }
    EXPECT_TRUE(testing::all_close(param.to_vector(res), ref_param, testing::rtol<T>(),
                                   testing::atol<T>()));
    if (config.momentum != 0 && n > 0) {
      EXPECT_TRUE(
          testing::all_close(buf.to_vector(res), ref_buf, testing::rtol<T>(), testing::atol<T>()));
    }
  }
}

TYPED_TEST(Sgd, PlainMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    check_sgd<T>(res, SgdConfig{.lr = 0.1});
    check_sgd<T>(res, SgdConfig{.lr = 0.1, .weight_decay = 0.05});
  });
}

TYPED_TEST(Sgd, MomentumMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    check_sgd<T>(res, SgdConfig{.lr = 0.05, .momentum = 0.9});
    check_sgd<T>(res, SgdConfig{.lr = 0.05, .momentum = 0.5, .weight_decay = 0.01});
  });
}

TYPED_TEST(Sgd, KnownSteps) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  // p = 1, g = 1, lr = 0.1, momentum 0.5: buf 1 then 1.5, so p = 0.9 then 0.75.
  auto p = Tensor<double>::from_host(res, {1.0});
  auto buf = Tensor<double>::zeros(res, 1);
  const auto g = Tensor<double>::from_host(res, {1.0});
  const SgdConfig config{.lr = 0.1, .momentum = 0.5};
  sgd_step<double>(res, config, p.span(), g.span(), buf.span());
  EXPECT_NEAR(p.to_vector(res)[0], 0.9, 1e-15);
  sgd_step<double>(res, config, p.span(), g.span(), buf.span());
  EXPECT_NEAR(p.to_vector(res)[0], 0.75, 1e-15);
}

TYPED_TEST(Sgd, RejectsMisSizedBuffers) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  auto p = Tensor<float>::zeros(res, 3);
  const auto g = Tensor<float>::zeros(res, 3);
  const auto short_g = Tensor<float>::zeros(res, 2);
  auto buf = Tensor<float>::zeros(res, 3);
  Tensor<float> none;
  EXPECT_THROW(sgd_step<float>(res, {.momentum = 0.9}, p.span(), g.span(), none.span()),
               LogicError);
  EXPECT_THROW(sgd_step<float>(res, {.momentum = 0.0}, p.span(), g.span(), buf.span()), LogicError);
  EXPECT_THROW(sgd_step<float>(res, {}, p.span(), short_g.span(), none.span()), LogicError);
  EXPECT_NO_THROW(sgd_step<float>(res, {.momentum = 0.9}, p.span(), g.span(), buf.span()));
}

// SparseAdam's CPU body (a row per index) and its GPU body (an element per index), both run
// on the CPU launcher over the same rows: the same values, element for element, and rows not
// listed untouched.
TEST(SparseAdamBodies, RowAndElementLayoutsAgree) {
  const Resources res = testing::make_resources<testing::CpuBackend>();
  const std::int64_t rows = 9, cols = 13;
  const std::vector<std::int32_t> touched = {7, 0, 4, 8};
  const auto grad =
      testing::random_matrix<float>(static_cast<std::int64_t>(touched.size()), cols, 3);
  const auto ids = Tensor<std::int32_t>::from_host(res, touched);
  Tensor<float> p[2], m[2], v[2];
  for (int k = 0; k < 2; ++k) {
    p[k] = testing::random_matrix<float>(rows, cols, 5);
    m[k] = testing::random_matrix<float>(rows, cols, 6);
    v[k] = testing::random_matrix<float>(rows, cols, 7);
    apply_abs(v[k]);
    const detail::SparseAdamBody<std::int32_t, float> body{
        0.01f, 0.9f, 0.999f, 1e-8f, p[k].view(), grad.view(), ids.span(), m[k].view(), v[k].view()};
    if (k == 0)
      for_each_index(res.cpu_exec(), grad.rows(),
                     detail::SparseAdamRowsBody<std::int32_t, float>{body});
    else
      for_each_index(res.cpu_exec(), grad.numel(), body);
  }
  const auto before = testing::random_matrix<float>(rows, cols, 5).to_vector(res);
  const auto p0 = p[0].to_vector(res), p1 = p[1].to_vector(res);
  EXPECT_EQ(p0, p1);
  EXPECT_EQ(m[0].to_vector(res), m[1].to_vector(res));
  EXPECT_EQ(v[0].to_vector(res), v[1].to_vector(res));
  for (std::int64_t r = 0; r < rows; ++r) {
    const bool listed = std::find(touched.begin(), touched.end(), r) != touched.end();
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto i = static_cast<std::size_t>(r * cols + c);
      if (listed)
        EXPECT_NE(p0[i], before[i]) << r << "," << c;
      else
        EXPECT_EQ(p0[i], before[i]) << r << "," << c;
    }
  }
}

}  // namespace
}  // namespace halo::kernels
