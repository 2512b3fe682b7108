// The multi-head attention ops: SDDMM, weighted aggregation and its adjoint, segment softmax
// over one and several relations, block-diagonal head weights and the sigmoid gate, against
// the references in ref/attention_ref.hpp; every backward against central differences.
#include <cmath>
#include <cstdint>
#include <gtest/gtest.h>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include <halo/kernels/attention.hpp>
#include <halo/kernels/attention_body.hpp>
#include <halo/kernels/elementwise.hpp>
#include <halo/kernels/exec.hpp>

#include "ref/attention_ref.hpp"
#include "ref/ref.hpp"
#include "support/testing.hpp"

namespace halo::kernels {
namespace {

using testing::host;

template <class Backend>
class Attention : public ::testing::Test {};
TYPED_TEST_SUITE(Attention, testing::Backends, testing::BackendNames);

// (rows, cols, heads, head width, average degree): empty graphs, one edge, zero-width heads,
// the usual 257 with several heads, a wide single head, and sparse rows of one or no edge.
constexpr std::tuple<int, int, int, int, double> kShapes[] = {
    {0, 0, 1, 3, 2.0},    {0, 5, 2, 2, 2.0},     {1, 1, 1, 1, 1.0},  {4, 3, 3, 0, 2.0},
    {257, 61, 4, 5, 3.0}, {31, 300, 1, 17, 7.0}, {50, 40, 2, 3, 0.6}};

/// Central differences of L = <f(), r> with respect to every element of x (which f reads),
/// compared with `analytic` = dL/dx.
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

std::vector<double> doubles(const Tensor<double>& t) { return t.to_vector(host()); }

TYPED_TEST(Attention, SddmmMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const auto& [rows, cols, heads, d, degree] : kShapes) {
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols << ", " << heads << " x " << d);
      const auto g = testing::random_csr<Idx, T>(rows, cols, degree, 3);
      const auto a = testing::random_matrix<T>(rows, heads * d, 4);
      const auto b = testing::random_matrix<T>(cols, heads * d, 5);
      auto out = testing::filled(res, g.num_edges(), heads, std::numeric_limits<T>::quiet_NaN());
      const auto dg = testing::to_device(res, g);
      sddmm(res, dg.view(), testing::to_device(res, a).view(), testing::to_device(res, b).view(),
            out.view());
      EXPECT_TRUE(testing::all_close(out.to_vector(res), ref::sddmm(g, a, b, heads),
                                     testing::rtol<T>(), testing::atol<T>()));
    }
  });
}

TYPED_TEST(Attention, WeightedAggregateAndAdjointMatchReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const auto& [rows, cols, heads, d, degree] : kShapes) {
      for (const bool accumulate : {false, true}) {
        SCOPED_TRACE(::testing::Message() << rows << " x " << cols << ", " << heads << " x " << d
                                          << (accumulate ? ", accumulating" : ""));
        const auto g = testing::random_csr<Idx, T>(rows, cols, degree, 6);
        const auto dg = testing::to_device(res, g);
        const auto w = testing::random_matrix<T>(g.num_edges(), heads, 7);
        const auto x = testing::random_matrix<T>(cols, heads * d, 8);
        const auto y = testing::random_matrix<T>(rows, heads * d, 9);
        const auto prior_out = testing::random_matrix<T>(rows, heads * d, 10);
        const auto prior_adj = testing::random_matrix<T>(cols, heads * d, 11);
        auto out = testing::to_device(res, prior_out);
        auto adj = testing::to_device(res, prior_adj);
        weighted_aggregate(res, dg.view(), testing::to_device(res, w).view(),
                           testing::to_device(res, x).view(), out.view(), accumulate);
        weighted_aggregate_transposed(res, dg.view(), testing::to_device(res, w).view(),
                                      testing::to_device(res, y).view(), adj.view(), accumulate);
        auto expected = ref::weighted_aggregate(g, w, x);
        auto expected_adj = ref::weighted_aggregate_transposed(g, w, y);
        if (accumulate) {
          const auto p = prior_out.to_vector(host());
          const auto q = prior_adj.to_vector(host());
          for (std::size_t i = 0; i < expected.size(); ++i) expected[i] += p[i];
          for (std::size_t i = 0; i < expected_adj.size(); ++i) expected_adj[i] += q[i];
        }
        EXPECT_TRUE(testing::all_close(out.to_vector(res), expected, testing::rtol<T>(),
                                       testing::atol<T>()));
        EXPECT_TRUE(testing::all_close(adj.to_vector(res), expected_adj, testing::rtol<T>(),
                                       testing::atol<T>()));
      }
    }
  });
}

// The GPU decompositions (SDDMM per (row, head); aggregation per element, atomics in the
// adjoint), run by the CPU launcher with 3 threads, against the references.
TEST(Attention, GpuBodiesMatchReferenceOnTheCpu) {
  const Resources res(Device::Cpu, 3);
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    const auto g = testing::random_csr<Idx, T>(97, 61, 4.0, 21);
    const auto w = testing::random_matrix<T>(g.num_edges(), 3, 22);
    const auto x = testing::random_matrix<T>(61, 12, 23);
    const auto y = testing::random_matrix<T>(97, 12, 24);
    Tensor<T> scores(res, g.num_edges(), 3);
    for_each_index(res.cpu_exec(), 97 * 3,
                   detail::SddmmBody<Idx, T>{g.view(), y.view(), x.view(), scores.view(), 3});
    EXPECT_TRUE(testing::all_close(scores.to_vector(res), ref::sddmm(g, y, x, 3),
                                   testing::rtol<T>(), testing::atol<T>()));
    Tensor<T> out(res, 97, 12);
    const detail::WeightedAggregateRowBody<Idx, T> p{g.view(), w.view(), x.view(), out.view(),
                                                     false};
    for_each_index(res.cpu_exec(), out.numel(), detail::WeightedAggregateElementsBody<Idx, T>{p});
    EXPECT_TRUE(testing::all_close(out.to_vector(res), ref::weighted_aggregate(g, w, x),
                                   testing::rtol<T>(), testing::atol<T>()));
    auto adj = Tensor<T>::zeros(res, 61, 12);
    for_each_index(res.cpu_exec(), y.numel(),
                   detail::WeightedAggregateTransposedAtomicBody<Idx, T>{g.view(), w.view(),
                                                                         y.view(), adj.view()});
    EXPECT_TRUE(testing::all_close(adj.to_vector(res), ref::weighted_aggregate_transposed(g, w, y),
                                   testing::rtol<T>(), testing::atol<T>()));
  });
}

// The GPU's decomposition of the segment softmax (one index per row and head), forward and
// backward, run by the CPU launcher over two relations: the forward against the reference, the
// backward against the CPU's decomposition (checked by finite differences below).
TEST(Attention, GpuSoftmaxBodiesMatchOnTheCpu) {
  const Resources res(Device::Cpu, 3);
  using Csr = CsrMatrix<NodeId, double>;
  const std::int64_t rows = 37, heads = 3, n = rows * heads;
  const Csr a = testing::random_csr<NodeId, double>(rows, 20, 2.0, 25);
  const Csr b = testing::random_csr<NodeId, double>(rows, 30, 0.7, 26);
  const Tensor<double> sa = testing::random_matrix<double>(a.num_edges(), heads, 27);
  const Tensor<double> sb = testing::random_matrix<double>(b.num_edges(), heads, 28);
  Tensor<double> alpha_a = sa.clone(res), alpha_b = sb.clone(res);
  Tensor<double> row_max(res, rows, heads), row_sum = Tensor<double>::zeros(res, rows, heads);
  fill(res, row_max.span(), -std::numeric_limits<double>::infinity());
  const std::pair<const Csr*, Tensor<double>*> parts[] = {{&a, &alpha_a}, {&b, &alpha_b}};
  for (const auto& [g, v] : parts)
    for_each_index(
        res.cpu_exec(), n,
        detail::SegmentSoftmaxMaxBody<NodeId, double>{g->view(), v->view(), row_max.view(), true});
  for (const auto& [g, v] : parts)
    for_each_index(res.cpu_exec(), n,
                   detail::SegmentSoftmaxExpBody<NodeId, double>{
                       g->view(), v->view(), row_max.view(), row_sum.view(), v->view(), true});
  for (const auto& [g, v] : parts)
    for_each_index(res.cpu_exec(), n,
                   detail::SegmentSoftmaxScaleBody<NodeId, double>{g->view(), row_sum.view(),
                                                                   v->view(), true});
  const auto expected = ref::segment_softmax<NodeId, double>({&a, &b}, {&sa, &sb}, rows, heads);
  EXPECT_TRUE(testing::all_close(alpha_a.to_vector(res), expected[0], 1e-12, 1e-14));
  EXPECT_TRUE(testing::all_close(alpha_b.to_vector(res), expected[1], 1e-12, 1e-14));

  const Tensor<double> da = testing::random_matrix<double>(a.num_edges(), heads, 29);
  const Tensor<double> db = testing::random_matrix<double>(b.num_edges(), heads, 30);
  Tensor<double> ga = da.clone(res), gb = db.clone(res), row_dot(res, rows, heads);
  const SoftmaxSegments<NodeId, double> alpha[] = {{a.view(), alpha_a.view()},
                                                   {b.view(), alpha_b.view()}};
  const SoftmaxSegments<NodeId, double> grads[] = {{a.view(), ga.view()}, {b.view(), gb.view()}};
  segment_softmax_backward<NodeId, double>(res, alpha, grads, row_dot.view());
  Tensor<double> pa = da.clone(res), pb = db.clone(res);
  auto dot = Tensor<double>::zeros(res, rows, heads);
  const std::pair<const SoftmaxSegments<NodeId, double>*, Tensor<double>*> backward[] = {
      {&alpha[0], &pa}, {&alpha[1], &pb}};
  for (const auto& [al, g] : backward)
    for_each_index(res.cpu_exec(), n,
                   detail::SegmentSoftmaxDotBody<NodeId, double>{al->graph, al->values, g->view(),
                                                                 dot.view(), true});
  for (const auto& [al, g] : backward)
    for_each_index(res.cpu_exec(), n,
                   detail::SegmentSoftmaxBackwardBody<NodeId, double>{
                       al->graph, al->values, g->view(), dot.view(), g->view(), true});
  EXPECT_TRUE(testing::all_close(pa.to_vector(res), ga.to_vector(res), 1e-12, 1e-14));
  EXPECT_TRUE(testing::all_close(pb.to_vector(res), gb.to_vector(res), 1e-12, 1e-14));
}

/// Runs segment_softmax on res over `graphs` with the given scores, returning each part's alpha.
template <class Idx, class T>
std::vector<std::vector<T>> run_softmax(const Resources& res,
                                        const std::vector<const CsrMatrix<Idx, T>*>& graphs,
                                        const std::vector<const Tensor<T>*>& scores,
                                        std::int64_t rows, std::int64_t heads,
                                        std::vector<T>* row_max = nullptr) {
  std::vector<CsrMatrix<Idx, T>> dg;
  std::vector<Tensor<T>> values;
  std::vector<SoftmaxSegments<Idx, T>> parts;
  for (std::size_t k = 0; k < graphs.size(); ++k) {
    dg.push_back(testing::to_device(res, *graphs[k]));
    values.push_back(testing::to_device(res, *scores[k]));
  }
  for (std::size_t k = 0; k < graphs.size(); ++k) parts.push_back({dg[k].view(), values[k].view()});
  Tensor<T> m(res, rows, heads), s(res, rows, heads);
  segment_softmax<Idx, T>(res, parts, m.view(), s.view());
  if (row_max != nullptr) *row_max = m.to_vector(res);
  std::vector<std::vector<T>> out;
  for (const auto& v : values) out.push_back(v.to_vector(res));
  return out;
}

TYPED_TEST(Attention, SegmentSoftmaxOverOneRelationMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const auto& [rows, cols, heads, d, degree] : kShapes) {
      (void)d;
      SCOPED_TRACE(::testing::Message() << rows << " x " << cols << ", " << heads << " heads");
      const auto g = testing::random_csr<Idx, T>(rows, cols, degree, 12);
      const auto s = testing::random_matrix<T>(g.num_edges(), heads, 13);
      std::vector<T> row_max;
      const auto got = run_softmax<Idx, T>(res, {&g}, {&s}, rows, heads, &row_max);
      EXPECT_TRUE(testing::all_close(got[0],
                                     ref::segment_softmax<Idx, T>({&g}, {&s}, rows, heads)[0],
                                     testing::rtol<T>(), testing::atol<T>()));
      for (std::int64_t r = 0; r < rows; ++r) {  // the statistics of rows without edges
        if (g.indptr(r) != g.indptr(r + 1)) continue;
        for (std::int64_t h = 0; h < heads; ++h) {
          EXPECT_EQ(row_max[r * heads + h], -std::numeric_limits<T>::infinity());
        }
      }
    }
  });
}

// Three relations into the same 40 destinations: one with rows of one edge, one whose rows
// are all empty, one with large scores (exp would overflow without the shift); row 1 is empty
// in every relation (an isolated destination). Each edge's weight is normalised over all three.
TYPED_TEST(Attention, SegmentSoftmaxOverSeveralRelationsMatchesReference) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  testing::for_each_index_and_value_type([&](auto idx, auto value) {
    using Idx = decltype(idx);
    using T = decltype(value);
    for (const std::int64_t heads : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << heads << " heads");
      const std::int64_t rows = 40;
      const auto a = testing::random_csr<Idx, T>(rows, 17, 0.6, 14);
      const auto b = testing::random_csr<Idx, T>(rows, 0, 2.0, 15);  // no columns: no edges
      const auto c = testing::random_csr<Idx, T>(rows, 60, 4.0, 16);
      const auto sa = testing::random_matrix<T>(a.num_edges(), heads, 17);
      const auto sb = testing::random_matrix<T>(b.num_edges(), heads, 18);
      auto sc = testing::random_matrix<T>(c.num_edges(), heads, 19);
      for (std::int64_t i = 0; i < sc.numel(); ++i) sc.data()[i] = sc.data()[i] * T(80) + T(20);
      const auto got = run_softmax<Idx, T>(res, {&a, &b, &c}, {&sa, &sb, &sc}, rows, heads);
      const auto expected =
          ref::segment_softmax<Idx, T>({&a, &b, &c}, {&sa, &sb, &sc}, rows, heads);
      for (std::size_t k = 0; k < 3; ++k)
        EXPECT_TRUE(testing::all_close(got[k], expected[k], testing::rtol<T>(), testing::atol<T>()))
            << "relation " << k;
      // The weights of every non-empty row sum to 1 over the three relations.
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t h = 0; h < heads; ++h) {
          double total = 0;
          std::int64_t edges = 0;
          const CsrMatrix<Idx, T>* graphs[] = {&a, &b, &c};
          for (std::size_t k = 0; k < 3; ++k)
            for (std::int64_t e = graphs[k]->indptr(r); e < graphs[k]->indptr(r + 1); ++e, ++edges)
              total += double(got[k][e * heads + h]);
          if (edges > 0) {
            EXPECT_NEAR(total, 1.0, 1e-5) << "row " << r;
          }
        }
      }
    }
  });
}

TEST(Attention, SddmmBackwardMatchesFiniteDifferences) {
  const Resources& res = host();
  const auto g = testing::random_csr<NodeId, double>(23, 19, 3.0, 30);
  for (const std::int64_t heads : {1, 3}) {
    SCOPED_TRACE(::testing::Message() << heads << " heads");
    auto a = testing::random_matrix<double>(23, heads * 2, 31);
    auto b = testing::random_matrix<double>(19, heads * 2, 32);
    const auto r = doubles(testing::random_matrix<double>(g.num_edges(), heads, 33));
    const auto dout = testing::host_tensor(r, g.num_edges(), heads);
    Tensor<double> da(res, 23, heads * 2), db(res, 19, heads * 2);
    sddmm_backward(res, g.view(), a.view(), b.view(), dout.view(), da.view(), db.view());
    const auto f = [&] {
      Tensor<double> out(res, g.num_edges(), heads);
      sddmm(res, g.view(), a.view(), b.view(), out.view());
      return doubles(out);
    };
    expect_gradient(a, doubles(da), r, f);
    expect_gradient(b, doubles(db), r, f);
  }
}

TEST(Attention, WeightedAggregateBackwardMatchesFiniteDifferences) {
  const Resources& res = host();
  const auto g = testing::random_csr<NodeId, double>(21, 26, 3.0, 40);
  for (const std::int64_t heads : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << heads << " heads");
    auto w = testing::random_matrix<double>(g.num_edges(), heads, 41);
    auto x = testing::random_matrix<double>(26, heads * 3, 42);
    const auto r = doubles(testing::random_matrix<double>(21, heads * 3, 43));
    const auto dout = testing::host_tensor(r, 21, heads * 3);
    Tensor<double> dw(res, g.num_edges(), heads), dx(res, 26, heads * 3);
    weighted_aggregate_backward(res, g.view(), w.view(), x.view(), dout.view(), dw.view(),
                                dx.view());
    const auto f = [&] {
      Tensor<double> out(res, 21, heads * 3);
      weighted_aggregate(res, g.view(), w.view(), x.view(), out.view());
      return doubles(out);
    };
    expect_gradient(w, doubles(dw), r, f);
    expect_gradient(x, doubles(dx), r, f);
  }
}

// The backward of a softmax over two relations (one with an isolated destination row, one with
// rows of a single edge) with respect to the scores of both.
TEST(Attention, SegmentSoftmaxBackwardMatchesFiniteDifferences) {
  const Resources& res = host();
  using Csr = CsrMatrix<NodeId, double>;
  const Csr a = testing::random_csr<NodeId, double>(15, 9, 2.0, 50);
  const Csr b = testing::random_csr<NodeId, double>(15, 11, 0.6, 51);
  for (const std::int64_t heads : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << heads << " heads");
    Tensor<double> sa = testing::random_matrix<double>(a.num_edges(), heads, 52);
    Tensor<double> sb = testing::random_matrix<double>(b.num_edges(), heads, 53);
    const auto ra = doubles(testing::random_matrix<double>(a.num_edges(), heads, 54));
    const auto rb = doubles(testing::random_matrix<double>(b.num_edges(), heads, 55));
    std::vector<double> r = ra;
    r.insert(r.end(), rb.begin(), rb.end());
    Tensor<double> row_max(res, 15, heads), row_sum(res, 15, heads), row_dot(res, 15, heads);
    const auto forward = [&](Tensor<double>& alpha_a, Tensor<double>& alpha_b) {
      alpha_a = sa.clone(res);
      alpha_b = sb.clone(res);
      const SoftmaxSegments<NodeId, double> parts[] = {{a.view(), alpha_a.view()},
                                                       {b.view(), alpha_b.view()}};
      segment_softmax<NodeId, double>(res, parts, row_max.view(), row_sum.view());
    };
    const auto f = [&] {
      Tensor<double> alpha_a, alpha_b;
      forward(alpha_a, alpha_b);
      std::vector<double> out = doubles(alpha_a);
      const auto ob = doubles(alpha_b);
      out.insert(out.end(), ob.begin(), ob.end());
      return out;
    };
    Tensor<double> alpha_a, alpha_b;
    forward(alpha_a, alpha_b);
    Tensor<double> ga = testing::host_tensor(ra, a.num_edges(), heads);
    Tensor<double> gb = testing::host_tensor(rb, b.num_edges(), heads);
    const SoftmaxSegments<NodeId, double> alpha[] = {{a.view(), alpha_a.view()},
                                                     {b.view(), alpha_b.view()}};
    const SoftmaxSegments<NodeId, double> grads[] = {{a.view(), ga.view()}, {b.view(), gb.view()}};
    segment_softmax_backward<NodeId, double>(res, alpha, grads, row_dot.view());
    expect_gradient(sa, doubles(ga), r, f);
    expect_gradient(sb, doubles(gb), r, f);
  }
}

TYPED_TEST(Attention, BlockDiagonalMatchesReferenceAndGradients) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  for (const bool scaled : {false, true}) {
    SCOPED_TRACE(scaled ? "scaled" : "unscaled");
    const std::int64_t heads = 3, d = 2, n = heads * d;
    auto w = testing::random_matrix<double>(heads, d * d, 60);
    auto scale = testing::random_matrix<double>(heads, 1, 61);
    const double factor = 0.75;
    const auto scale_view = [&](const Tensor<double>& s) {
      return scaled ? Span<const double>(s.span()) : Span<const double>{};
    };
    const auto dw_ = testing::to_device(res, w);
    const auto ds_ = testing::to_device(res, scale);
    auto out = testing::filled(res, n, n, std::numeric_limits<double>::quiet_NaN());
    block_diagonal<double>(res, dw_.view(), scale_view(ds_), factor, out.view());
    std::vector<double> expected(static_cast<std::size_t>(n * n));
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t i = 0; i < d; ++i)
        for (std::int64_t j = 0; j < d; ++j)
          expected[(h * d + i) * n + h * d + j] =
              factor * (scaled ? scale(h) : 1.0) * w(h, i * d + j);
    EXPECT_TRUE(testing::all_close(out.to_vector(res), expected, 1e-12, 1e-14));

    // Gradients: on the host, against central differences.
    const auto r = doubles(testing::random_matrix<double>(n, n, 62));
    const auto g = testing::host_tensor(r, n, n);
    Tensor<double> gw(host(), heads, d * d), gs(host(), heads, 1);
    block_diagonal_backward<double>(host(), w.view(), scale_view(scale), factor, g.view(),
                                    gw.view(), scaled ? gs.span() : Span<double>{});
    const auto f = [&] {
      Tensor<double> o(host(), n, n);
      block_diagonal<double>(host(), w.view(), scale_view(scale), factor, o.view());
      return doubles(o);
    };
    expect_gradient(w, doubles(gw), r, f);
    if (scaled) expect_gradient(scale, doubles(gs), r, f);
  }
}

TYPED_TEST(Attention, SigmoidGateMatchesReferenceAndGradients) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  for (const std::int64_t n : {0, 1, 257}) {
    SCOPED_TRACE(::testing::Message() << n << " elements");
    auto gate = testing::host_tensor<double>({0.3});
    auto y = testing::random_matrix<double>(n, 1, 70);
    auto x = testing::random_matrix<double>(n, 1, 71);
    auto out = testing::filled(res, n, 1, std::numeric_limits<double>::quiet_NaN());
    sigmoid_gate<double>(res, testing::to_device(res, gate).span(),
                         testing::to_device(res, y).span(), testing::to_device(res, x).span(),
                         out.span());
    const double s = 1 / (1 + std::exp(-0.3));
    std::vector<double> expected;
    for (std::int64_t i = 0; i < n; ++i) expected.push_back(s * y(i) + (1 - s) * x(i));
    EXPECT_TRUE(testing::all_close(out.to_vector(res), expected, 1e-12, 1e-14));

    const auto r = doubles(testing::random_matrix<double>(n, 1, 72));
    const auto dout = testing::to_device(res, testing::host_tensor(r, n, 1));
    const auto prior = testing::random_matrix<double>(n, 1, 73);
    auto dy = testing::filled(res, n, 1, std::numeric_limits<double>::quiet_NaN());
    auto dx = testing::to_device(res, prior);
    auto dgate = testing::filled(res, 1, 1, std::numeric_limits<double>::quiet_NaN());
    sigmoid_gate_backward<double>(res, testing::to_device(res, gate).span(),
                                  testing::to_device(res, y).span(),
                                  testing::to_device(res, x).span(), dout.span(), dy.span(),
                                  dx.span(), dgate.span(), /*accumulate_dx=*/true);
    const auto f = [&] {
      Tensor<double> o(host(), n, 1);
      sigmoid_gate<double>(host(), gate.span(), y.span(), x.span(), o.span());
      return doubles(o);
    };
    expect_gradient(gate, dgate.to_vector(res), r, f);
    expect_gradient(y, dy.to_vector(res), r, f);
    auto dx_only = dx.to_vector(res);
    for (std::int64_t i = 0; i < n; ++i) dx_only[i] -= prior(i);  // accumulated onto `prior`
    expect_gradient(x, dx_only, r, f);
  }
}

TEST(Attention, RejectsBadShapes) {
  const Resources& res = host();
  const auto g = testing::random_csr<NodeId, double>(5, 4, 2.0, 80);
  const auto a = testing::random_matrix<double>(5, 6, 81);
  const auto b = testing::random_matrix<double>(4, 6, 82);
  Tensor<double> out(res, g.num_edges(), 4);  // 4 heads do not divide 6 columns
  EXPECT_THROW(sddmm(res, g.view(), a.view(), b.view(), out.view()), LogicError);
  Tensor<double> short_out(res, g.num_edges() + 1, 2);
  EXPECT_THROW(sddmm(res, g.view(), a.view(), b.view(), short_out.view()), LogicError);
  EXPECT_THROW(
      sddmm(res, g.view(), b.view(), a.view(), Tensor<double>(res, g.num_edges(), 2).view()),
      LogicError);
  Tensor<double> w(res, g.num_edges(), 2), agg(res, 5, 5);
  EXPECT_THROW(weighted_aggregate(res, g.view(), w.view(), b.view(), agg.view()), LogicError);
  Tensor<double> m(res, 6, 2), s(res, 6, 2);
  const SoftmaxSegments<NodeId, double> parts[] = {{g.view(), w.view()}};
  EXPECT_THROW((segment_softmax<NodeId, double>(res, parts, m.view(), s.view())), LogicError);
  Tensor<double> bd(res, 5, 5);
  EXPECT_THROW(block_diagonal<double>(res, w.view(), {}, 1.0, bd.view()), LogicError);
}

// GELU (elementwise.hpp) against its formula, and its backward against central differences.
TYPED_TEST(Attention, GeluMatchesFormulaAndGradient) {
  HALO_SKIP_IF_UNAVAILABLE(TypeParam);
  const auto res = testing::make_resources<TypeParam>();
  auto x = testing::random_matrix<double>(300, 1, 90);
  for (std::int64_t i = 0; i < x.numel(); ++i) x.data()[i] *= 6;  // into both saturated tails
  x.data()[0] = 40;
  x.data()[1] = -40;
  auto y = testing::filled(res, 300, 1, std::numeric_limits<double>::quiet_NaN());
  gelu<double>(res, testing::to_device(res, x).span(), y.span());
  std::vector<double> expected;
  for (std::int64_t i = 0; i < x.numel(); ++i) {
    const double v = x(i);
    expected.push_back(0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
  }
  EXPECT_TRUE(testing::all_close(y.to_vector(res), expected, 1e-12, 1e-14));
  const auto r = doubles(testing::random_matrix<double>(300, 1, 91));
  auto dx = testing::to_device(res, testing::host_tensor(r, 300, 1));
  gelu_backward<double>(res, testing::to_device(res, x).span(), dx.span(), dx.span());  // in place
  const auto f = [&] {
    Tensor<double> o(host(), 300, 1);
    gelu<double>(host(), x.span(), o.span());
    return doubles(o);
  };
  expect_gradient(x, dx.to_vector(res), r, f);
}

}  // namespace
}  // namespace halo::kernels
