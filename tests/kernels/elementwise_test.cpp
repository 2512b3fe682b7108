// Element-wise ops: fill, axpy, bias, ReLU and dropout (dense and CSR).
#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <omp.h>
#include <set>

#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/elementwise_body.hpp>
#include <halo/kernels/exec.hpp>
#include <halo/kernels/gather.hpp>

#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::kernels {
namespace {

using testing::host;

template <class Backend>
class Elementwise : public ::testing::Test {};
TYPED_TEST_SUITE(Elementwise, testing::Backends, testing::BackendNames);

template <class Backend>
class Dropout : public ::testing::Test {};
TYPED_TEST_SUITE(Dropout, testing::Backends, testing::BackendNames);

constexpr std::int64_t kSizes[] = {0, 1, 7, 257, 1000};

template <class T>
std::vector<T> random_vector(std::int64_t n, std::uint64_t seed) {
  return testing::random_matrix<T>(n, 1, seed).to_vector(host());
}

TYPED_TEST(Elementwise, FillSetsEveryElement) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const std::int64_t n : kSizes) {
      auto x = testing::filled(res, n, 1, std::numeric_limits<T>::quiet_NaN());
      fill(res, x.span(), T(-2.5));
      EXPECT_EQ(x.to_vector(res), std::vector<T>(n, T(-2.5)));
    }
  });
}

TYPED_TEST(Elementwise, AxpyMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const std::int64_t n : kSizes) {
      const auto x = random_vector<T>(n, 1);
      const auto y = random_vector<T>(n, 2);
      std::vector<double> expected(n);
      for (std::int64_t i = 0; i < n; ++i) expected[i] = double(y[i]) + 0.375 * double(x[i]);
      auto dy = Tensor<T>::from_host(res, y);
      axpy(res, T(0.375), Tensor<T>::from_host(res, x).span(), dy.span());
      EXPECT_TRUE(
          testing::all_close(dy.to_vector(res), expected, testing::rtol<T>(), testing::atol<T>()));
    }
  });
}

TYPED_TEST(Elementwise, AddBiasMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const auto& [rows, cols] :
         {std::pair{0, 3}, std::pair{1, 1}, std::pair{257, 5}, std::pair{3, 0}, std::pair{9, 33}}) {
      const auto x = testing::random_matrix<T>(rows, cols, 3);
      const auto bias = random_vector<T>(cols, 4);
      auto dx = testing::to_device(res, x);
      add_bias(res, dx.view(), Tensor<T>::from_host(res, bias).span());
      EXPECT_TRUE(testing::all_close(dx.to_vector(res), ref::add_bias(x, bias), testing::rtol<T>(),
                                     testing::atol<T>()));
    }
  });
}

TYPED_TEST(Elementwise, ReluMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const std::int64_t n : kSizes) {
      auto x = random_vector<T>(n, 5);
      if (n > 0) x[0] = T(0);  // the boundary: relu(0) = 0 and no gradient flows
      const auto dx = Tensor<T>::from_host(res, x);
      auto y = testing::filled(res, n, 1, std::numeric_limits<T>::quiet_NaN());
      relu(res, dx.span(), y.span());
      const auto yv = y.to_vector(res);
      EXPECT_EQ(yv, ref::relu(x));
      auto in_place = dx.clone(res);  // y may alias x
      relu(res, Span<const T>(in_place.span()), in_place.span());
      EXPECT_EQ(in_place.to_vector(res), ref::relu(x));

      const auto dy = random_vector<T>(n, 6);
      auto grad = testing::filled(res, n, 1, std::numeric_limits<T>::quiet_NaN());
      relu_backward(res, y.span(), Tensor<T>::from_host(res, dy).span(), grad.span());
      EXPECT_EQ(grad.to_vector(res), ref::relu_backward(yv, dy));
      auto grad_in_place = Tensor<T>::from_host(res, dy);  // dx may alias dy
      relu_backward(res, y.span(), Span<const T>(grad_in_place.span()), grad_in_place.span());
      EXPECT_EQ(grad_in_place.to_vector(res), ref::relu_backward(yv, dy));
    }
  });
}

// f(x) = <relu(x), w> has gradient relu_backward(relu(x), w) away from the kink at 0.
TYPED_TEST(Elementwise, ReluGradientMatchesFiniteDifferences) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  auto x = random_vector<double>(40, 7);
  for (double& v : x)
    if (std::abs(v) < 0.05) v = v < 0 ? v - 0.05 : v + 0.05;
  const auto w = random_vector<double>(40, 8);
  auto f = [&](const std::vector<double>& xv) {
    auto y = Tensor<double>::from_host(res, xv);
    relu(res, Span<const double>(y.span()), y.span());
    return ref::dot(y.to_vector(res), w);
  };
  auto y = Tensor<double>::from_host(res, x);
  relu(res, Span<const double>(y.span()), y.span());
  Tensor<double> grad(res, 40);
  relu_backward(res, y.span(), Tensor<double>::from_host(res, w).span(), grad.span());
  EXPECT_TRUE(testing::all_close(grad.to_vector(res), ref::finite_difference_gradient(f, x, 1e-6),
                                 1e-6, 1e-8));
}

TYPED_TEST(Elementwise, RejectsSizeMismatch) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  auto a = Tensor<float>::zeros(res, 4);
  auto b = Tensor<float>::zeros(res, 5);
  auto m = Tensor<float>::zeros(res, 3, 4);
  EXPECT_THROW(axpy(res, 1.f, a.span(), b.span()), LogicError);
  EXPECT_THROW(add_bias(res, m.view(), b.span()), LogicError);
  EXPECT_THROW(relu(res, a.span(), b.span()), LogicError);
  EXPECT_THROW(relu_backward(res, a.span(), a.span(), b.span()), LogicError);
  EXPECT_THROW(relu_backward(res, a.span(), b.span(), a.span()), LogicError);
}

// ---- dropout -----------------------------------------------------------------------------------

template <class T>
Tensor<T> run_dropout(const Resources& res, const DropoutKey& key, float p, const Tensor<T>& x) {
  const auto dx = testing::to_device(res, x);
  auto y = testing::filled(res, x.rows(), x.cols(), std::numeric_limits<T>::quiet_NaN());
  dropout(res, key, p, dx.view(), y.view());
  return testing::to_host(res, y);
}

/// The GPU's element-per-index dropout body (Relu: relu_dropout's), run by the CPU launcher on
/// `rows` rows of x's width: rows of x, or with `gather` the rows it names.
template <class T, bool Relu = false>
std::vector<T> dropout_elements_on_cpu(const Resources& res, const DropoutKey& key, float p,
                                       const Tensor<T>& x, std::int64_t rows,
                                       const NodeId* gather = nullptr) {
  auto y = testing::filled(res, rows, x.cols(), std::numeric_limits<T>::quiet_NaN());
  for_each_index(res.cpu_exec(), rows * x.cols(),
                 detail::DropoutElementsBody<T, Relu>{
                     detail::dropout_rng_key(key), detail::dropout_threshold(p), key.row_offset,
                     key.row_ids, T(1) / (T(1) - T(p)), x.view(), y.view(), gather});
  return y.to_vector(res);
}

/// The fraction of positions where exactly one of two outputs (of all-ones inputs) is zero.
double mask_difference(const Tensor<float>& a, const Tensor<float>& b) {
  std::int64_t differ = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) differ += (a.data()[i] == 0) != (b.data()[i] == 0);
  return static_cast<double>(differ) / static_cast<double>(a.numel());
}

TYPED_TEST(Dropout, MatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const auto& [rows, cols] :
         {std::pair{0, 4}, std::pair{1, 1}, std::pair{257, 33}, std::pair{5, 0}, std::pair{31, 7}})
      for (const float p : {0.f, 0.3f, 0.9f}) {
        SCOPED_TRACE(::testing::Message() << rows << " x " << cols << ", p = " << p);
        const DropoutKey key{/*seed=*/17, /*epoch=*/3, /*layer=*/1, /*row_offset=*/1000};
        const auto x = testing::random_matrix<T>(rows, cols, 9);
        EXPECT_TRUE(testing::all_close(run_dropout(res, key, p, x), ref::dropout(key, p, x),
                                       testing::rtol<T>(), testing::atol<T>()));
      }
  });
}

TYPED_TEST(Dropout, DropsAboutAFractionP) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto ones = testing::filled(host(), 257, 64, 1.f);
  for (const float p : {0.1f, 0.5f, 0.8f}) {
    const auto y = run_dropout(res, DropoutKey{5, 0, 0, 0}, p, ones);
    std::int64_t dropped = 0;
    for (const float v : y.to_vector(host())) {
      if (v == 0) {
        ++dropped;
      } else {
        ASSERT_FLOAT_EQ(v, 1.f / (1.f - p)) << "kept values are scaled by 1 / (1 - p)";
      }
    }
    // 16448 draws: the standard deviation of the fraction is below 0.004.
    EXPECT_NEAR(static_cast<double>(dropped) / static_cast<double>(ones.numel()), p, 0.02);
  }
}

TYPED_TEST(Dropout, PZeroKeepsEverything) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto x = testing::random_matrix<double>(13, 11, 2);
  EXPECT_EQ(run_dropout(res, DropoutKey{1, 2, 3, 4}, 0.f, x).to_vector(host()),
            x.to_vector(host()));
}

TYPED_TEST(Dropout, MaskIsAFunctionOfTheKey) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto ones = testing::filled(host(), 64, 32, 1.f);
  const DropoutKey key{9, 4, 1, 0};
  const auto base = run_dropout(res, key, 0.5f, ones);
  EXPECT_EQ(run_dropout(res, key, 0.5f, ones).to_vector(host()), base.to_vector(host()));
  // Independent masks with p = 0.5 differ in about half of the positions.
  for (const DropoutKey other : {DropoutKey{10, 4, 1, 0}, DropoutKey{9, 5, 1, 0},
                                 DropoutKey{9, 4, 2, 0}, DropoutKey{9, 4, 1, 64}}) {
    EXPECT_NEAR(mask_difference(base, run_dropout(res, other, 0.5f, ones)), 0.5, 0.05)
        << "seed " << other.seed << " epoch " << other.epoch << " layer " << other.layer
        << " row offset " << other.row_offset;
  }
}

// A process that owns rows [k, n) of a matrix and passes row_offset = k draws the rows of the
// whole matrix's mask.
TYPED_TEST(Dropout, RowOffsetSelectsGlobalRows) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const std::int64_t n = 40, k = 13, cols = 9;
  const auto x = testing::random_matrix<float>(n, cols, 4);
  const auto whole = run_dropout(res, DropoutKey{3, 1, 0, 0}, 0.4f, x).to_vector(host());
  const std::vector<float> xv = x.to_vector(host());
  const auto tail = testing::host_tensor<float>({xv.begin() + k * cols, xv.end()}, n - k, cols);
  EXPECT_EQ(run_dropout(res, DropoutKey{3, 1, 0, k}, 0.4f, tail).to_vector(host()),
            std::vector<float>(whole.begin() + k * cols, whole.end()));
}

// Rows that are not a contiguous id range (a partition's owned nodes in their original ids, a
// mini-batch's input nodes) pass row_ids and draw the whole matrix's rows of those ids.
// The GPU's element-per-index bias and dropout bodies, run by the CPU launcher: the same values
// as the references (dropout: with a row offset and with row ids).
TEST(Dropout, GpuElementBodiesMatchReferenceOnTheCpu) {
  const Resources res(Device::Cpu, 3);
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const auto& [rows, cols] : {std::pair{0, 4}, std::pair{1, 1}, std::pair{257, 33}}) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
      const auto x = testing::random_matrix<T>(rows, cols, 9);
      const std::vector<T> bias = random_vector<T>(cols, 2);
      auto biased = x.clone(res);
      const auto bias_tensor = testing::host_tensor<T>(bias);
      for_each_index(res.cpu_exec(), rows * cols,
                     detail::AddBiasElementsBody<T>{biased.view(), bias_tensor.span()});
      std::vector<T> expected = x.to_vector(res);
      for (std::size_t k = 0; k < expected.size(); ++k) expected[k] += bias[k % cols];
      EXPECT_EQ(biased.to_vector(res), expected);

      std::vector<NodeId> ids(static_cast<std::size_t>(rows));
      for (std::int64_t r = 0; r < rows; ++r) ids[r] = static_cast<NodeId>((r * 31 + 5) % 1000);
      const auto id_tensor = testing::host_tensor<NodeId>(ids);
      for (const bool use_ids : {false, true}) {
        DropoutKey key{/*seed=*/17, /*epoch=*/3, /*layer=*/1, /*row_offset=*/1000};
        if (use_ids) key.row_ids = id_tensor.span();
        const float p = 0.3f;
        EXPECT_TRUE(testing::all_close(dropout_elements_on_cpu(res, key, p, x, rows),
                                       ref::dropout(key, p, x), testing::rtol<T>(),
                                       testing::atol<T>()));
      }
    }
  });
}

TYPED_TEST(Dropout, RowIdsSelectGlobalRows) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const std::int64_t n = 40, cols = 9;
  const std::vector<NodeId> ids = {7, 0, 33, 12, 39};
  const auto x = testing::random_matrix<float>(n, cols, 4);
  const auto whole = run_dropout(res, DropoutKey{3, 1, 0, 0}, 0.4f, x).to_vector(host());
  const std::vector<float> xv = x.to_vector(host());
  std::vector<float> picked, expected;
  for (const NodeId id : ids)
    for (std::int64_t c = 0; c < cols; ++c) {
      picked.push_back(xv[static_cast<std::size_t>(id * cols + c)]);
      expected.push_back(whole[static_cast<std::size_t>(id * cols + c)]);
    }
  const auto rows = static_cast<std::int64_t>(ids.size());
  const auto device_ids = testing::to_device(res, testing::host_tensor<NodeId>(ids, rows, 1));
  DropoutKey key{3, 1, 0, /*row_offset, ignored=*/1000};
  key.row_ids = device_ids.span();
  EXPECT_EQ(run_dropout(res, key, 0.4f, testing::host_tensor<float>(picked, rows, cols))
                .to_vector(host()),
            expected);
}

// gather_dropout is gather_rows, then dropout keyed by the gathered rows' ids, in one pass: the
// same values bit for bit (repeated and unordered indices, with row ids and with a row offset,
// p = 0, no rows), on every backend and by the GPU's element body on the CPU launcher.
TYPED_TEST(Dropout, GatherDropoutEqualsGatherThenDropout) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    const std::int64_t n = 50, cols = 37;
    const auto x = testing::to_device(res, testing::random_matrix<T>(n, cols, 8));
    for (const std::vector<NodeId>& idx :
         {std::vector<NodeId>{}, std::vector<NodeId>{3}, std::vector<NodeId>{49, 0, 7, 7, 21, 3}})
      for (const bool use_ids : {false, true})
        for (const float p : {0.f, 0.5f}) {
          const auto rows = static_cast<std::int64_t>(idx.size());
          SCOPED_TRACE(::testing::Message() << rows << " rows, ids " << use_ids << ", p " << p);
          const auto idx_d = testing::to_device(res, testing::host_tensor<NodeId>(idx, rows, 1));
          std::vector<NodeId> ids(idx.size());
          for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = 1000 + 3 * idx[i];
          const auto ids_d = testing::to_device(res, testing::host_tensor<NodeId>(ids, rows, 1));
          DropoutKey key{/*seed=*/5, /*epoch=*/2, /*layer=*/0, /*row_offset=*/40};
          if (use_ids) key.row_ids = ids_d.span();
          auto gathered = testing::filled(res, rows, cols, T(0));
          gather_rows<NodeId, T>(res, x.view(), idx_d.span(), gathered.view());
          auto expected = testing::filled(res, rows, cols, T(0));
          dropout(res, key, p, gathered.view(), expected.view());
          auto y = testing::filled(res, rows, cols, std::numeric_limits<T>::quiet_NaN());
          gather_dropout(res, key, p, x.view(), idx_d.span(), y.view());
          EXPECT_EQ(testing::to_host(res, y).to_vector(host()),
                    testing::to_host(res, expected).to_vector(host()));
          if (res.device() == Device::Cpu) {  // the GPU's element body, by the CPU launcher
            EXPECT_EQ(dropout_elements_on_cpu(res, key, p, x, rows, idx_d.data()),
                      expected.to_vector(res));
          }
        }
  });
  if (res.device() != Device::Cpu) return;
  const auto x = testing::random_matrix<float>(4, 2, 1);
  auto y = testing::filled(host(), 1, 2, 0.f);
  const auto bad = testing::host_tensor<NodeId>({4}, 1, 1);
  EXPECT_THROW(gather_dropout(host(), DropoutKey{}, 0.5f, x.view(), bad.span(), y.view()),
               LogicError);
  const auto two = testing::host_tensor<NodeId>({0, 1}, 2, 1);
  EXPECT_THROW(gather_dropout(host(), DropoutKey{}, 0.5f, x.view(), two.span(), y.view()),
               LogicError);
}

TYPED_TEST(Dropout, InPlace) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto x = testing::random_matrix<float>(17, 5, 6);
  const DropoutKey key{2, 2, 2, 2};
  auto y = testing::to_device(res, x);
  dropout(res, key, 0.25f, MatrixView<const float>(y.view()), y.view());
  EXPECT_TRUE(testing::all_close(y.to_vector(res), ref::dropout(key, 0.25f, x), 1e-6, 1e-7));
}

// Dropout is linear in x with a fixed mask, so the backward pass is the same op applied to dy:
// f(x) = <dropout(x), w> has gradient dropout(w).
TYPED_TEST(Dropout, GradientMatchesFiniteDifferences) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const DropoutKey key{8, 1, 2, 5};
  const auto x = testing::random_matrix<double>(6, 7, 1);
  const auto w = testing::random_matrix<double>(6, 7, 2);
  auto f = [&](const std::vector<double>& xv) {
    return ref::dot(run_dropout(res, key, 0.3f, testing::host_tensor(xv, 6, 7)).to_vector(host()),
                    w.to_vector(host()));
  };
  const auto grad = run_dropout(res, key, 0.3f, w);
  EXPECT_TRUE(testing::all_close(grad.to_vector(host()),
                                 ref::finite_difference_gradient(f, x.to_vector(host()), 1e-6),
                                 1e-6, 1e-8));
}

template <class Idx, class T>
void check_csr_dropout(const Resources& res, std::int64_t rows, std::int64_t cols, bool weighted) {
  SCOPED_TRACE(::testing::Message() << rows << " x " << cols << ", weighted " << weighted);
  const DropoutKey key{21, 2, 0, 7};
  const float p = 0.35f;
  const auto a = testing::random_csr<Idx, T>(rows, cols, 6.0, 5, weighted);
  const auto da = testing::to_device(res, a);
  auto values = testing::filled(res, a.num_edges(), 1, std::numeric_limits<T>::quiet_NaN());
  dropout(res, key, p, da.view(), values.span());
  const auto got = values.to_vector(res);

  // The dense dropout of the densified matrix, read back at the stored positions.
  const auto dense = testing::host_tensor(ref::densify(a), rows, cols);
  const auto dense_out = run_dropout(res, key, p, dense);
  const auto indptr = a.indptr.to_vector(host());
  const auto indices = a.indices.to_vector(host());
  std::vector<T> expected(got.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t e = indptr[r]; e < indptr[r + 1]; ++e)
      expected[e] = dense_out(r, static_cast<std::int64_t>(indices[e]));
  EXPECT_TRUE(testing::all_close(got, expected, 0, 0));
  // Some entries are kept and some dropped, so the comparison says something.
  if (got.size() > 50) {
    EXPECT_GT(std::count(got.begin(), got.end(), T(0)), 0);
    EXPECT_LT(std::count(got.begin(), got.end(), T(0)), static_cast<std::int64_t>(got.size()));
  }
}

TYPED_TEST(Dropout, CsrEqualsDenseDropoutOfDensifiedMatrix) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const bool weighted : {false, true}) {
      check_csr_dropout<Idx, T>(res, 0, 0, weighted);
      check_csr_dropout<Idx, T>(res, 1, 1, weighted);
      check_csr_dropout<Idx, T>(res, 257, 129, weighted);
      check_csr_dropout<Idx, T>(res, 31, 300, weighted);
    }
  });
}

// dropout_compact stores exactly the entries dropout keeps, in order, with dropout's values: its
// densified form equals the densified dropout output, and no stored entry is a dropped one.
template <class Idx, class T>
void check_compact_dropout(const Resources& res, std::int64_t rows, std::int64_t cols, float p,
                           bool weighted, const std::vector<NodeId>& row_ids = {},
                           double degree = 6.0) {
  SCOPED_TRACE(::testing::Message() << rows << " x " << cols << ", p " << p << ", weighted "
                                    << weighted << ", row ids " << row_ids.size());
  const auto ids = Tensor<NodeId>::from_host(res, row_ids);
  const DropoutKey key{21, 2, 0, 7, ids.span()};
  const auto a = testing::random_csr<Idx, T>(rows, cols, degree, 5, weighted);
  const auto da = testing::to_device(res, a);
  auto values = Tensor<T>::zeros(res, a.num_edges());
  dropout(res, key, p, da.view(), values.span());
  CsrMatrix<Idx, T> full = a.clone(host());
  full.values = values.copy_to(host(), Device::Cpu);

  CsrMatrix<Idx, T> out;
  DropoutCompactScratch scan;
  // Twice: the second call reuses the first one's buffers (another mask of the same matrix).
  for (const std::uint64_t epoch : {std::uint64_t{3}, std::uint64_t{2}}) {
    DropoutKey k = key;
    k.epoch = epoch;
    dropout_compact(res, k, p, da.view(), out, scan);
  }
  const CsrMatrix<Idx, T> got = out.copy_to(host(), Device::Cpu);
  ASSERT_EQ(got.num_rows(), rows);
  EXPECT_EQ(got.num_cols, cols);
  EXPECT_EQ(ref::densify(got), ref::densify(full));
  const auto full_values = full.values.to_vector(host());
  const auto kept = static_cast<std::int64_t>(
      std::count_if(full_values.begin(), full_values.end(), [](T v) { return v != T(0); }));
  // random_csr stores no zero value, so the kept entries are dropout's nonzero values.
  EXPECT_EQ(got.num_edges(), kept);
  if (p == 0.f) {
    EXPECT_EQ(got.num_edges(), a.num_edges());
  }
  if (a.num_edges() > 50 && p > 0.f) {
    EXPECT_LT(got.num_edges(), a.num_edges());
    EXPECT_GT(got.num_edges(), 0);
  }
  // Within a row the kept columns keep their order.
  const auto indptr = got.indptr.to_vector(host());
  const auto indices = got.indices.to_vector(host());
  const auto a_indptr = a.indptr.to_vector(host());
  for (std::int64_t r = 0; r < rows; ++r) {
    EXPECT_LE(indptr[r + 1] - indptr[r], a_indptr[r + 1] - a_indptr[r]);
    for (std::int64_t e = indptr[r] + 1; e < indptr[r + 1]; ++e)
      EXPECT_LT(indices[e - 1], indices[e]);
  }
}

TYPED_TEST(Dropout, CompactStoresExactlyTheKeptEntries) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const bool weighted : {false, true}) {
      check_compact_dropout<Idx, T>(res, 0, 0, 0.5f, weighted);
      check_compact_dropout<Idx, T>(res, 1, 1, 0.5f, weighted);
      check_compact_dropout<Idx, T>(res, 257, 129, 0.35f, weighted);
      check_compact_dropout<Idx, T>(res, 2100, 300, 0.5f, weighted);  // several scan blocks
      check_compact_dropout<Idx, T>(res, 31, 300, 0.f, weighted);
      // Rows of dozens of entries: the CPU's 8- and 16-entry steps, the last one partial.
      check_compact_dropout<Idx, T>(res, 40, 300, 0.5f, weighted, {}, 45.0);
      std::vector<NodeId> ids(31);
      for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<NodeId>(1000 + 7 * i);
      check_compact_dropout<Idx, T>(res, 31, 300, 0.5f, weighted, ids);
    }
  });
}

TYPED_TEST(Dropout, RejectsBadArguments) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto x = Tensor<float>::zeros(res, 4, 3);
  auto y = Tensor<float>::zeros(res, 4, 3);
  auto wrong = Tensor<float>::zeros(res, 3, 4);
  EXPECT_THROW(dropout(res, DropoutKey{}, 1.f, x.view(), y.view()), LogicError);
  EXPECT_THROW(dropout(res, DropoutKey{}, -0.1f, x.view(), y.view()), LogicError);
  EXPECT_THROW(dropout(res, DropoutKey{}, 0.5f, x.view(), wrong.view()), LogicError);
  const auto a = testing::to_device(res, testing::random_csr<std::int32_t, float>(8, 8, 3.0, 1));
  auto values = Tensor<float>::zeros(res, a.num_edges() + 1);
  EXPECT_THROW(dropout(res, DropoutKey{}, 0.5f, a.view(), values.span()), LogicError);
  auto right = Tensor<float>::zeros(res, a.num_edges());
  EXPECT_THROW(dropout(res, DropoutKey{}, 1.5f, a.view(), right.span()), LogicError);
  CsrMatrix<std::int32_t, float> out;
  DropoutCompactScratch scan;
  EXPECT_THROW(dropout_compact(res, DropoutKey{}, 1.f, a.view(), out, scan), LogicError);
  const auto two = Tensor<NodeId>::from_host(res, std::vector<NodeId>{1, 2});
  EXPECT_THROW(dropout_compact(res, DropoutKey{0, 0, 0, 0, two.span()}, 0.5f, a.view(), out, scan),
               LogicError);
}

// relu_dropout is relu, then dropout, in one pass: the same values (exactly), and its backward
// from the output alone (relu_backward scaled by 1 / (1 - p)) equals dropout's then ReLU's.
TYPED_TEST(Dropout, ReluDropoutEqualsReluThenDropoutBothWays) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_value_type([&](auto value) {
    using T = decltype(value);
    for (const auto& [rows, cols] : {std::pair{0, 4}, std::pair{1, 1}, std::pair{257, 33}})
      for (const float p : {0.f, 0.3f, 0.9f})
        for (const bool use_ids : {false, true}) {
          SCOPED_TRACE(::testing::Message()
                       << rows << " x " << cols << ", p = " << p << (use_ids ? ", row ids" : ""));
          std::vector<NodeId> ids(static_cast<std::size_t>(rows));
          for (std::int64_t r = 0; r < rows; ++r) ids[r] = static_cast<NodeId>((r * 31 + 5) % 997);
          const auto id_tensor =
              testing::to_device(res, testing::host_tensor<NodeId>(ids, rows, 1));
          DropoutKey key{/*seed=*/17, /*epoch=*/3, /*layer=*/2, /*row_offset=*/100};
          if (use_ids) key.row_ids = id_tensor.span();
          const auto x = testing::to_device(res, testing::random_matrix<T>(rows, cols, 9));
          const auto dy = testing::to_device(res, testing::random_matrix<T>(rows, cols, 10));
          // Two passes: r = relu(x), d = dropout(r); backward dropout(dy), then ReLU's on r.
          auto r = testing::filled(res, rows, cols, T(0));
          auto d = testing::filled(res, rows, cols, T(0));
          relu(res, x.span(), r.span());
          dropout(res, key, p, r.view(), d.view());
          auto g = testing::filled(res, rows, cols, T(0));
          auto dx_two = testing::filled(res, rows, cols, T(0));
          dropout(res, key, p, dy.view(), g.view());
          relu_backward(res, r.span(), g.span(), dx_two.span());
          // One pass each way.
          auto y = testing::filled(res, rows, cols, std::numeric_limits<T>::quiet_NaN());
          relu_dropout(res, key, p, x.view(), y.view());
          auto dx_one = testing::filled(res, rows, cols, std::numeric_limits<T>::quiet_NaN());
          relu_backward(res, y.span(), dy.span(), dx_one.span(), T(1) / (T(1) - T(p)));
          EXPECT_EQ(testing::to_host(res, y).to_vector(host()),
                    testing::to_host(res, d).to_vector(host()));
          EXPECT_EQ(testing::to_host(res, dx_one).to_vector(host()),
                    testing::to_host(res, dx_two).to_vector(host()));
          if (res.device() == Device::Cpu) {  // the GPU's element body, by the CPU launcher
            EXPECT_EQ((dropout_elements_on_cpu<T, true>(res, key, p, x, rows)), d.to_vector(res));
          }
        }
  });
  const Resources cpu(Device::Cpu, 1);
  const auto a = testing::random_matrix<float>(3, 4, 1);
  auto b = testing::filled(cpu, 3, 5, 0.f);
  EXPECT_THROW(relu_dropout(cpu, DropoutKey{}, 0.5f, a.view(), b.view()), LogicError);
  auto c = testing::filled(cpu, 3, 4, 0.f);
  EXPECT_THROW(relu_dropout(cpu, DropoutKey{}, 1.f, a.view(), c.view()), LogicError);
}

}  // namespace
}  // namespace halo::kernels

namespace halo::kernels {
namespace {

// The launcher's grain: a launch whose stated work is below kSerialWork runs every index on the
// calling thread (no team woken); at or above it, or with its work unstated, the team shares
// the indices; inside a caller's parallel region every launch stays on that thread. Every index
// runs exactly once either way.
TEST(Launcher, WorkBelowTheGrainRunsOnTheCallingThread) {
  const kernels::CpuExec two{2};
  const auto run = [&](std::int64_t n, std::int64_t work) {
    std::vector<int> thread(static_cast<std::size_t>(n), -1);
    std::vector<int> seen(static_cast<std::size_t>(n), 0);
    kernels::for_each_index(
        two, n,
        [&](std::int64_t i) {
          thread[static_cast<std::size_t>(i)] = omp_get_thread_num();
          ++seen[static_cast<std::size_t>(i)];
        },
        work);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), n) << "every index once";
    return static_cast<int>(std::set<int>(thread.begin(), thread.end()).size());
  };
  const std::int64_t n = 4096;  // enough indices for both threads to take some
  EXPECT_EQ(run(n, kernels::kSerialWork - 1), 1);
  EXPECT_EQ(run(n, 0), 1);
  // The team: two threads each take a share (guided schedule, a slow iteration per index so
  // that neither thread finishes every chunk before the other starts).
  const auto team_threads = [&](std::int64_t work) {
    std::vector<int> thread(static_cast<std::size_t>(n), -1);
    kernels::for_each_index(
        two, n,
        [&](std::int64_t i) {
          volatile double x = 0;
          for (int k = 0; k < 10000; ++k) x = x + 1e-3;
          thread[static_cast<std::size_t>(i)] = omp_get_thread_num();
        },
        work);
    return static_cast<int>(std::set<int>(thread.begin(), thread.end()).size());
  };
  EXPECT_EQ(team_threads(kernels::kSerialWork), 2);
  EXPECT_EQ(team_threads(kernels::kUnstatedWork), 2);
  // One thread configured: the calling thread whatever the work.
  std::vector<int> caller;
  kernels::for_each_index(kernels::CpuExec{1}, 64, [&](std::int64_t) {
#pragma omp critical
    caller.push_back(omp_get_num_threads());
  });
  EXPECT_EQ(std::set<int>(caller.begin(), caller.end()), std::set<int>{1});
}

}  // namespace
}  // namespace halo::kernels
