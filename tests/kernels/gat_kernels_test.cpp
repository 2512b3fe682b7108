// GAT's ops (kernels/attention.hpp): head_dot, gat_edge_scores, edge_dropout, head_mean and ELU
// against plain loops, typed over the backends, with their backwards against central
// differences and the GPU decompositions run by the CPU launcher.
#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <tuple>
#include <vector>

#include <halo/kernels/attention.hpp>
#include <halo/kernels/attention_body.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/exec.hpp>

#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::kernels {
namespace {

using testing::host;

template <class Backend>
class GatKernels : public ::testing::Test {};
TYPED_TEST_SUITE(GatKernels, testing::Backends, testing::BackendNames);

std::vector<double> doubles(const Tensor<double>& t) { return t.to_vector(host()); }

/// Central differences of L = <f(), r> over every element of x, against `analytic`.
template <class F>
void expect_gradient(Tensor<double>& x, const std::vector<double>& analytic,
                     const std::vector<double>& r, F&& f, double eps = 1e-6) {
  ASSERT_EQ(static_cast<std::int64_t>(analytic.size()), x.numel());
  std::vector<double> numeric;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const double saved = x.data()[i];
    x.data()[i] = saved + eps;
    const double up = ref::dot(f(), r);
    x.data()[i] = saved - eps;
    const double down = ref::dot(f(), r);
    x.data()[i] = saved;
    numeric.push_back((up - down) / (2 * eps));
  }
  EXPECT_TRUE(testing::all_close(analytic, numeric, 1e-6, 1e-8));
}

/// out(r, h) = <x(r, head h), a(h)>.
template <class T>
std::vector<double> head_dot_ref(const Tensor<T>& x, const Tensor<T>& a) {
  std::vector<double> out;
  for (std::int64_t r = 0; r < x.rows(); ++r)
    for (std::int64_t h = 0; h < a.rows(); ++h) {
      double s = 0;
      for (std::int64_t c = 0; c < a.cols(); ++c) s += double(x(r, h * a.cols() + c)) * a(h, c);
      out.push_back(s);
    }
  return out;
}

/// LeakyReLU(s_dst(r, h) + s_src(col, h)) for every edge and head.
template <class Idx, class T>
std::vector<double> scores_ref(const CsrMatrix<Idx, T>& g, const Tensor<T>& s_dst,
                               const Tensor<T>& s_src, double slope) {
  std::vector<double> out;
  for (std::int64_t r = 0; r < g.num_rows(); ++r)
    for (std::int64_t e = g.indptr(r); e < g.indptr(r + 1); ++e)
      for (std::int64_t h = 0; h < s_dst.cols(); ++h) {
        const double v = double(s_dst(r, h)) + double(s_src(g.indices(e), h));
        out.push_back(v > 0 ? v : slope * v);
      }
  return out;
}

// (rows, cols, heads, head width, average degree): empty, one edge, several heads, sparse rows.
constexpr std::tuple<int, int, int, int, double> kShapes[] = {
    {0, 4, 2, 3, 2.0}, {1, 1, 1, 1, 1.0}, {257, 300, 4, 5, 3.0}, {50, 61, 1, 7, 0.6}};

TYPED_TEST(GatKernels, ForwardOpsMatchPlainLoops) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const auto& [rows, cols, heads, d, degree] : kShapes) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols << ", " << heads << " x " << d);
      const T nan = std::numeric_limits<T>::quiet_NaN();
      const auto x = testing::random_matrix<T>(cols, heads * d, 1);
      const auto a = testing::random_matrix<T>(heads, d, 2);
      auto s = testing::filled(res, cols, heads, nan);
      head_dot<T>(res, testing::to_device(res, x).view(), testing::to_device(res, a).view(),
                  s.view());
      EXPECT_TRUE(testing::all_close(s.to_vector(res), head_dot_ref(x, a), testing::rtol<T>(),
                                     testing::atol<T>()));
      const auto g = testing::random_csr<Idx, T>(rows, cols, degree, 3);
      const auto s_dst = testing::random_matrix<T>(rows, heads, 4);
      const auto s_src = testing::random_matrix<T>(cols, heads, 5);
      auto score = testing::filled(res, g.num_edges(), heads, nan);
      auto alpha = testing::filled(res, g.num_edges(), heads, nan);
      gat_edge_scores<Idx, T>(
          res, testing::to_device(res, g).view(), testing::to_device(res, s_dst).view(),
          testing::to_device(res, s_src).view(), T(0.2), score.view(), alpha.view());
      const auto expected = scores_ref(g, s_dst, s_src, 0.2);
      EXPECT_TRUE(testing::all_close(score.to_vector(res), expected, testing::rtol<T>(),
                                     testing::atol<T>()));
      EXPECT_EQ(score.to_vector(res), alpha.to_vector(res));
      auto mean = testing::filled(res, cols, d, nan);
      head_mean<T>(res, testing::to_device(res, x).view(), mean.view());
      std::vector<double> mean_ref;
      for (std::int64_t r = 0; r < cols; ++r)
        for (std::int64_t c = 0; c < d; ++c) {
          double v = 0;
          for (std::int64_t h = 0; h < heads; ++h) v += double(x(r, h * d + c));
          mean_ref.push_back(v / heads);
        }
      EXPECT_TRUE(testing::all_close(mean.to_vector(res), mean_ref, testing::rtol<T>(),
                                     testing::atol<T>()));
    }
  });
}

TYPED_TEST(GatKernels, BackwardsMatchFiniteDifferences) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const int rows = 23, cols = 31, heads = 3, d = 4;
  auto x = testing::random_matrix<double>(cols, heads * d, 10);
  auto a = testing::random_matrix<double>(heads, d, 11);
  // head_dot: dx accumulates onto what it held, da is overwritten.
  {
    const auto dout = testing::random_matrix<double>(cols, heads, 12);
    const auto r = doubles(dout);
    const auto base = testing::random_matrix<double>(cols, heads * d, 13);
    auto dx = testing::to_device(res, base);
    auto da = testing::filled(res, heads, d, std::numeric_limits<double>::quiet_NaN());
    head_dot_backward<double>(res, testing::to_device(res, x).view(),
                              testing::to_device(res, a).view(),
                              testing::to_device(res, dout).view(), dx.view(), da.view(), true);
    const auto f = [&] {
      Tensor<double> o(host(), cols, heads);
      head_dot<double>(host(), x.view(), a.view(), o.view());
      return doubles(o);
    };
    std::vector<double> dx_only = dx.to_vector(res);
    for (std::size_t i = 0; i < dx_only.size(); ++i) dx_only[i] -= base.data()[i];
    expect_gradient(x, dx_only, r, f);
    expect_gradient(a, da.to_vector(res), r, f);
  }
  // gat_edge_scores: d(s_dst), d(s_src) through LeakyReLU.
  {
    const auto g = testing::random_csr<std::int64_t, double>(rows, cols, 3.0, 14);
    auto s_dst = testing::random_matrix<double>(rows, heads, 15);
    auto s_src = testing::random_matrix<double>(cols, heads, 16);
    const auto dscore = testing::random_matrix<double>(g.num_edges(), heads, 17);
    const auto r = doubles(dscore);
    const auto dg = testing::to_device(res, g);
    Tensor<double> score(res, g.num_edges(), heads), alpha(res, g.num_edges(), heads);
    gat_edge_scores<std::int64_t, double>(res, dg.view(), testing::to_device(res, s_dst).view(),
                                          testing::to_device(res, s_src).view(), 0.2, score.view(),
                                          alpha.view());
    auto d = testing::to_device(res, dscore);
    Tensor<double> ds_dst(res, rows, heads), ds_src(res, cols, heads);
    gat_edge_scores_backward<std::int64_t, double>(res, dg.view(), score.view(), 0.2, d.view(),
                                                   ds_dst.view(), ds_src.view());
    const auto f = [&] {
      Tensor<double> o(host(), g.num_edges(), heads), o2(host(), g.num_edges(), heads);
      gat_edge_scores<std::int64_t, double>(host(), g.view(), s_dst.view(), s_src.view(), 0.2,
                                            o.view(), o2.view());
      return doubles(o);
    };
    expect_gradient(s_dst, ds_dst.to_vector(res), r, f);
    expect_gradient(s_src, ds_src.to_vector(res), r, f);
  }
  // head_mean.
  {
    const auto dy = testing::random_matrix<double>(cols, d, 18);
    Tensor<double> dx(res, cols, heads * d);
    head_mean_backward<double>(res, testing::to_device(res, dy).view(), dx.view());
    const auto f = [&] {
      Tensor<double> o(host(), cols, d);
      head_mean<double>(host(), x.view(), o.view());
      return doubles(o);
    };
    expect_gradient(x, dx.to_vector(res), doubles(dy), f);
  }
}

// The mask is a pure function of (key, the edge's two node ids, head): the same on every
// device, and the same for an edge whatever its row and position (a block keyed by node ids).
TYPED_TEST(GatKernels, EdgeDropoutIsKeyedByTheEdgesNodeIds) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  const auto g = testing::random_csr<std::int64_t, double>(40, 40, 4.0, 30);
  const std::int64_t heads = 3;
  const auto x = testing::random_matrix<double>(g.num_edges(), heads, 31);
  const DropoutKey key{7, 2, 5, 0, {}};
  Tensor<double> y(res, g.num_edges(), heads);
  edge_dropout<std::int64_t, double>(res, key, 0.5f, testing::to_device(res, g).view(),
                                     testing::to_device(res, x).view(), y.view());
  const auto got = y.to_vector(res);
  // Host reference from the definition.
  const std::uint64_t k = detail::dropout_rng_key(key), thr = detail::dropout_threshold(0.5f);
  std::int64_t kept = 0;
  for (std::int64_t r = 0; r < g.num_rows(); ++r)
    for (std::int64_t e = g.indptr(r); e < g.indptr(r + 1); ++e)
      for (std::int64_t h = 0; h < heads; ++h) {
        const bool keep = detail::edge_dropout_keep(k, thr, r, g.indices(e), h, heads);
        kept += keep;
        EXPECT_EQ(got[static_cast<std::size_t>(e * heads + h)], keep ? 2 * x(e, h) : 0.0);
      }
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, g.num_edges() * heads);
  // Row 5's edges as the only row of a block whose columns are node ids [5, its neighbours]:
  // the same mask.
  std::vector<std::int64_t> indptr = {0};
  std::vector<std::int64_t> indices;
  std::vector<NodeId> ids = {5};
  for (std::int64_t e = g.indptr(5); e < g.indptr(6); ++e) {
    indices.push_back(static_cast<std::int64_t>(ids.size()));
    ids.push_back(static_cast<NodeId>(g.indices(e)));
  }
  indptr.push_back(static_cast<std::int64_t>(indices.size()));
  const CsrMatrix<std::int64_t, double> block{Tensor<std::int64_t>::from_host(host(), indptr),
                                              Tensor<std::int64_t>::from_host(host(), indices),
                                              Tensor<double>(),
                                              static_cast<std::int64_t>(ids.size())};
  const auto id_tensor = Tensor<NodeId>::from_host(res, ids);
  const std::int64_t n = g.indptr(6) - g.indptr(5);
  const std::vector<double> xs(x.data() + g.indptr(5) * heads, x.data() + g.indptr(6) * heads);
  Tensor<double> yb(res, n, heads);
  DropoutKey block_key = key;
  block_key.row_ids = id_tensor.span();
  edge_dropout<std::int64_t, double>(
      res, block_key, 0.5f, testing::to_device(res, block).view(),
      testing::to_device(res, testing::host_tensor(xs, n, heads)).view(), yb.view());
  EXPECT_EQ(yb.to_vector(res), std::vector<double>(got.begin() + g.indptr(5) * heads,
                                                   got.begin() + g.indptr(6) * heads));
}

// The GPU's decompositions (one index per row and head; atomics for the sources' sums) run by
// the CPU launcher: the same as the CPU's.
TEST(GatKernels, GpuBodiesMatchTheCpusOnTheCpu) {
  const Resources res(Device::Cpu, 3);
  const auto g = testing::random_csr<std::int32_t, double>(57, 41, 3.0, 40);
  const std::int64_t heads = 4;
  const auto s_dst = testing::random_matrix<double>(57, heads, 41);
  const auto s_src = testing::random_matrix<double>(41, heads, 42);
  Tensor<double> score(res, g.num_edges(), heads), alpha(res, g.num_edges(), heads);
  gat_edge_scores<std::int32_t, double>(res, g.view(), s_dst.view(), s_src.view(), 0.2,
                                        score.view(), alpha.view());
  Tensor<double> score_gpu(res, g.num_edges(), heads), alpha_gpu(res, g.num_edges(), heads);
  for_each_index(
      res.cpu_exec(), 57 * heads,
      detail::EdgeScoreBody<std::int32_t, double>{g.view(), s_dst.view(), s_src.view(), 0.2,
                                                  score_gpu.view(), alpha_gpu.view(), true});
  EXPECT_EQ(score_gpu.to_vector(res), score.to_vector(res));
  const auto dscore = testing::random_matrix<double>(g.num_edges(), heads, 43);
  auto d_cpu = dscore.clone(res), d_gpu = dscore.clone(res);
  Tensor<double> ds_dst(res, 57, heads), ds_src(res, 41, heads);
  gat_edge_scores_backward<std::int32_t, double>(res, g.view(), score.view(), 0.2, d_cpu.view(),
                                                 ds_dst.view(), ds_src.view());
  Tensor<double> ds_dst_gpu(res, 57, heads);
  auto ds_src_gpu = Tensor<double>::zeros(res, 41, heads);
  for_each_index(res.cpu_exec(), 57 * heads,
                 detail::EdgeScoreBackwardBody<std::int32_t, double>{
                     g.view(), score.view(), 0.2, d_gpu.view(), ds_dst_gpu.view(), true});
  for_each_index(res.cpu_exec(), 57 * heads,
                 detail::EdgeSourceSumAtomicBody<std::int32_t, double>{g.view(), d_gpu.view(),
                                                                       ds_src_gpu.view()});
  EXPECT_EQ(d_gpu.to_vector(res), d_cpu.to_vector(res));
  EXPECT_TRUE(testing::all_close(ds_dst_gpu.to_vector(res), ds_dst.to_vector(res), 1e-12, 1e-14));
  EXPECT_TRUE(testing::all_close(ds_src_gpu.to_vector(res), ds_src.to_vector(res), 1e-12, 1e-14));
  // head_dot's input gradient, one element per index.
  const auto z = testing::random_matrix<double>(41, heads * 3, 44);
  const auto a = testing::random_matrix<double>(heads, 3, 45);
  auto dz_cpu = z.clone(res), dz_gpu = z.clone(res);
  Tensor<double> da(res, heads, 3);
  head_dot_backward<double>(res, z.view(), a.view(), ds_src.view(), dz_cpu.view(), da.view(), true);
  for_each_index(
      res.cpu_exec(), dz_gpu.numel(),
      detail::HeadDotInputGradBody<double>{ds_src.view(), a.view(), dz_gpu.view(), true});
  EXPECT_TRUE(testing::all_close(dz_gpu.to_vector(res), dz_cpu.to_vector(res), 1e-14, 1e-14));
}

TYPED_TEST(GatKernels, EluMatchesFormulaAndGradient) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  auto x = testing::random_matrix<double>(200, 1, 50);
  for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] *= 5;
  auto y = testing::filled(res, 200, 1, std::numeric_limits<double>::quiet_NaN());
  elu<double>(res, testing::to_device(res, x).span(), y.span());
  std::vector<double> expected;
  for (std::int64_t i = 0; i < x.numel(); ++i)
    expected.push_back(x(i) > 0 ? x(i) : std::expm1(x(i)));
  EXPECT_TRUE(testing::all_close(y.to_vector(res), expected, 1e-12, 1e-14));
  const auto r = doubles(testing::random_matrix<double>(200, 1, 51));
  auto dx = testing::to_device(res, testing::host_tensor(r, 200, 1));
  elu_backward<double>(res, testing::to_device(res, x).span(), dx.span(), dx.span());  // in place
  const auto f = [&] {
    Tensor<double> o(host(), 200, 1);
    elu<double>(host(), x.span(), o.span());
    return doubles(o);
  };
  expect_gradient(x, dx.to_vector(res), r, f);
}

TEST(GatKernels, RejectsBadShapes) {
  const Resources res(Device::Cpu, 1);
  const auto x = testing::random_matrix<double>(5, 6, 1);
  const auto a = testing::random_matrix<double>(2, 4, 2);  // 2 x 4 heads do not fit 6 columns
  Tensor<double> out(res, 5, 2);
  EXPECT_THROW(head_dot<double>(res, x.view(), a.view(), out.view()), LogicError);
  Tensor<double> mean(res, 5, 4);
  EXPECT_THROW(head_mean<double>(res, x.view(), mean.view()), LogicError);
  const auto g = testing::random_csr<std::int64_t, double>(5, 5, 2.0, 3);
  const auto e = testing::random_matrix<double>(g.num_edges(), 2, 4);
  Tensor<double> y(res, g.num_edges(), 2);
  const auto drop = [&] {
    edge_dropout<std::int64_t, double>(res, DropoutKey{}, 1.0f, g.view(), e.view(), y.view());
  };
  EXPECT_THROW(drop(), LogicError);
}

}  // namespace
}  // namespace halo::kernels
