// CSR x dense products: Sum / Mean / weighted against ref::spmm, the transposed product as the
// adjoint, and gradients.
#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <tuple>

#include <halo/kernels/detail/cuda_ops.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/spmm.hpp>

#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::kernels {
namespace {

template <class Backend>
class Spmm : public ::testing::Test {};
TYPED_TEST_SUITE(Spmm, testing::Backends, testing::BackendNames);

// (rows, cols, features, average degree): empty, single, the usual 257, a non-square matrix
// with more columns than rows, feature counts on either side of the transposed column block,
// and randomly read rows past SpmmRowBody::kInCacheFloats (the CPU row loop that prefetches).
constexpr std::tuple<int, int, int, double> kShapes[] = {
    {0, 0, 3, 2.0},      {0, 5, 4, 2.0},     {1, 1, 1, 1.0},     {3, 4, 0, 2.0},
    {257, 257, 33, 5.0}, {31, 300, 17, 7.0}, {300, 31, 16, 3.0}, {64, 20000, 16, 20.0}};
static_assert(20000 * 16 > detail::SpmmRowBody<int, float>::kInCacheFloats);

template <class Idx, class T>
void check_spmm(const Resources& res, Aggregate aggregate, bool weighted, bool transposed) {
  for (const auto& [rows, cols, features, degree] : kShapes) {
    SCOPED_TRACE(::testing::Message() << rows << " x " << cols << " times " << features
                                      << " features, weighted " << weighted);
    const auto a = testing::random_csr<Idx, T>(rows, cols, degree, 7, weighted);
    const auto x = testing::random_matrix<T>(transposed ? rows : cols, features, 8);
    const auto da = testing::to_device(res, a);
    const auto dx = testing::to_device(res, x);
    auto out = testing::filled(res, transposed ? cols : rows, features,
                               std::numeric_limits<T>::quiet_NaN());
    if (transposed) {
      spmm_transposed(res, da.view(), dx.view(), out.view(), aggregate);
    } else {
      spmm(res, da.view(), dx.view(), out.view(), aggregate);
    }
    const auto expected =
        transposed ? ref::spmm_transposed(a, x, aggregate) : ref::spmm(a, x, aggregate);
    EXPECT_TRUE(
        testing::all_close(out.to_vector(res), expected, testing::rtol<T>(), testing::atol<T>()));
  }
}

TYPED_TEST(Spmm, SumMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    check_spmm<decltype(idx), decltype(value)>(res, Aggregate::Sum, false, false);
  });
}

TYPED_TEST(Spmm, MeanMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    check_spmm<decltype(idx), decltype(value)>(res, Aggregate::Mean, false, false);
  });
}

TYPED_TEST(Spmm, WeightedMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    check_spmm<decltype(idx), decltype(value)>(res, Aggregate::Sum, true, false);
    check_spmm<decltype(idx), decltype(value)>(res, Aggregate::Mean, true, false);
  });
}

// out += A x keeps what out held: the reference product plus the prior contents.
TYPED_TEST(Spmm, AccumulateAddsToTheOutput) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const auto& [rows, cols, features, degree] : kShapes) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols << " times " << features);
      const auto a = testing::random_csr<Idx, T>(rows, cols, degree, 7, /*weighted=*/true);
      const auto x = testing::random_matrix<T>(cols, features, 8);
      const auto prior = testing::random_matrix<T>(rows, features, 9);
      auto out = testing::to_device(res, prior);
      spmm_accumulate(res, testing::to_device(res, a).view(), testing::to_device(res, x).view(),
                      out.view());
      auto expected = ref::spmm(a, x, Aggregate::Sum);
      const auto p = prior.to_vector(testing::host());
      for (std::size_t i = 0; i < expected.size(); ++i) expected[i] += p[i];
      EXPECT_TRUE(
          testing::all_close(out.to_vector(res), expected, testing::rtol<T>(), testing::atol<T>()));
    }
  });
}

// spmm_transposed_accumulate adds A^T y to what `out` holds, on the column-block (or atomic) path
// of a general matrix and the row path of a symmetric one, Sum and Mean.
TYPED_TEST(Spmm, TransposedAccumulateAddsToTheOutput) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const auto& [rows, cols, features, degree] : kShapes) {
      for (const bool symmetric : {false, true}) {
        for (const Aggregate aggregate : {Aggregate::Sum, Aggregate::Mean}) {
          SCOPED_TRACE(::testing::Message() << rows << " x " << cols << " times " << features
                                            << (symmetric ? ", symmetric" : "")
                                            << (aggregate == Aggregate::Mean ? ", mean" : ""));
          const auto a = symmetric ? testing::random_symmetric_csr<Idx, T>(rows, degree, 9, true)
                                   : testing::random_csr<Idx, T>(rows, cols, degree, 7, true);
          const std::int64_t n = a.num_cols;
          const auto y = testing::random_matrix<T>(rows, features, 8);
          const auto prior = testing::random_matrix<T>(n, features, 9);
          auto out = testing::to_device(res, prior);
          spmm_transposed_accumulate(res, testing::to_device(res, a).view(),
                                     testing::to_device(res, y).view(), out.view(), aggregate);
          auto expected = ref::spmm_transposed(a, y, aggregate);
          const auto p = prior.to_vector(testing::host());
          for (std::size_t i = 0; i < expected.size(); ++i) expected[i] += p[i];
          EXPECT_TRUE(testing::all_close(out.to_vector(res), expected, testing::rtol<T>(),
                                         testing::atol<T>()));
        }
      }
    }
  });
}

/// Runs the GPU's row-group body with G lanes per row and V columns per lane on the CPU launcher.
template <int G, int V, class Idx, class T>
void run_row_group(const Resources& res, const detail::SpmmRowBody<Idx, T>& p) {
  for_each_index(res.cpu_exec(), p.out.rows * G, detail::SpmmRowGroupBody<G, V, Idx, T>{p});
}

// The GPU's single-source SpMM bodies, run by the CPU launcher (3 threads: the adjoint's
// atomics contend): every group size and lane width, Sum, Mean, weighted, accumulating and the
// symmetric adjoint's mean_source, against the references.
TEST(Spmm, GpuBodiesMatchReferenceOnTheCpu) {
  const Resources res(Device::Cpu, 3);
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const int width : {1, 3, 8, 33, 130}) {
      for (const bool weighted : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "width " << width << ", weighted " << weighted);
        const auto a = testing::random_csr<Idx, T>(97, 61, 5.0, 21, weighted);
        const auto x = testing::random_matrix<T>(61, width, 22);
        const auto prior = testing::random_matrix<T>(97, width, 23);
        for (const Aggregate agg : {Aggregate::Sum, Aggregate::Mean}) {
          const auto expected = ref::spmm(a, x, agg);
          auto sum = expected;
          const auto pv = prior.to_vector(res);
          for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += pv[i];
          auto check = [&](auto run) {
            auto out = testing::filled(res, 97, width, std::numeric_limits<T>::quiet_NaN());
            run(detail::SpmmRowBody<Idx, T>{a.view(), x.view(), out.view(),
                                            agg == Aggregate::Mean});
            EXPECT_TRUE(testing::all_close(out.to_vector(res), expected, testing::rtol<T>(),
                                           testing::atol<T>()));
            if (agg == Aggregate::Mean) return;
            auto acc = prior.clone(res);
            run(detail::SpmmRowBody<Idx, T>{a.view(), x.view(), acc.view(), false, false, true});
            EXPECT_TRUE(testing::all_close(acc.to_vector(res), sum, testing::rtol<T>(),
                                           testing::atol<T>()));
          };
          check([&](const auto& p) { run_row_group<1, 1>(res, p); });
          check([&](const auto& p) { run_row_group<4, 1>(res, p); });
          check([&](const auto& p) { run_row_group<32, 1>(res, p); });
          check([&](const auto& p) { run_row_group<2, 4>(res, p); });
          check([&](const auto& p) { run_row_group<16, 2>(res, p); });
          check([&](const auto& p) { run_row_group<32, 4>(res, p); });

          const auto y = testing::random_matrix<T>(97, width, 24);
          auto t = testing::filled(res, 61, width, T(0));
          using Atomic = detail::SpmmTransposedAtomicBody<Idx, T>;
          for_each_index(res.cpu_exec(), 97 * Atomic::kGroup,
                         Atomic{a.view(), y.view(), t.view(), agg == Aggregate::Mean});
          EXPECT_TRUE(testing::all_close(t.to_vector(res), ref::spmm_transposed(a, y, agg),
                                         testing::rtol<T>(), testing::atol<T>()));
        }
      }
    }
    // mean_source on a symmetric matrix: the adjoint of Mean, as spmm_transposed runs it.
    const auto s = testing::random_symmetric_csr<Idx, T>(80, 6.0, 25);
    const auto y = testing::random_matrix<T>(80, 40, 26);
    auto out = testing::filled(res, 80, 40, std::numeric_limits<T>::quiet_NaN());
    run_row_group<16, 16 / sizeof(T)>(
        res, detail::SpmmRowBody<Idx, T>{s.view(), y.view(), out.view(), false, true});
    EXPECT_TRUE(testing::all_close(out.to_vector(res), ref::spmm_transposed(s, y, Aggregate::Mean),
                                   testing::rtol<T>(), testing::atol<T>()));
  });
}

#if HALO_WITH_CUDA
// Every width a CPU row can take: rows of up to 256 floats keep their sums in registers, 16
// columns each (the last vector masked), wider ones sum in the output row. Against the
// reference, and column-exact: the first k columns of a product equal the product of x's first
// k columns bit for bit (the same additions in the same order, whichever path a width takes).
TEST(Spmm, EveryCpuRowWidthIsColumnExact) {
  const Resources res(Device::Cpu, 2);
  using T = float;
  const auto a = testing::random_csr<std::int32_t, T>(41, 53, 6.0, 31, /*weighted=*/true);
  const auto sym = testing::random_symmetric_csr<std::int32_t, T>(53, 6.0, 32, /*weighted=*/true);
  for (const int width : {1, 2, 7, 15, 16, 17, 31, 33, 40, 64, 65, 128, 129, 255, 256, 257, 300}) {
    SCOPED_TRACE(::testing::Message() << "width " << width);
    const auto x = testing::random_matrix<T>(53, width, 33);
    const auto prior = testing::random_matrix<T>(41, width, 34);
    const auto xv = x.to_vector(res), pv = prior.to_vector(res);
    // The first k columns of a row-major matrix as a matrix of their own.
    const auto first = [](const std::vector<T>& m, int w, int k) {
      std::vector<T> out;
      for (std::size_t i = 0; i < m.size(); i += static_cast<std::size_t>(w))
        out.insert(out.end(), m.begin() + static_cast<std::ptrdiff_t>(i),
                   m.begin() + static_cast<std::ptrdiff_t>(i) + k);
      return out;
    };
    // kind 0: spmm Sum, 1: spmm Mean, 2: spmm_accumulate onto prior, 3: symmetric Mean adjoint.
    const auto run = [&](int kind, const std::vector<T>& xs, const std::vector<T>& ps, int w) {
      const std::int64_t rows = kind == 3 ? 53 : 41;
      const auto xt = Tensor<T>::from_host(res, xs, 53, w);
      auto out = kind == 2 ? Tensor<T>::from_host(res, ps, 41, w)
                           : testing::filled(res, rows, w, std::numeric_limits<T>::quiet_NaN());
      if (kind == 0) spmm(res, a.view(), xt.view(), out.view(), Aggregate::Sum);
      if (kind == 1) spmm(res, a.view(), xt.view(), out.view(), Aggregate::Mean);
      if (kind == 2) spmm_accumulate(res, a.view(), xt.view(), out.view());
      if (kind == 3) spmm_transposed(res, sym.view(), xt.view(), out.view(), Aggregate::Mean);
      return out.to_vector(res);
    };
    for (int kind = 0; kind < 4; ++kind) {
      SCOPED_TRACE(::testing::Message() << "kind " << kind);
      const auto got = run(kind, xv, pv, width);
      auto expected = kind == 3   ? ref::spmm_transposed(sym, x, Aggregate::Mean)
                      : kind == 1 ? ref::spmm(a, x, Aggregate::Mean)
                                  : ref::spmm(a, x, Aggregate::Sum);
      if (kind == 2)
        for (std::size_t i = 0; i < expected.size(); ++i) expected[i] += pv[i];
      EXPECT_TRUE(testing::all_close(got, expected, testing::rtol<T>(), testing::atol<T>()));
      for (const int k : {1, 16, 17, 256}) {
        if (k >= width) continue;
        EXPECT_EQ(first(got, width, k), run(kind, first(xv, width, k), first(pv, width, k), k))
            << "first " << k << " columns";
      }
    }
  }
}

// Each GPU implementation on its own, over widths that give every row-group size (1 .. 32
// lanes), the 16-byte-per-lane variant and both sides of cuSPARSE's minimum width.
TEST(SpmmCuda, EveryAlgorithmMatchesReference) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device";
  const Resources res(Device::Cuda);
  using Algorithm = detail::SpmmAlgorithm;
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const int width : {1, 2, 5, 8, 31, 32, 64, 100, 130, 256}) {
      const auto a = testing::random_csr<Idx, T>(300, 280, 6.0, 11, /*weighted=*/true);
      const auto x = testing::random_matrix<T>(280, width, 12);
      const auto prior = testing::random_matrix<T>(300, width, 13);
      const auto da = testing::to_device(res, a);
      const auto dx = testing::to_device(res, x);
      const auto expected = ref::spmm(a, x, Aggregate::Sum);
      for (const Algorithm algorithm : {Algorithm::RowGroup, Algorithm::Cusparse}) {
        SCOPED_TRACE(::testing::Message()
                     << "width " << width << ", algorithm " << static_cast<int>(algorithm));
        auto out = testing::filled(res, 300, width, std::numeric_limits<T>::quiet_NaN());
        detail::spmm_rows_cuda(
            res, detail::SpmmRowBody<Idx, T>{da.view(), dx.view(), out.view(), false}, algorithm);
        EXPECT_TRUE(testing::all_close(out.to_vector(res), expected, testing::rtol<T>(),
                                       testing::atol<T>()));
        auto acc = testing::to_device(res, prior);
        detail::spmm_rows_cuda(
            res, detail::SpmmRowBody<Idx, T>{da.view(), dx.view(), acc.view(), false, false, true},
            algorithm);
        auto sum = expected;
        const auto p = prior.to_vector(testing::host());
        for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += p[i];
        EXPECT_TRUE(
            testing::all_close(acc.to_vector(res), sum, testing::rtol<T>(), testing::atol<T>()));
      }
    }
  });
}

TEST(SpmmCuda, CusparseRefusesWhatItCannotCompute) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no usable CUDA device";
  const Resources res(Device::Cuda);
  const auto a = testing::to_device(res, testing::random_csr<std::int32_t, float>(8, 8, 2.0, 1));
  const auto x = Tensor<float>::zeros(res, 8, 40);
  auto out = Tensor<float>::zeros(res, 8, 40);
  EXPECT_THROW(detail::spmm_rows_cuda(res,
                                      detail::SpmmRowBody<std::int32_t, float>{
                                          a.view(), x.view(), out.view(), /*mean=*/false},
                                      detail::SpmmAlgorithm::Cusparse),
               LogicError);  // unweighted: cuSPARSE needs values
}
#endif

TYPED_TEST(Spmm, TransposedMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    for (const Aggregate aggregate : {Aggregate::Sum, Aggregate::Mean})
      for (const bool weighted : {false, true})
        check_spmm<decltype(idx), decltype(value)>(res, aggregate, weighted, true);
  });
}

// A symmetric matrix (flag set) takes spmm_transposed's row-parallel path; the reference
// transposes literally.
TYPED_TEST(Spmm, SymmetricTransposedMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const auto& [n, features] :
         {std::pair{0, 3}, std::pair{1, 1}, std::pair{2, 5}, std::pair{257, 33}, std::pair{31, 0}})
      for (const bool weighted : {false, true})
        for (const Aggregate aggregate : {Aggregate::Sum, Aggregate::Mean}) {
          SCOPED_TRACE(::testing::Message()
                       << n << " nodes, " << features << " features, weighted " << weighted
                       << ", mean " << (aggregate == Aggregate::Mean));
          const auto a = testing::random_symmetric_csr<Idx, T>(n, 6.0, 9, weighted);
          const auto y = testing::random_matrix<T>(n, features, 10);
          auto out = testing::filled(res, n, features, std::numeric_limits<T>::quiet_NaN());
          spmm_transposed(res, testing::to_device(res, a).view(), testing::to_device(res, y).view(),
                          out.view(), aggregate);
          EXPECT_TRUE(testing::all_close(out.to_vector(res), ref::spmm_transposed(a, y, aggregate),
                                         testing::rtol<T>(), testing::atol<T>()));
        }
  });
}

TEST(Spmm, RandomSymmetricCsrIsSymmetricWithIsolatedNodes) {
  const auto a = testing::random_symmetric_csr<std::int32_t, double>(257, 6.0, 9, true);
  ASSERT_TRUE(a.symmetric);
  const auto d = ref::densify(a);
  for (int r = 0; r < 257; ++r)
    for (int c = 0; c < 257; ++c) ASSERT_EQ(d[r * 257 + c], d[c * 257 + r]) << r << ", " << c;
  const auto indptr = a.indptr.to_vector(testing::host());
  EXPECT_EQ(indptr[1], indptr[2]) << "node 1 should be isolated";
  EXPECT_GT(a.num_edges(), 257 * 4);
}

// <A x, y> == <x, A^T y>: spmm_transposed is the adjoint that the backward pass relies on.
template <class Idx, class T>
void check_adjoint(const Resources& res, const CsrMatrix<Idx, T>& a) {
  SCOPED_TRACE(::testing::Message() << "symmetric " << a.symmetric);
  const std::int64_t m = a.num_rows(), k = a.num_cols;
  const auto x = testing::random_matrix<T>(k, 19, 4);
  const auto y = testing::random_matrix<T>(m, 19, 5);
  const auto da = testing::to_device(res, a);
  const auto dx = testing::to_device(res, x);
  const auto dy = testing::to_device(res, y);
  for (const Aggregate aggregate : {Aggregate::Sum, Aggregate::Mean}) {
    Tensor<T> ax(res, m, 19);
    Tensor<T> aty(res, k, 19);
    spmm(res, da.view(), dx.view(), ax.view(), aggregate);
    spmm_transposed(res, da.view(), dy.view(), aty.view(), aggregate);
    const double lhs = ref::dot(ax.to_vector(res), y.to_vector(testing::host()));
    const double rhs = ref::dot(x.to_vector(testing::host()), aty.to_vector(res));
    EXPECT_NEAR(lhs, rhs, 1e3 * testing::atol<T>() * (1 + std::abs(lhs)));
  }
}

TYPED_TEST(Spmm, TransposedIsAdjoint) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    check_adjoint(res, testing::random_csr<Idx, T>(57, 41, 4.0, 3, /*weighted=*/true));
    check_adjoint(res, testing::random_symmetric_csr<Idx, T>(57, 6.0, 3, /*weighted=*/true));
  });
}

// f(x) = <A x, w> has gradient A^T w.
TYPED_TEST(Spmm, GradientMatchesFiniteDifferences) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  for (const bool symmetric : {false, true}) {
    const auto a = symmetric ? testing::random_symmetric_csr<std::int32_t, double>(9, 4.0, 11, true)
                             : testing::random_csr<std::int32_t, double>(9, 7, 3.0, 11, true);
    const std::int64_t m = a.num_rows(), k = a.num_cols;
    const auto x = testing::random_matrix<double>(k, 3, 12);
    const auto w = testing::random_matrix<double>(m, 3, 13);
    const auto da = testing::to_device(res, a);
    const auto dw = testing::to_device(res, w);
    for (const Aggregate aggregate : {Aggregate::Sum, Aggregate::Mean}) {
      SCOPED_TRACE(::testing::Message()
                   << "symmetric " << symmetric << ", mean " << (aggregate == Aggregate::Mean));
      auto f = [&](const std::vector<double>& xv) {
        const auto dx = Tensor<double>::from_host(res, xv, k, 3);
        Tensor<double> out(res, m, 3);
        spmm(res, da.view(), dx.view(), out.view(), aggregate);
        return ref::dot(out.to_vector(res), w.to_vector(testing::host()));
      };
      Tensor<double> grad(res, k, 3);
      spmm_transposed(res, da.view(), dw.view(), grad.view(), aggregate);
      const auto fd = ref::finite_difference_gradient(f, x.to_vector(testing::host()), 1e-6);
      EXPECT_TRUE(testing::all_close(grad.to_vector(res), fd, 1e-6, 1e-8));
    }
  }
}

TYPED_TEST(Spmm, HandWrittenMatrix) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  // A = [0 2 0; 0 0 0; 1 0 3] with x = [1 10; 2 20; 3 30], an empty middle row, and an
  // unweighted copy of the same pattern.
  const CsrMatrix<std::int64_t, double> a{testing::host_tensor<std::int64_t>({0, 1, 1, 3}),
                                          testing::host_tensor<std::int64_t>({1, 0, 2}),
                                          testing::host_tensor<double>({2, 1, 3}), 3};
  const auto da = testing::to_device(res, a);
  const CsrMatrix<std::int64_t, double> pattern{da.indptr.clone(res), da.indices.clone(res), {}, 3};
  const auto x = testing::to_device(res, testing::host_tensor<double>({1, 10, 2, 20, 3, 30}, 3, 2));
  Tensor<double> out(res, 3, 2);
  spmm(res, da.view(), x.view(), out.view());
  EXPECT_EQ(out.to_vector(res), (std::vector<double>{4, 40, 0, 0, 10, 100}));
  spmm(res, da.view(), x.view(), out.view(), Aggregate::Mean);
  EXPECT_EQ(out.to_vector(res), (std::vector<double>{4, 40, 0, 0, 5, 50}));
  spmm(res, pattern.view(), x.view(), out.view());
  EXPECT_EQ(out.to_vector(res), (std::vector<double>{2, 20, 0, 0, 4, 40}));
  spmm_transposed(res, da.view(), x.view(), out.view());  // A^T x
  EXPECT_EQ(out.to_vector(res), (std::vector<double>{3, 30, 2, 20, 9, 90}));
}

TYPED_TEST(Spmm, RejectsShapeMismatch) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto a = testing::to_device(res, testing::random_csr<std::int32_t, float>(6, 4, 2.0, 1));
  const auto x = Tensor<float>::zeros(res, 5, 3);  // needs 4 rows
  const auto x4 = Tensor<float>::zeros(res, 4, 3);
  auto out = Tensor<float>::zeros(res, 6, 3);
  auto out_wrong = Tensor<float>::zeros(res, 6, 2);
  EXPECT_THROW(spmm(res, a.view(), x.view(), out.view()), LogicError);
  EXPECT_THROW(spmm(res, a.view(), x4.view(), out_wrong.view()), LogicError);
  const auto y = Tensor<float>::zeros(res, 6, 3);
  auto back = Tensor<float>::zeros(res, 4, 3);
  EXPECT_NO_THROW(spmm_transposed(res, a.view(), y.view(), back.view()));
  EXPECT_THROW(spmm_transposed(res, a.view(), x4.view(), back.view()), LogicError);
  EXPECT_THROW(spmm_transposed(res, a.view(), y.view(), out.view()), LogicError);
  auto flagged = a.view();
  flagged.symmetric = true;  // 6 x 4 cannot be symmetric
  EXPECT_THROW(spmm_transposed(res, flagged, y.view(), back.view()), LogicError);
}

TEST(Spmm, RandomCsrHasEmptyRowsAndIsolatedColumns) {
  // The inputs above exercise empty rows and isolated nodes only if random_csr makes them.
  const auto a = testing::random_csr<std::int64_t, float>(257, 257, 5.0, 7);
  const auto indptr = a.indptr.to_vector(testing::host());
  const auto indices = a.indices.to_vector(testing::host());
  int empty_rows = 0;
  for (std::size_t r = 0; r + 1 < indptr.size(); ++r) {
    empty_rows += indptr[r] == indptr[r + 1];
    for (auto e = indptr[r] + 1; e < indptr[r + 1]; ++e)
      ASSERT_LT(indices[e - 1], indices[e]) << "row " << r << " is not sorted and duplicate-free";
  }
  std::vector<bool> used(257);
  for (const auto c : indices) used.at(c) = true;
  EXPECT_GT(empty_rows, 1);
  EXPECT_GT(std::count(used.begin(), used.end(), false), 1);
  EXPECT_FALSE(used.back());
  EXPECT_NEAR(static_cast<double>(a.num_edges()) / 257, 5.0, 1.5);
}

}  // namespace
}  // namespace halo::kernels
