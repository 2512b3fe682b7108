// Log-softmax + NLL loss, its gradient, and accuracy counting.
#include <cmath>
#include <gtest/gtest.h>
#include <limits>

#include <halo/kernels/loss.hpp>

#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::kernels {
namespace {

using testing::host;

template <class Backend>
class Loss : public ::testing::Test {};
TYPED_TEST_SUITE(Loss, testing::Backends, testing::BackendNames);

/// A classification problem: n x c logits scaled by `scale`, labels in [0, c), and `selected`
/// distinct rows in shuffled order.
template <class Idx, class T>
struct Problem {
  Tensor<T> logits;
  std::vector<std::int32_t> labels;
  std::vector<Idx> rows;
};
template <class Idx, class T>
Problem<Idx, T> make_problem(std::int64_t n, std::int64_t c, std::int64_t selected, double scale,
                             std::uint64_t seed) {
  auto logits = testing::random_matrix<T>(n, c, seed);
  for (std::int64_t i = 0; i < logits.numel(); ++i) logits.data()[i] *= static_cast<T>(scale);
  return {std::move(logits), testing::random_ids<std::int32_t>(n, c, seed + 1),
          testing::random_distinct_ids<Idx>(selected, n, seed + 2)};
}

// (rows, classes, selected rows): one row and class, a subset, every row, many classes.
constexpr std::int64_t kShapes[][3] = {{1, 1, 1}, {257, 7, 100}, {31, 40, 31},
                                       {5, 3, 0}, {0, 3, 0},     {1000, 2, 333}};

template <class Idx, class T>
void check_loss(const Resources& res, double scale) {
  for (const auto& [n, c, selected] : kShapes) {
    SCOPED_TRACE(::testing::Message()
                 << n << " x " << c << ", " << selected << " rows, scale " << scale);
    const auto p = make_problem<Idx, T>(n, c, selected, scale, 3);
    const auto logits = testing::to_device(res, p.logits);
    const auto labels = Tensor<std::int32_t>::from_host(res, p.labels);
    const auto rows = Tensor<Idx>::from_host(res, p.rows);
    const T loss = log_softmax_nll<Idx, T>(res, logits.view(), labels.span(), rows.span());
    const double expected = ref::log_softmax_nll(p.logits, p.labels, p.rows);
    EXPECT_TRUE(std::isfinite(loss));
    EXPECT_NEAR(loss, expected, testing::rtol<T>() * std::abs(expected) + testing::atol<T>());

    auto grad = testing::filled(res, n, c, std::numeric_limits<T>::quiet_NaN());
    log_softmax_nll_backward<Idx, T>(res, logits.view(), labels.span(), rows.span(), grad.view());
    EXPECT_TRUE(testing::all_close(grad.to_vector(res),
                                   ref::log_softmax_nll_grad(p.logits, p.labels, p.rows),
                                   testing::rtol<T>(), testing::atol<T>()));
    EXPECT_EQ((count_correct<Idx, T>(res, logits.view(), labels.span(), rows.span())),
              ref::count_correct(p.logits, p.labels, p.rows));
  }
}

TYPED_TEST(Loss, MatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type(
      [&](auto idx, auto value) { check_loss<decltype(idx), decltype(value)>(res, 3.0); });
}

// Logits around +-1000 overflow exp() unless the row maximum is subtracted first.
// The accumulating form adds the unnormalised sum to what the total holds, on the device:
// starting from 1.5 and adding the same rows twice gives 1.5 + 2 * n * mean.
TYPED_TEST(Loss, AccumulateAddsTheSumToTheTotal) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const auto& [n, c, selected] : kShapes) {
      SCOPED_TRACE(::testing::Message() << n << " x " << c << ", " << selected << " rows");
      const auto p = make_problem<Idx, T>(n, c, selected, 1.0, 5);
      const auto logits = testing::to_device(res, p.logits);
      const auto labels = Tensor<std::int32_t>::from_host(res, p.labels);
      const auto rows = Tensor<Idx>::from_host(res, p.rows);
      auto total = Tensor<T>::from_host(res, std::vector<T>{T(1.5)});
      for (int k = 0; k < 2; ++k)
        log_softmax_nll_accumulate<Idx, T>(res, logits.view(), labels.span(), rows.span(),
                                           total.span());
      const double expected =
          1.5 + 2.0 * static_cast<double>(selected) *
                    (selected > 0 ? ref::log_softmax_nll(p.logits, p.labels, p.rows) : 0.0);
      EXPECT_NEAR(total.to_vector(res)[0], expected,
                  testing::rtol<T>() * std::abs(expected) + testing::atol<T>());
    }
  });
}

TYPED_TEST(Loss, StableForLargeLogits) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type(
      [&](auto idx, auto value) { check_loss<decltype(idx), decltype(value)>(res, 1000.0); });
}

// A loss split over two calls (processes) with the normaliser of the whole adds up to the
// loss and gradient of one call over all rows.
TYPED_TEST(Loss, NormalizerSplitsTheMeanOverCalls) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto p = make_problem<std::int32_t, double>(50, 6, 20, 3.0, 8);
  const auto logits = testing::to_device(res, p.logits);
  const auto labels = Tensor<std::int32_t>::from_host(res, p.labels);
  const std::vector<std::int32_t> first(p.rows.begin(), p.rows.begin() + 7);
  const std::vector<std::int32_t> second(p.rows.begin() + 7, p.rows.end());
  const auto rows_a = Tensor<std::int32_t>::from_host(res, first);
  const auto rows_b = Tensor<std::int32_t>::from_host(res, second);
  const auto total = static_cast<std::int64_t>(p.rows.size());
  const double split = log_softmax_nll<std::int32_t, double>(res, logits.view(), labels.span(),
                                                             rows_a.span(), total) +
                       log_softmax_nll<std::int32_t, double>(res, logits.view(), labels.span(),
                                                             rows_b.span(), total);
  EXPECT_NEAR(split, ref::log_softmax_nll(p.logits, p.labels, p.rows), 1e-12);

  Tensor<double> grad_a(res, 50, 6), grad_b(res, 50, 6);
  log_softmax_nll_backward<std::int32_t, double>(res, logits.view(), labels.span(), rows_a.span(),
                                                 grad_a.view(), total);
  log_softmax_nll_backward<std::int32_t, double>(res, logits.view(), labels.span(), rows_b.span(),
                                                 grad_b.view(), total);
  std::vector<double> sum = grad_a.to_vector(res);
  const std::vector<double> b = grad_b.to_vector(res);
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += b[i];
  EXPECT_TRUE(
      testing::all_close(sum, ref::log_softmax_nll_grad(p.logits, p.labels, p.rows), 1e-12, 1e-14));
}

TYPED_TEST(Loss, KnownValues) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  // Uniform logits over 4 classes: the loss is log 4 whatever the label; the gradient is
  // (1/4 - onehot) / |rows| on the selected rows.
  const auto logits = testing::to_device(res, testing::filled(host(), 3, 4, 0.5));
  const auto labels = Tensor<std::int32_t>::from_host(res, {0, 3, 1});
  const auto rows = Tensor<std::int64_t>::from_host(res, {2, 0});
  EXPECT_NEAR(
      (log_softmax_nll<std::int64_t, double>(res, logits.view(), labels.span(), rows.span())),
      std::log(4.0), 1e-12);
  Tensor<double> grad(res, 3, 4);
  log_softmax_nll_backward<std::int64_t, double>(res, logits.view(), labels.span(), rows.span(),
                                                 grad.view());
  EXPECT_TRUE(testing::all_close(grad.to_vector(res),
                                 std::vector<double>{-0.375, 0.125, 0.125, 0.125,  //
                                                     0, 0, 0, 0,                   //
                                                     0.125, -0.375, 0.125, 0.125},
                                 1e-12, 1e-12));
}

// The backward pass is the gradient of the forward pass (in double, by central differences).
TYPED_TEST(Loss, GradientMatchesFiniteDifferences) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto p = make_problem<std::int32_t, double>(6, 5, 4, 2.0, 9);
  const auto labels = Tensor<std::int32_t>::from_host(res, p.labels);
  const auto rows = Tensor<std::int32_t>::from_host(res, p.rows);
  auto f = [&](const std::vector<double>& x) {
    const auto logits = Tensor<double>::from_host(res, x, 6, 5);
    return static_cast<double>(
        log_softmax_nll<std::int32_t, double>(res, logits.view(), labels.span(), rows.span()));
  };
  const auto logits = testing::to_device(res, p.logits);
  Tensor<double> grad(res, 6, 5);
  log_softmax_nll_backward<std::int32_t, double>(res, logits.view(), labels.span(), rows.span(),
                                                 grad.view());
  const auto fd = ref::finite_difference_gradient(f, p.logits.to_vector(host()), 1e-6);
  EXPECT_TRUE(testing::all_close(grad.to_vector(res), fd, 1e-6, 1e-8));
}

TYPED_TEST(Loss, CountCorrectTakesTheFirstMaximum) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  // Row 0 ties classes 1 and 2 (first max: 1); row 1's max is class 0; row 2 ties all (0).
  const auto logits = Tensor<float>::from_host(res, {0, 5, 5, 9, 1, 2, 3, 3, 3}, 3, 3);
  const auto rows = Tensor<std::int32_t>::from_host(res, {0, 1, 2});
  const auto right = Tensor<std::int32_t>::from_host(res, {1, 0, 0});
  const auto wrong = Tensor<std::int32_t>::from_host(res, {2, 1, 2});
  EXPECT_EQ((count_correct<std::int32_t, float>(res, logits.view(), right.span(), rows.span())), 3);
  EXPECT_EQ((count_correct<std::int32_t, float>(res, logits.view(), wrong.span(), rows.span())), 0);
  const auto some = Tensor<std::int32_t>::from_host(res, {2});
  EXPECT_EQ((count_correct<std::int32_t, float>(res, logits.view(), right.span(), some.span())), 1);
}

TYPED_TEST(Loss, RejectsShapeMismatch) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto logits = Tensor<float>::zeros(res, 4, 3);
  const auto labels = Tensor<std::int32_t>::zeros(res, 3);  // one per row expected
  const auto rows = Tensor<std::int64_t>::from_host(res, {0, 1});
  EXPECT_THROW(
      (log_softmax_nll<std::int64_t, float>(res, logits.view(), labels.span(), rows.span())),
      LogicError);
  EXPECT_THROW((count_correct<std::int64_t, float>(res, logits.view(), labels.span(), rows.span())),
               LogicError);
  const auto labels4 = Tensor<std::int32_t>::zeros(res, 4);
  auto grad = Tensor<float>::zeros(res, 4, 2);
  EXPECT_THROW((log_softmax_nll_backward<std::int64_t, float>(res, logits.view(), labels4.span(),
                                                              rows.span(), grad.view())),
               LogicError);
  const auto no_classes = Tensor<float>::zeros(res, 4, 0);
  EXPECT_THROW(
      (log_softmax_nll<std::int64_t, float>(res, no_classes.view(), labels4.span(), rows.span())),
      LogicError);
}

}  // namespace
}  // namespace halo::kernels
