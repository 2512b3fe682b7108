// Row gather and scatter-add.
#include <gtest/gtest.h>
#include <limits>

#include <halo/kernels/exec.hpp>
#include <halo/kernels/gather.hpp>
#include <halo/kernels/gather_body.hpp>

#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::kernels {
namespace {

using testing::host;

template <class Backend>
class Gather : public ::testing::Test {};
TYPED_TEST_SUITE(Gather, testing::Backends, testing::BackendNames);

// (source rows, ids, columns): empty, single, more ids than rows (repeats), columns on either
// side of scatter_add_rows' 16-column blocks.
constexpr std::int64_t kShapes[][3] = {{0, 0, 4},     {1, 1, 1},     {5, 0, 3}, {257, 300, 9},
                                       {20, 257, 33}, {300, 31, 16}, {7, 9, 0}};

TYPED_TEST(Gather, GatherMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const auto& [n, count, cols] : kShapes) {
      SCOPED_TRACE(::testing::Message() << n << " rows, " << count << " ids, " << cols << " cols");
      const auto x = testing::random_matrix<T>(n, cols, 1);
      const auto ids = n == 0 ? std::vector<Idx>{} : testing::random_ids<Idx>(count, n, 2);
      auto out = testing::filled(res, count, cols, std::numeric_limits<T>::quiet_NaN());
      gather_rows<Idx, T>(res, testing::to_device(res, x).view(),
                          Tensor<Idx>::from_host(res, ids).span(), out.view());
      EXPECT_EQ(out.to_vector(res), ref::gather_rows(x, ids));
    }
  });
}

// The element-per-index bodies the GPU launches, run by the CPU launcher on 3 threads (the
// scatter's atomics then really contend): the same results as the references.
TEST(Gather, GpuElementBodiesMatchReferenceOnTheCpu) {
  const Resources res(Device::Cpu, 3);
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const auto& [n, count, cols] : kShapes) {
      SCOPED_TRACE(::testing::Message() << n << " rows, " << count << " ids, " << cols << " cols");
      const auto x = testing::random_matrix<T>(n, cols, 1);
      const auto ids = n == 0 ? std::vector<Idx>{} : testing::random_ids<Idx>(count, n, 2);
      const auto id_tensor = Tensor<Idx>::from_host(res, ids);
      auto out = testing::filled(res, count, cols, std::numeric_limits<T>::quiet_NaN());
      for_each_index(res.cpu_exec(), count * cols,
                     detail::GatherElementsBody<Idx, T>{x.view(), id_tensor.span(), out.view()});
      EXPECT_EQ(out.to_vector(res), ref::gather_rows(x, ids));

      const auto y = testing::random_matrix<T>(count, cols, 3);
      auto sum = x.clone(res);
      for_each_index(
          res.cpu_exec(), count * cols,
          detail::ScatterAddElementsBody<Idx, T>{y.view(), id_tensor.span(), sum.view()});
      EXPECT_TRUE(testing::all_close(sum.to_vector(res), ref::scatter_add_rows(y, ids, x),
                                     testing::rtol<T>(), testing::atol<T>()));
    }
  });
}

TYPED_TEST(Gather, ScatterAddMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const auto& [n, count, cols] : kShapes) {
      SCOPED_TRACE(::testing::Message() << n << " rows, " << count << " ids, " << cols << " cols");
      const auto x = testing::random_matrix<T>(count, cols, 3);
      const auto ids = n == 0 ? std::vector<Idx>{} : testing::random_ids<Idx>(count, n, 4);
      const auto start = testing::random_matrix<T>(n, cols, 5);
      auto out = testing::to_device(res, start);
      scatter_add_rows<Idx, T>(res, testing::to_device(res, x).view(),
                               Tensor<Idx>::from_host(res, ids).span(), out.view());
      EXPECT_TRUE(testing::all_close(out.to_vector(res), ref::scatter_add_rows(x, ids, start),
                                     testing::rtol<T>(), testing::atol<T>()));
    }
  });
}

// <gather(x, ids), y> == <x, scatter_add(y, ids)>: scatter-add is gather's backward pass.
TYPED_TEST(Gather, ScatterAddIsAdjointOfGather) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto x = testing::random_matrix<double>(50, 21, 6);
  const auto y = testing::random_matrix<double>(80, 21, 7);
  const auto ids =
      Tensor<std::int64_t>::from_host(res, testing::random_ids<std::int64_t>(80, 50, 8));
  Tensor<double> gathered(res, 80, 21);
  gather_rows<std::int64_t, double>(res, testing::to_device(res, x).view(), ids.span(),
                                    gathered.view());
  auto scattered = Tensor<double>::zeros(res, 50, 21);
  scatter_add_rows<std::int64_t, double>(res, testing::to_device(res, y).view(), ids.span(),
                                         scattered.view());
  EXPECT_NEAR(ref::dot(gathered.to_vector(res), y.to_vector(host())),
              ref::dot(x.to_vector(host()), scattered.to_vector(res)), 1e-10);
}

TYPED_TEST(Gather, RejectsShapeMismatch) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto x = Tensor<float>::zeros(res, 5, 3);
  const auto ids = Tensor<std::int32_t>::from_host(res, {0, 4});
  auto wrong_rows = Tensor<float>::zeros(res, 3, 3);
  auto wrong_cols = Tensor<float>::zeros(res, 2, 4);
  EXPECT_THROW((gather_rows<std::int32_t, float>(res, x.view(), ids.span(), wrong_rows.view())),
               LogicError);
  EXPECT_THROW((gather_rows<std::int32_t, float>(res, x.view(), ids.span(), wrong_cols.view())),
               LogicError);
  const auto two = Tensor<float>::zeros(res, 2, 3);
  auto out = Tensor<float>::zeros(res, 5, 4);
  EXPECT_THROW((scatter_add_rows<std::int32_t, float>(res, x.view(), ids.span(), out.view())),
               LogicError);
  EXPECT_THROW(
      (scatter_add_rows<std::int32_t, float>(res, two.view(), ids.span(), wrong_cols.view())),
      LogicError);
}

// Host data is range-checked; device ids are validated where they are produced.
TYPED_TEST(Gather, RejectsOutOfRangeIdsOnTheHost) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  if (TypeParam::device != Device::Cpu) GTEST_SKIP() << "ids are only checked for host data";
  const auto res = testing::make_resources<TypeParam>();
  const auto x = Tensor<double>::zeros(res, 5, 3);
  auto out = Tensor<double>::zeros(res, 1, 3);
  for (const std::int64_t bad : {-1, 5, 1000}) {
    const auto ids = Tensor<std::int64_t>::from_host(res, {bad});
    EXPECT_THROW((gather_rows<std::int64_t, double>(res, x.view(), ids.span(), out.view())),
                 LogicError);
    auto target = Tensor<double>::zeros(res, 5, 3);
    EXPECT_THROW(
        (scatter_add_rows<std::int64_t, double>(res, out.view(), ids.span(), target.view())),
        LogicError);
  }
}

}  // namespace
}  // namespace halo::kernels
