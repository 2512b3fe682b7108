// Dense products: all four transpose cases against ref::gemm, alpha/beta handling, gradients.
#include <gtest/gtest.h>
#include <limits>
#include <span>
#include <string>
#include <tuple>

#include <halo/kernels/gemm.hpp>

#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::kernels {
namespace {

template <class Backend>
class Gemm : public ::testing::Test {};
TYPED_TEST_SUITE(Gemm, testing::Backends, testing::BackendNames);

/// op(a) is m x k: a is stored m x k, or k x m when transposed.
template <class T>
Tensor<T> operand(Trans t, std::int64_t rows, std::int64_t cols, std::uint64_t seed) {
  return t == Trans::No ? testing::random_matrix<T>(rows, cols, seed)
                        : testing::random_matrix<T>(cols, rows, seed);
}

template <class T>
void check_gemm(const Resources& res, Trans ta, Trans tb, std::int64_t m, std::int64_t n,
                std::int64_t k, T alpha, T beta) {
  SCOPED_TRACE(::testing::Message()
               << "ta=" << (ta == Trans::Yes) << " tb=" << (tb == Trans::Yes) << " m=" << m
               << " n=" << n << " k=" << k << " alpha=" << alpha << " beta=" << beta);
  const auto a = operand<T>(ta, m, k, 1);
  const auto b = operand<T>(tb, k, n, 2);
  // With beta == 0 the old contents must be ignored: make them NaN.
  const auto c0 = beta == T(0)
                      ? testing::filled(testing::host(), m, n, std::numeric_limits<T>::quiet_NaN())
                      : testing::random_matrix<T>(m, n, 3);
  const auto da = testing::to_device(res, a);
  const auto db = testing::to_device(res, b);
  auto c = testing::to_device(res, c0);
  gemm<T>(res, ta, tb, alpha, da.view(), db.view(), beta, c.view());
  // float sums of k products lose about k * 2^-24 relative to the sum of their magnitudes.
  const double atol = testing::atol<T>() * static_cast<double>(k + 1);
  EXPECT_TRUE(testing::all_close(c.to_vector(res), ref::gemm(ta, tb, alpha, a, b, beta, c0),
                                 testing::rtol<T>(), atol));
}

/// check_gemm for every value type and transpose, beta 0 and not, on each (m, n, k).
void check_all_transposes(const Resources& res, std::span<const std::tuple<int, int, int>> shapes) {
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const Trans ta : {Trans::No, Trans::Yes})
      for (const Trans tb : {Trans::No, Trans::Yes})
        for (const auto& [m, n, k] : shapes) {
          check_gemm<T>(res, ta, tb, m, n, k, T(1), T(0));
          check_gemm<T>(res, ta, tb, m, n, k, T(-0.75), T(1.5));
        }
  });
}

TYPED_TEST(Gemm, MatchesReferenceForAllTransposes) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const std::tuple<int, int, int> shapes[] = {{1, 1, 1},   {3, 5, 7},   {257, 3, 17},
                                              {4, 257, 1}, {2, 9, 257}, {33, 31, 29}};
  check_all_transposes(res, shapes);
}

/// Products large enough that the CPU splits them over its threads: by rows of c (m the
/// longest), by columns (n), and by the sum's depth (k the longest by far, each thread's partial
/// product added into c), at 2 and 3 threads (uneven slices), every transpose, beta 0 and not.
/// The same call twice gives the same bits (the partial products are added in thread order).
TEST(Gemm, CpuSplitsOfLargeProductsMatchReference) {
  const std::tuple<int, int, int> shapes[] = {{1031, 37, 229}, {41, 1031, 229}, {37, 29, 8209}};
  for (const int threads : {2, 3}) {
    const Resources res(Device::Cpu, threads);
    check_all_transposes(res, shapes);
    const auto [m, n, k] = shapes[2];
    const auto a = operand<float>(Trans::Yes, m, k, 4), b = operand<float>(Trans::No, k, n, 5);
    auto c1 = Tensor<float>::zeros(res, m, n), c2 = Tensor<float>::zeros(res, m, n);
    gemm<float>(res, Trans::Yes, Trans::No, 1.f, a.view(), b.view(), 0.f, c1.view());
    gemm<float>(res, Trans::Yes, Trans::No, 1.f, a.view(), b.view(), 0.f, c2.view());
    EXPECT_EQ(c1.to_vector(res), c2.to_vector(res));
  }
}

TYPED_TEST(Gemm, EmptyShapes) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const Trans ta : {Trans::No, Trans::Yes}) {
      check_gemm<T>(res, ta, Trans::No, 0, 0, 0, T(1), T(0));
      check_gemm<T>(res, ta, Trans::Yes, 0, 4, 3, T(1), T(0));
      check_gemm<T>(res, ta, Trans::No, 5, 0, 3, T(1), T(2));
      // k == 0: the product is empty, so c = beta * c (zeros for beta == 0, even over NaN).
      check_gemm<T>(res, ta, Trans::Yes, 4, 3, 0, T(1), T(0));
      check_gemm<T>(res, ta, Trans::No, 4, 3, 0, T(1), T(-2));
      check_gemm<T>(res, ta, Trans::No, 4, 3, 0, T(1), T(1));
    }
  });
}

TYPED_TEST(Gemm, AlphaZeroScalesC) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const T beta : {T(0), T(1), T(0.5)})
      check_gemm<T>(res, Trans::No, Trans::Yes, 7, 6, 5, T(0), beta);
  });
}

TYPED_TEST(Gemm, RejectsShapeMismatch) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto a = Tensor<float>::zeros(res, 3, 4);
  const auto b = Tensor<float>::zeros(res, 5, 2);
  auto c = Tensor<float>::zeros(res, 3, 2);
  EXPECT_THROW(gemm<float>(res, Trans::No, Trans::No, 1.f, a.view(), b.view(), 0.f, c.view()),
               LogicError);  // k: 4 vs 5
  const auto b2 = Tensor<float>::zeros(res, 4, 2);
  auto wrong_c = Tensor<float>::zeros(res, 2, 3);
  EXPECT_THROW(
      gemm<float>(res, Trans::No, Trans::No, 1.f, a.view(), b2.view(), 0.f, wrong_c.view()),
      LogicError);
  EXPECT_THROW(gemm<float>(res, Trans::Yes, Trans::No, 1.f, a.view(), b2.view(), 0.f, c.view()),
               LogicError);  // op(a) is 4 x 3
}

// f(a, b) = <a b, w> has df/da = w b^T and df/db = a^T w: the two products of a dense layer's
// backward pass, checked against central differences.
TYPED_TEST(Gemm, GradientMatchesFiniteDifferences) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const std::int64_t m = 4, k = 5, n = 3;
  const auto a = testing::random_matrix<double>(m, k, 1);
  const auto b = testing::random_matrix<double>(k, n, 2);
  const auto w = testing::random_matrix<double>(m, n, 3);
  const auto da = testing::to_device(res, a);
  const auto db = testing::to_device(res, b);
  const auto dw = testing::to_device(res, w);
  auto f = [&](const std::vector<double>& av, const std::vector<double>& bv) {
    const auto x = Tensor<double>::from_host(res, av, m, k);
    const auto y = Tensor<double>::from_host(res, bv, k, n);
    auto out = Tensor<double>(res, m, n);
    gemm<double>(res, Trans::No, Trans::No, 1.0, x.view(), y.view(), 0.0, out.view());
    return ref::dot(out.to_vector(res), w.to_vector(testing::host()));
  };
  const auto av = a.to_vector(testing::host());
  const auto bv = b.to_vector(testing::host());
  auto grad_a = Tensor<double>(res, m, k);
  gemm<double>(res, Trans::No, Trans::Yes, 1.0, dw.view(), db.view(), 0.0, grad_a.view());
  auto grad_b = Tensor<double>(res, k, n);
  gemm<double>(res, Trans::Yes, Trans::No, 1.0, da.view(), dw.view(), 0.0, grad_b.view());
  const auto fd_a = ref::finite_difference_gradient(
      [&](const std::vector<double>& x) { return f(x, bv); }, av, 1e-6);
  const auto fd_b = ref::finite_difference_gradient(
      [&](const std::vector<double>& y) { return f(av, y); }, bv, 1e-6);
  EXPECT_TRUE(testing::all_close(grad_a.to_vector(res), fd_a, 1e-6, 1e-8));
  EXPECT_TRUE(testing::all_close(grad_b.to_vector(res), fd_b, 1e-6, 1e-8));
}

TEST(Gemm, ReferenceMatchesHandComputedProduct) {
  // [1 2; 3 4] [5; 6] = [17; 39]; the oracle itself is checked against numbers worked by hand.
  const auto a = testing::host_tensor<double>({1, 2, 3, 4}, 2, 2);
  const auto b = testing::host_tensor<double>({5, 6}, 2, 1);
  const auto c = testing::host_tensor<double>({1, 1}, 2, 1);
  EXPECT_EQ(ref::gemm(Trans::No, Trans::No, 1.0, a, b, 0.0, c), (std::vector<double>{17, 39}));
  EXPECT_EQ(ref::gemm(Trans::Yes, Trans::No, 2.0, a, b, 1.0, c),
            (std::vector<double>{2 * 23 + 1, 2 * 34 + 1}));
}

}  // namespace
}  // namespace halo::kernels
