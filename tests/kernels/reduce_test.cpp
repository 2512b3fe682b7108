// Reductions: column sums (with and without accumulation) and the full sum.
#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <utility>

#include <halo/kernels/exec.hpp>
#include <halo/kernels/reduce.hpp>
#include <halo/kernels/reduce_body.hpp>

#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::kernels {
namespace {

template <class Backend>
class Reduce : public ::testing::Test {};
TYPED_TEST_SUITE(Reduce, testing::Backends, testing::BackendNames);

/// Absolute tolerance of a sum of n values of magnitude <= 1 in T.
template <class T>
double sum_tolerance(std::int64_t n) {
  return testing::atol<T>() + (sizeof(T) == sizeof(float) ? 1e-6 : 1e-14) * static_cast<double>(n);
}

// 256 blocks at most: 257 and 1000 rows put several rows in a block and leave a short last one.
constexpr std::pair<int, int> kShapes[] = {{0, 0},    {0, 3},   {1, 1},    {257, 33},
                                           {1000, 7}, {255, 2}, {4099, 1}, {3, 0}};

TYPED_TEST(Reduce, ColumnSumMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const auto& [rows, cols] : kShapes) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
      const auto x = testing::random_matrix<T>(rows, cols, 1);
      auto out = testing::filled(res, cols, 1, std::numeric_limits<T>::quiet_NaN());
      column_sum(res, testing::to_device(res, x).view(), out.span());
      EXPECT_TRUE(testing::all_close(out.to_vector(res), ref::column_sum(x), testing::rtol<T>(),
                                     sum_tolerance<T>(rows)));
    }
  });
}

// The GPU's column-per-index partial sums, run by the CPU launcher, over blocks of 1, 3 and 64
// rows (a short last block included), combined as column_sum combines them.
TEST(Reduce, GpuColumnBodyMatchesReferenceOnTheCpu) {
  const Resources res(Device::Cpu, 3);
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const auto& [rows, cols] : kShapes) {
      for (const std::int64_t rows_per_block : {1, 3, 64}) {
        SCOPED_TRACE(::testing::Message() << rows << " x " << cols << ", " << rows_per_block);
        const auto x = testing::random_matrix<T>(rows, cols, 1);
        const std::int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
        Tensor<T> partial(res, blocks, cols);
        for_each_index(
            res.cpu_exec(), blocks * cols,
            detail::ColumnPartialSumByColumnBody<T>{x.view(), rows_per_block, partial.view()});
        auto out = testing::filled(res, cols, 1, std::numeric_limits<T>::quiet_NaN());
        for_each_index(res.cpu_exec(), cols,
                       detail::ColumnCombineBody<T>{partial.view(), out.span(), false});
        EXPECT_TRUE(testing::all_close(out.to_vector(res), ref::column_sum(x), testing::rtol<T>(),
                                       sum_tolerance<T>(rows)));
      }
    }
  });
}

TYPED_TEST(Reduce, ColumnSumAccumulates) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const auto& [rows, cols] : kShapes) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
      const auto x = testing::random_matrix<T>(rows, cols, 2);
      const auto start = testing::random_matrix<T>(cols, 1, 3);
      auto out = testing::to_device(res, start);
      column_sum(res, testing::to_device(res, x).view(), out.span(), /*accumulate=*/true);
      auto expected = ref::column_sum(x);
      for (std::int64_t j = 0; j < cols; ++j) expected[j] += double(start(j));
      EXPECT_TRUE(testing::all_close(out.to_vector(res), expected, testing::rtol<T>(),
                                     sum_tolerance<T>(rows)));
    }
  });
}

TYPED_TEST(Reduce, SumMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const std::int64_t n : {0, 1, 2, 257, 100003}) {
      SCOPED_TRACE(::testing::Message() << "n = " << n);
      const auto x = testing::random_matrix<T>(n, 1, 4);
      const T got = sum(res, Span<const T>(testing::to_device(res, x).span()));
      EXPECT_NEAR(got, ref::sum(x.to_vector(testing::host())), sum_tolerance<T>(n));
    }
  });
}

TYPED_TEST(Reduce, SumOfKnownValues) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  // 1 + 2 + ... + 1000 = 500500, exact in float.
  std::vector<float> v(1000);
  for (int i = 0; i < 1000; ++i) v[i] = static_cast<float>(i + 1);
  EXPECT_EQ(sum<float>(res, Tensor<float>::from_host(res, v).span()), 500500.f);
  const auto m = Tensor<double>::from_host(res, {1, 2, 3, 4, 5, 6}, 3, 2);
  auto out = Tensor<double>(res, 2);
  column_sum(res, m.view(), out.span());
  EXPECT_EQ(out.to_vector(res), (std::vector<double>{9, 12}));
}

TYPED_TEST(Reduce, ColumnSumRejectsWrongOutputSize) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto x = Tensor<float>::zeros(res, 4, 3);
  auto out = Tensor<float>::zeros(res, 4);
  EXPECT_THROW(column_sum(res, x.view(), out.span()), LogicError);
}

}  // namespace
}  // namespace halo::kernels
